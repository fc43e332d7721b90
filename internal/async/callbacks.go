package async

import (
	"context"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/lease"
)

// View is an execution's lease as a callback's answer shows it.
type View struct {
	ExecutionID    string     `json:"executionId"`
	JobName        string     `json:"jobName"`
	ShardingItem   int        `json:"shardingItem"`
	Iteration      int        `json:"iteration,omitempty"`
	Attempt        int        `json:"attempt"`
	State          string     `json:"state" enums:"RUNNING,RETRYING,SUCCEEDED,FAILED,EXPIRED,CANCELLED"`
	Progress       *int       `json:"progress,omitempty"`
	Message        string     `json:"message,omitempty"`
	StartedAt      time.Time  `json:"startedAt"`
	AcceptedAt     time.Time  `json:"acceptedAt"`
	HeartbeatAt    *time.Time `json:"heartbeatAt,omitempty"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt,omitempty"`
	MaxDurationAt  time.Time  `json:"maxDurationAt"`
	EndedAt        *time.Time `json:"endedAt,omitempty"`
	Cause          string     `json:"cause,omitempty"`
}

func viewOf(l lease.Lease) View {
	v := View{ExecutionID: l.ExecutionID, JobName: l.JobName, ShardingItem: l.ShardingItem, Iteration: l.Iteration,
		Attempt: l.Attempt, State: string(l.State), Progress: l.Progress, Message: l.Message, StartedAt: l.StartedAt,
		AcceptedAt: l.AcceptedAt, MaxDurationAt: l.MaxAt, Cause: l.Cause}
	if !l.HeartbeatAt.IsZero() {
		v.HeartbeatAt = &l.HeartbeatAt
	}
	if due := l.DueAt(); !due.IsZero() {
		v.LeaseExpiresAt = &due
	}
	if !l.EndedAt.IsZero() {
		v.EndedAt = &l.EndedAt
	}
	return v
}

// HeartbeatRequest is a heartbeat's body.
type HeartbeatRequest struct {
	// Progress, 0 to 100.
	Progress *int `json:"progress,omitempty" minimum:"0" maximum:"100"`
	// Message, up to 1,024 characters.
	Message string `json:"message,omitempty" maxLength:"1024"`
}

// CompleteRequest is a completion's body.
type CompleteRequest struct {
	// Status is success or failure.
	Status string `json:"status" enums:"success,failure"`
	// Message, up to 1,024 characters.
	Message string `json:"message,omitempty" maxLength:"1024"`
	// Output, up to 4,096 characters: an excerpt of what the work produced, kept in the history.
	Output string `json:"output,omitempty" maxLength:"4096"`
	// HasMore (DATAFLOW jobs with streamingProcess): POST the item again with the next iteration.
	HasMore bool `json:"hasMore,omitempty"`
}

// Validate checks a heartbeat's fields.
func (h HeartbeatRequest) Validate() error {
	if h.Progress != nil && (*h.Progress < 0 || *h.Progress > 100) {
		return ejserver.Invalid("progress", "must be between 0 and 100, got %d", *h.Progress)
	}
	return checkText("message", h.Message, lease.MaxMessageLen)
}

// Validate checks a completion's fields.
func (c CompleteRequest) Validate() error {
	if c.Status != "success" && c.Status != "failure" {
		return ejserver.Invalid("status", `must be "success" or "failure", got %q`, c.Status)
	}
	if err := checkText("message", c.Message, lease.MaxMessageLen); err != nil {
		return err
	}
	return checkText("output", c.Output, lease.MaxOutputLen)
}

func checkText(field, s string, limit int) error {
	if !utf8.ValidString(s) {
		return ejserver.Invalid(field, "must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > limit {
		return ejserver.Invalid(field, "is %d characters long; the limit is %d", n, limit)
	}
	return nil
}

// Heartbeat applies a receiver's heartbeat for executionID, authorised by token.
func (m *Manager) Heartbeat(ctx context.Context, executionID, token string, req HeartbeatRequest) (View, error) {
	if err := req.Validate(); err != nil {
		return View{}, err
	}
	return m.callback(ctx, "heartbeat", executionID, token, func(it, at int) lease.Event {
		return lease.Event{Kind: lease.Heartbeat, At: m.clk.Now(), Iteration: it, Attempt: at, Progress: req.Progress, Message: req.Message}
	})
}

// Complete applies a receiver's completion for executionID, authorised by token.
func (m *Manager) Complete(ctx context.Context, executionID, token string, req CompleteRequest) (View, error) {
	if err := req.Validate(); err != nil {
		return View{}, err
	}
	return m.callback(ctx, "complete", executionID, token, func(it, at int) lease.Event {
		return lease.Event{Kind: lease.Complete, At: m.clk.Now(), Iteration: it, Attempt: at, Success: req.Status == "success",
			Message: req.Message, Output: req.Output, HasMore: req.HasMore}
	})
}

// callback checks the token, finds the execution and applies the event. The token is checked first: it needs
// nothing but the cluster's secret and the id, and only a valid one is worth waiting for a lease that may
// not be recorded yet.
// With tracing on, the callback gets a span in its item's trace (callbackSpan).
func (m *Manager) callback(ctx context.Context, kind, executionID, token string, ev func(it, at int) lease.Event) (View, error) {
	start := m.clk.Now()
	var f found
	v, err := m.doCallback(ctx, executionID, token, ev, &f)
	outcome := outcomeOf(err)
	m.cfg.Observer.Callback(kind, outcome)
	m.callbackSpan(ctx, kind, executionID, f, outcome, start)
	return v, err
}

// doCallback fills f with the execution once the token is verified as its own.
func (m *Manager) doCallback(ctx context.Context, executionID, token string, ev func(it, at int) lease.Event, f *found) (View, error) {
	if !cluster.ValidExecutionID(executionID) {
		return View{}, notFound(executionID)
	}
	it, at, terr := lease.Verify(m.cfg.Secret, executionID, token)
	if terr != nil {
		return View{}, badToken()
	}
	l, version, err := m.reg.ReadLease(executionID)
	read := &l
	if errors.Is(err, cluster.ErrNoLease) {
		// the callback may have overtaken the 202 it follows: wait a moment for the lease
		wctx, cancel := context.WithTimeout(ctx, m.cfg.EarlyWait)
		werr := m.reg.WaitLease(wctx, executionID)
		cancel()
		if werr != nil {
			return m.fromHistory(ctx, executionID, it, at, ev, f)
		}
		read = nil // it is there now: read it in apply
	} else if err != nil {
		return View{}, ejserver.Unavailable(err, "read the lease of execution %s", executionID)
	} else if m.cancelIfJobGone(l) {
		read = nil
	}
	d, err := m.applyRead(executionID, read, version, func() lease.Event { return ev(it, at) }, nil)
	switch {
	case errors.Is(err, cluster.ErrNoLease):
		return m.fromHistory(ctx, executionID, it, at, ev, f) // pruned meanwhile
	case err != nil:
		return View{}, ejserver.Unavailable(err, "apply a callback of execution %s", executionID)
	}
	f.lease = d.Lease
	if d.Refusal != lease.Applied {
		if d.Refusal == lease.StaleAttempt {
			m.refusedLate(d.Lease, it, at)
		}
		return View{}, refusal(d)
	}
	return viewOf(d.Lease), nil
}

// fromHistory answers a callback for an execution whose lease record is gone (or never was): from the
// history store, which with PostgreSQL holds the whole cluster's executions and with SQLite this peer's.
func (m *Manager) fromHistory(ctx context.Context, executionID string, it, at int, ev func(it, at int) lease.Event, f *found) (View, error) {
	if m.cfg.History == nil {
		return View{}, notFound(executionID)
	}
	rec, err := m.cfg.History.GetExecution(ctx, executionID)
	if ejserver.ErrorCodeOf(err) == ejserver.ENOTFOUND {
		return View{}, notFound(executionID)
	}
	if err != nil {
		return View{}, ejserver.Unavailable(err, "look up execution %s", executionID)
	}
	if !rec.Done() {
		return View{}, notFound(executionID) // running, but not (or no longer) under a lease
	}
	l := lease.Lease{ExecutionID: rec.ID, JobName: rec.JobName, ShardingItem: rec.ShardingItem, Attempt: rec.Attempts,
		Iteration: it, StartedAt: rec.StartedAt, EndedAt: rec.CompletedAt, Message: rec.Message, Output: rec.Output,
		Cause: rec.FailureCause, State: lease.Failed}
	switch {
	case rec.Success:
		l.State = lease.Succeeded
	case rec.State != "":
		l.State = lease.State(rec.State)
	}
	if !rec.Async {
		l.Attempt = at // answered synchronously: only the outcome can differ
	}
	f.lease, f.traceID = l, rec.TraceID
	d := lease.Apply(l, ev(it, at), lease.Policy{MaxAttempts: 1})
	if d.Refusal != lease.Applied {
		return View{}, refusal(d)
	}
	return viewOf(l), nil
}

// refusedLate records a callback of an earlier attempt: refused, never applied to the current one.
func (m *Manager) refusedLate(l lease.Lease, it, at int) {
	msg := "refused a callback of attempt " + strconv.Itoa(at)
	if it > 0 {
		msg += " (iteration " + strconv.Itoa(it) + ")"
	}
	msg += "; the current attempt is " + strconv.Itoa(l.Attempt)
	m.log.Warn("late callback refused", "job", l.JobName, "item", l.ShardingItem, "execution_id", l.ExecutionID,
		"token_attempt", at, "attempt", l.Attempt)
	m.cfg.Recorder.EnqueueTrace(ejserver.StatusTrace{
		ID: ejserver.NewExecutionID(), JobName: l.JobName, OriginalTaskID: l.TaskID, TaskID: l.TaskID,
		InstanceID: m.me.InstanceID, ExecutionType: "READY", ShardingItems: strconv.Itoa(l.ShardingItem),
		Source: ejserver.Source(l.Source), State: ejserver.TaskRunning, Message: "execution " + l.ExecutionID + ": " + msg,
		CreationTime: m.clk.Now(),
	})
}

func notFound(id string) error {
	return &ejserver.Error{Code: ejserver.ENOTFOUND, Message: "no execution " + id + " is known (never accepted, or its record is gone)"}
}

func badToken() error {
	return &ejserver.Error{Code: ejserver.EUNAUTHORIZED, Kind: "callback-token",
		Message: "the callback token is missing, malformed, or not this execution's"}
}

func refusal(d lease.Decision) error {
	l := d.Lease
	msg := map[lease.Refusal]string{
		lease.StaleAttempt:      "the token is of an earlier attempt than the current one (" + strconv.Itoa(l.Attempt) + "): not applied",
		lease.LeaseExpired:      "the lease ran out before this callback",
		lease.AlreadyCompleted:  "the execution has already ended (" + string(l.State) + ") with another outcome",
		lease.ExecutionCanceled: "the execution was cancelled: " + cancelCause(l.Cause),
	}[d.Refusal]
	return &ejserver.Error{Code: ejserver.ECONFLICT, Kind: string(d.Refusal), Message: msg}
}

// outcomeApplied is the outcome of a callback that was applied.
const outcomeApplied = "applied"

// outcomeOf names a callback's outcome for metrics and spans.
func outcomeOf(err error) string {
	var e *ejserver.Error
	switch {
	case err == nil:
		return outcomeApplied
	case errors.As(err, &e) && e.Kind != "":
		return e.Kind
	case errors.As(err, &e):
		return string(e.Code)
	}
	return "error"
}

// cancelIfJobGone ends an execution's lease as cancelled when its job has been deleted, so the callback
// that found it learns it at once rather than when the lease runs out.
// It reports whether it wrote the lease.
func (m *Manager) cancelIfJobGone(l lease.Lease) bool {
	if l.State.Ended() || m.reg.Job(l.JobName) != nil || !m.jobGone(l.JobName) {
		return false
	}
	if _, err := m.apply(l.ExecutionID, func() lease.Event {
		return lease.Event{Kind: lease.Cancel, At: m.clk.Now(), Cause: "the job was deleted"}
	}, nil); err != nil {
		m.log.Warn("could not cancel the lease of a deleted job's item", "job", l.JobName, "execution_id", l.ExecutionID, "err", err)
	}
	return true
}

// jobGone reports whether job was deleted: not in the registry's cache, and its config node is gone.
func (m *Manager) jobGone(job string) bool {
	if m.reg.Job(job) != nil {
		return false
	}
	gone, err := m.reg.JobGone(job)
	return err == nil && gone
}

// cancelCause says why a lease was cancelled, for the receiver (leases cancelled before causes were kept
// were cancelled because their job was deleted).
func cancelCause(cause string) string {
	if cause == "" {
		return "the job was deleted"
	}
	return cause
}
