package lease

import (
	"time"
)

// State is where an accepted item's life stands.
type State string

// The states of an accepted item.
const (
	// Running: the receiver holds the work; heartbeats renew the lease.
	Running State = "RUNNING"
	// Retrying: the item is being POSTed again (its lease ran out, or a DATAFLOW item's next iteration).
	Retrying State = "RETRYING"
	// Succeeded and Failed: the receiver reported the end (or a re-POST answered it synchronously).
	Succeeded State = "SUCCEEDED"
	Failed    State = "FAILED"
	// Expired: the lease ran out and no attempt was left (a failure).
	Expired State = "EXPIRED"
	// Cancelled: the job was deleted while the item ran, or a later fire cancelled it (CANCEL_PREVIOUS).
	Cancelled State = "CANCELLED"
)

// States lists every state, in the order of an item's life.
var States = []State{Running, Retrying, Succeeded, Failed, Expired, Cancelled}

// Ended reports whether s is final.
func (s State) Ended() bool {
	switch s {
	case Succeeded, Failed, Expired, Cancelled:
		return true
	}
	return false
}

// Valid reports whether s is one of the states.
func (s State) Valid() bool { return s == Running || s == Retrying || s.Ended() }

// Limits of what a callback may carry.
const (
	MaxMessageLen = 1024
	MaxOutputLen  = 4096
)

// Lease is one accepted execution: what its lease node in ZooKeeper holds. Every change is a new value
// computed by Apply and written with a version check, so concurrent callbacks and the lease watcher can't
// both win.
type Lease struct {
	ExecutionID        string    `json:"executionId"`
	JobName            string    `json:"jobName"`
	ShardingItem       int       `json:"shardingItem"`
	ShardingTotalCount int       `json:"shardingTotalCount"`
	TaskID             string    `json:"taskId"`
	Source             string    `json:"source"`
	ScheduledAt        time.Time `json:"scheduledAt"`
	JobParameter       string    `json:"jobParameter,omitempty"`
	// InstanceID, IP and Hostname: the peer that sent the request the receiver accepted.
	InstanceID string `json:"instanceId"`
	IP         string `json:"ip,omitempty"`
	Hostname   string `json:"hostname,omitempty"`

	State State `json:"state"`
	// Iteration (DATAFLOW streaming; 0 otherwise) and Attempt name the request whose token may call back.
	Iteration int `json:"iteration,omitempty"`
	Attempt   int `json:"attempt"`
	// LeaseSeconds is the job's async.leaseSeconds when the item was accepted.
	LeaseSeconds int       `json:"leaseSeconds"`
	StartedAt    time.Time `json:"startedAt"`
	AcceptedAt   time.Time `json:"acceptedAt"`
	HeartbeatAt  time.Time `json:"heartbeatAt,omitzero"`
	ExpiresAt    time.Time `json:"expiresAt"`
	// MaxAt is the first request's start plus the job's async.maxDurationSeconds: no heartbeat extends past it.
	MaxAt time.Time `json:"maxAt"`
	// Deadline is the item's next fire after ScheduledAt (zero: none): no re-POST starts at or after it.
	Deadline time.Time `json:"deadline,omitzero"`
	Progress *int      `json:"progress,omitempty"`
	Message  string    `json:"message,omitempty"`
	Output   string    `json:"output,omitempty"`
	// StatusCode is the HTTP status of the last request's answer.
	StatusCode int `json:"statusCode,omitempty"`
	// UpdatedAt is when the lease last changed (any event that changed it): it orders the lease's records.
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Cause says why a failed, expired or cancelled item ended.
	Cause string `json:"cause,omitempty"`
	// Fire is the key of the fire the item belongs to in the fire ledger, when its job's fires are followed
	// (alert rules or hooks): the peer that hears the end records it there.
	Fire string `json:"fire,omitempty"`
	// TraceParent is the item's span context as a W3C traceparent: the callbacks' spans are its children.
	TraceParent string `json:"traceParent,omitempty"`
}

// Success reports whether the lease ended in success.
func (l Lease) Success() bool { return l.State == Succeeded }

// DueAt is when the lease watcher must look at the lease next: its expiry, bounded by MaxAt.
func (l Lease) DueAt() time.Time {
	if l.State.Ended() {
		return time.Time{}
	}
	if !l.MaxAt.IsZero() && l.MaxAt.Before(l.ExpiresAt) {
		return l.MaxAt
	}
	return l.ExpiresAt
}

// Accepted describes the request a receiver answered with 202 Accepted.
type Accepted struct {
	Lease // the execution's identity and the request's Iteration and Attempt; the times are set by Accept
	At    time.Time
	// Started is when the item's first request started (maxDurationSeconds counts from it).
	Started time.Time
	// LeaseFor and MaxDuration are the job's async.leaseSeconds and async.maxDurationSeconds.
	LeaseFor    time.Duration
	MaxDuration time.Duration
}

// Accept returns the lease of an item whose request was just accepted.
func Accept(a Accepted) Lease {
	l := a.Lease
	l.State = Running
	l.StartedAt, l.AcceptedAt = a.Started, a.At
	l.LeaseSeconds = int(a.LeaseFor / time.Second)
	l.MaxAt = a.Started.Add(a.MaxDuration)
	l.ExpiresAt = capAt(a.At.Add(a.LeaseFor), l.MaxAt)
	l.UpdatedAt = a.At
	return l
}

func capAt(t, limit time.Time) time.Time {
	if !limit.IsZero() && t.After(limit) {
		return limit
	}
	return t
}

// Kind is what happened to a lease.
type Kind int

// The events of a lease's life.
const (
	// Heartbeat: the receiver renews the lease (optional Progress, Message).
	Heartbeat Kind = iota + 1
	// Complete: the receiver reports the end (Success, Message, Output, HasMore).
	Complete
	// Tick: the lease watcher looks at the lease at At.
	Tick
	// Sent: a re-POST of the item ended (Accepted, or Success for a synchronous answer, StatusCode, Cause);
	// Iteration and Attempt name its last request.
	Sent
	// Cancel: the job was deleted, or a later fire's overlapPolicy CANCEL_PREVIOUS ended it (Cause).
	Cancel
)

// Event is one thing that happened to a lease. Callbacks carry the Iteration and Attempt of their token.
type Event struct {
	Kind      Kind
	At        time.Time
	Iteration int
	Attempt   int
	Progress  *int
	Message   string
	Success   bool
	Output    string
	HasMore   bool
	// Sent only:
	Accepted   bool
	StatusCode int
	Cause      string
}

// Policy is what the job says about retries, read when the event is applied.
type Policy struct {
	// MaxAttempts is the job's retry.maxAttempts (at least 1).
	MaxAttempts int
	// Streaming: the job is DATAFLOW with streamingProcess (a completion's hasMore asks for the next iteration).
	Streaming bool
	// Paused: the job is disabled, or gone: a lease that runs out is not POSTed again.
	Paused bool
	// ResendWindow is how long a re-POST may take before the watcher looks again (the webhook's timeouts).
	ResendWindow time.Duration
}

// Refusal says why a callback was not applied ("" when it was).
type Refusal string

// The refusals, named as the API's problem types.
const (
	Applied           Refusal = ""
	StaleAttempt      Refusal = "stale-attempt"
	LeaseExpired      Refusal = "lease-expired"
	AlreadyCompleted  Refusal = "already-completed"
	ExecutionCanceled Refusal = "execution-cancelled"
)

// Decision is what Apply decided.
type Decision struct {
	// Lease is the next value; Changed says whether it differs and must be written (version-checked).
	Lease   Lease
	Changed bool
	// Refusal: the callback is refused (409) and nothing changes.
	Refusal Refusal
	// Ended: the item ended with this event: remove its running node, record its outcome and start what
	// waited for it (a misfire catch-up).
	Ended bool
	// Resend: POST the item again, as Lease.Iteration and Lease.Attempt.
	Resend bool
}

// Apply is the lease's state machine: the next state and the effects of ev under pol. It is a pure function.
func Apply(l Lease, ev Event, pol Policy) Decision {
	d := apply(l, ev, pol)
	if d.Changed && ev.At.After(d.Lease.UpdatedAt) {
		d.Lease.UpdatedAt = ev.At
	}
	return d
}

func apply(l Lease, ev Event, pol Policy) Decision {
	switch ev.Kind {
	case Heartbeat, Complete:
		return callback(l, ev, pol)
	case Tick:
		return tick(l, ev.At, pol)
	case Sent:
		return sent(l, ev)
	case Cancel:
		if l.State.Ended() {
			return Decision{Lease: l}
		}
		return end(l, Cancelled, ev.At, ev.Cause)
	}
	return Decision{Lease: l}
}

// callback applies a heartbeat or a completion.
func callback(l Lease, ev Event, pol Policy) Decision {
	older := ev.Iteration < l.Iteration || ev.Iteration == l.Iteration && ev.Attempt < l.Attempt
	newer := ev.Iteration > l.Iteration || ev.Iteration == l.Iteration && ev.Attempt > l.Attempt
	if newer && l.State == Retrying {
		// a re-POST's own retry (after a 5xx, say) reached the receiver before the re-POST's outcome was
		// recorded: the token proves ejserver sent that request, so it is the current attempt now
		l.Iteration, l.Attempt = ev.Iteration, ev.Attempt
		newer = false
	}
	switch {
	case older || newer:
		// newer, outside a re-POST, can't come from a request ejserver sent: not this attempt's either way
		return Decision{Lease: l, Refusal: StaleAttempt}
	case l.State == Cancelled:
		return Decision{Lease: l, Refusal: ExecutionCanceled}
	case l.State == Expired:
		return Decision{Lease: l, Refusal: LeaseExpired}
	case l.State.Ended():
		if ev.Kind == Complete && sameCompletion(l, ev) {
			return Decision{Lease: l} // the same completion again: nothing to do, 200
		}
		return Decision{Lease: l, Refusal: AlreadyCompleted}
	case !ev.At.Before(l.DueAt()):
		// the lease has run out; the watcher may not have looked yet, but the callback is too late all the same
		return Decision{Lease: l, Refusal: LeaseExpired}
	}
	if ev.Kind == Heartbeat {
		l.HeartbeatAt = ev.At
		if ev.Progress != nil {
			p := *ev.Progress
			l.Progress = &p
		}
		if ev.Message != "" {
			l.Message = ev.Message
		}
		l.State = Running // a heartbeat for the attempt being re-POSTed: the receiver has it
		l.ExpiresAt = capAt(ev.At.Add(time.Duration(l.LeaseSeconds)*time.Second), l.MaxAt)
		return Decision{Lease: l, Changed: true}
	}
	l.Message, l.Output = ev.Message, ev.Output
	if ev.Success {
		full := 100
		l.Progress = &full
	}
	if ev.Success && ev.HasMore && pol.Streaming {
		l.State, l.Iteration, l.Attempt = Retrying, max(l.Iteration, 1)+1, 1
		l.ExpiresAt = capAt(ev.At.Add(pol.ResendWindow), l.MaxAt)
		return Decision{Lease: l, Changed: true, Resend: true}
	}
	if ev.Success {
		return end(l, Succeeded, ev.At, "")
	}
	cause := "the receiver reported failure"
	if ev.Message != "" {
		cause += ": " + ev.Message
	}
	return end(l, Failed, ev.At, cause)
}

// sameCompletion reports whether ev repeats the completion that ended l.
func sameCompletion(l Lease, ev Event) bool {
	if ev.Success != (l.State == Succeeded) {
		return false
	}
	return ev.Message == l.Message && ev.Output == l.Output
}

// tick applies the watcher's look at the lease: past its due time, the attempt has failed.
func tick(l Lease, now time.Time, pol Policy) Decision {
	if l.State.Ended() || now.Before(l.DueAt()) {
		return Decision{Lease: l}
	}
	if !l.MaxAt.IsZero() && !now.Before(l.MaxAt) {
		return end(l, Expired, now, "the item ran longer than async.maxDurationSeconds")
	}
	what := "the lease ran out without a heartbeat"
	if l.State == Retrying {
		what = "the re-POST got no answer in time"
	}
	switch {
	case pol.Paused:
		return end(l, Expired, now, what+"; not retried: the job is disabled")
	case l.Attempt >= max(pol.MaxAttempts, 1):
		return end(l, Expired, now, what+"; no attempt left (retry.maxAttempts)")
	case !l.Deadline.IsZero() && !now.Before(l.Deadline):
		return end(l, Expired, now, what+"; not retried: the item's next fire has come")
	}
	l.State, l.Attempt = Retrying, l.Attempt+1
	l.Cause = what
	l.ExpiresAt = capAt(now.Add(pol.ResendWindow), l.MaxAt)
	return Decision{Lease: l, Changed: true, Resend: true}
}

// sent applies the end of a re-POST.
func sent(l Lease, ev Event) Decision {
	if l.State != Retrying || ev.Iteration < l.Iteration || ev.Iteration == l.Iteration && ev.Attempt < l.Attempt {
		return Decision{Lease: l} // ended or renewed meanwhile (a callback of the new attempt came first)
	}
	l.Iteration, l.Attempt, l.StatusCode = ev.Iteration, ev.Attempt, ev.StatusCode
	switch {
	case ev.Accepted:
		l.State, l.AcceptedAt, l.Cause = Running, ev.At, ""
		l.ExpiresAt = capAt(ev.At.Add(time.Duration(l.LeaseSeconds)*time.Second), l.MaxAt)
		return Decision{Lease: l, Changed: true}
	case ev.Success:
		l.Cause = ""
		return end(l, Succeeded, ev.At, "")
	}
	return end(l, Failed, ev.At, ev.Cause)
}

func end(l Lease, s State, at time.Time, cause string) Decision {
	l.State, l.EndedAt, l.Cause = s, at, cause
	return Decision{Lease: l, Changed: true, Ended: true}
}
