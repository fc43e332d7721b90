// Package sessiongate decides what a fire does when this peer's ZooKeeper session is in doubt at one of its
// two checkpoints: when the fire is prepared (its items fenced in ZooKeeper, shortly before the scheduled
// time) and when its requests are due to leave. It is pure: values in, a decision out.
//
// A session in doubt is one of two things, and only the second must cost the fire:
//
//   - suspended: the connection broke, the session may live. If the client reconnects within the same
//     session, nothing happened as far as the cluster is concerned: the session's ephemeral nodes (the
//     instance node that keeps the items this peer's) never went, so no other peer can have taken the
//     items, and the running nodes this peer created still fence them. The fire waits for the session and
//     goes on late.
//   - lost: the session expired (seen as an expiry, or as a new session since the fire began). Its
//     ephemeral nodes are gone and other peers may reshard or fail the items over: the fire is skipped here.
//
// The wait is bounded: up to the fire's time plus a grace (the session timeout: a connection gone for longer
// comes back, if at all, to an expired session) and never into the job's next fire.
//
//	start ──▶ expired at the start, or an expiry since? ── yes ──▶ Skip
//	              │ no
//	              ▼
//	          lease sound (session confirmed alive lately)? ── yes ──▶ Fire
//	              │ no
//	              ▼
//	          past the deadline? ── yes ──▶ Skip
//	              │ no
//	              ▼
//	            Wait (for the next change of the session's standing, or the deadline)
package sessiongate

import "time"

// Standing is what the peer knows of its ZooKeeper session at one moment.
type Standing struct {
	// Healthy: connected, with the session confirmed by the server.
	Healthy bool
	// Lease: healthy and proven alive within two thirds of the session timeout (cluster.Session.Lease).
	Lease bool
	// Expired: an expiry was seen and there is no new session yet.
	Expired bool
	// Epoch counts the expiries seen: it changes whenever the session is lost.
	Epoch int64
}

// Decision is what a fire does at a checkpoint.
type Decision int

// The decisions.
const (
	// Fire: the session is sound and is the one the fire began under.
	Fire Decision = iota + 1
	// Wait: the session is suspended but may come back before the deadline.
	Wait
	// Skip: the session was lost, or is still in doubt at the deadline.
	Skip
)

func (d Decision) String() string {
	switch d {
	case Fire:
		return "fire"
	case Wait:
		return "wait"
	case Skip:
		return "skip"
	}
	return "unknown"
}

// The reasons of a Skip; each starts with what the executor's skip reasons for the session start with, so
// that metrics count them as "session".
const (
	ReasonExpired  = "ZooKeeper session in doubt: the session expired"
	ReasonDeadline = "ZooKeeper session in doubt: still suspended at the fire's deadline"
)

// Decide says what a fire does now. start is the standing when the fire began (its items are fenced under
// that session), cur the standing now; deadline is when waiting stops (Deadline).
func Decide(start, cur Standing, now, deadline time.Time) (Decision, string) {
	switch {
	case start.Expired || cur.Expired || cur.Epoch != start.Epoch:
		return Skip, ReasonExpired
	case cur.Lease:
		return Fire, ""
	case !now.Before(deadline):
		return Skip, ReasonDeadline
	}
	return Wait, ""
}

// Deadline is how long a fire due at due may wait for its session: grace past due, and never into the job's
// next fire (next; zero, or not after due: unknown).
func Deadline(due, next time.Time, grace time.Duration) time.Time {
	d := due.Add(max(grace, 0))
	if next.After(due) && next.Before(d) {
		return next
	}
	return d
}
