package dispatch

import (
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/sessiongate"
)

// reasonShutdown: awaitSession gave up because the peer drains.
const reasonShutdown = "the peer is shutting down"

// defaultSessionGrace is ExecutorConfig.SessionGrace's default: ZooKeeper's usual session timeout.
const defaultSessionGrace = 10 * time.Second

// The checkpoints at which a fire looks at its session (the stage key of the log line).
const (
	stagePrepare = "prepare" // the fire is handed off: its items are about to be fenced in ZooKeeper
	stageSend    = "send"    // a prepared item's request is due to leave
	stageReshard = "reshard" // the fire's leader is to reshard its job (its leadership is in doubt)
)

// sessionOf records in req the session the fire begins under: a later expiry of it means its items may be
// another peer's by then (sessiongate).
func (e *Executor) sessionOf(req *fireRequest) {
	if req.session == nil {
		st, _ := e.reg.SessionStanding()
		req.session = &st
	}
}

// sessionAtHandOff records the session a fire begins under and, if it is in doubt, waits for it: starting
// nothing that another peer may take over. It returns the job's snapshot to fire with, nil if the fire was
// skipped (a disabled job or a bad config are left to fire's own checks: no wait for them).
func (e *Executor) sessionAtHandOff(req *fireRequest, snap *cluster.JobSnapshot) *cluster.JobSnapshot {
	e.sessionOf(req)
	if snap.ConfigErr != nil || snap.Config.Disabled || e.reg.Lease() {
		return snap
	}
	if ok, why := e.awaitSession(req, -1, stagePrepare, req.scheduledAt); !ok {
		e.skipInDoubt(*req, why)
		return nil
	}
	return e.reg.Job(req.job)
}

// skipInDoubt skips a fire that awaitSession gave up on (the reasons are literals, for the metrics' mapping).
func (e *Executor) skipInDoubt(req fireRequest, why string) {
	switch why {
	case sessiongate.ReasonExpired:
		e.skip(req, "ZooKeeper session in doubt: the session expired")
	case sessiongate.ReasonDeadline:
		e.skip(req, "ZooKeeper session in doubt: still suspended at the fire's deadline")
	default: // the peer is shutting down: no fire of the schedule is skipped for that
		e.log.Info("fire dropped: "+why, "job", req.job)
	}
}

// awaitSession holds a fire (item -1) or a prepared item whose session is in doubt until the session is
// sound again, the session is lost, or the deadline passes: the scheduled time (or the item's send time)
// plus ExecutorConfig.SessionGrace, never into the job's next fire. It reports whether the fire may go on,
// and else why not. A short reconnect (a network blip, a ZooKeeper node restarting) then costs the fire
// lateness instead of the fire; a session that expired costs the fire as before: its ephemeral nodes went,
// and other peers may have taken its items. A wait is logged and counted (Observer.SessionWaited).
func (e *Executor) awaitSession(req *fireRequest, item int, stage string, due time.Time) (bool, string) {
	e.sessionOf(req)
	start := *req.session
	var deadline time.Time // looked up only if the session is in doubt: every item of a burst passes here
	began := e.clk.Now()
	waited := false
	for {
		cur, changed := e.reg.SessionStanding()
		now := e.clk.Now()
		if deadline.IsZero() && !cur.Lease {
			var next time.Time
			if !req.source.OnRequest() {
				next = e.nextAfter(req)
			}
			deadline = sessiongate.Deadline(due, next, e.cfg.SessionGrace)
		}
		d, reason := sessiongate.Decide(sessiongate.Standing(start), sessiongate.Standing(cur), now, deadline)
		if d == sessiongate.Wait {
			if !waited {
				e.log.Info("ZooKeeper session in doubt: the fire waits for it", "job", req.job, "item", item,
					"stage", stage, "scheduled_at", req.scheduledAt, "deadline", deadline)
			}
			waited = true
			t := e.clk.NewTimer(deadline.Sub(now))
			select {
			case <-changed:
			case <-t.C():
			case <-e.soft.Done():
				t.Stop()
				return false, reasonShutdown
			}
			t.Stop()
			continue
		}
		if !waited {
			return d == sessiongate.Fire, reason
		}
		took := now.Sub(began)
		e.cfg.Observer.SessionWaited(req.job, took, d == sessiongate.Fire)
		if d == sessiongate.Fire {
			e.log.Info("fire waited for the ZooKeeper session, then went on", "job", req.job, "item", item,
				"stage", stage, "waited_ms", took.Milliseconds(), "scheduled_at", req.scheduledAt)
			return true, ""
		}
		e.log.Warn("fire waited for the ZooKeeper session in vain", "job", req.job, "item", item, "stage", stage,
			"waited_ms", took.Milliseconds(), "scheduled_at", req.scheduledAt, "reason", reason)
		return false, reason
	}
}
