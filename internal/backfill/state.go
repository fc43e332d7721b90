package backfill

import (
	"fmt"
	"time"

	"github.com/ejserver/ejserver"
)

// State is a backfill's state.
type State string

// The states of a backfill (doc.go's diagram).
const (
	StateRunning   State = "RUNNING"
	StateDone      State = "DONE"
	StateCancelled State = "CANCELLED"
	StateFailed    State = "FAILED"
)

// Ended reports whether no fire of the backfill runs any more.
func (s State) Ended() bool { return s != StateRunning }

// Backfill is one backfill of a job: its request and its progress, the JSON of its ZooKeeper node.
type Backfill struct {
	ID            string    `json:"id" example:"0193a3c2-7d4e-7b3a-9c55-1f0e5a3c9d21"`
	Job           string    `json:"job" example:"settle"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	OverlapPolicy string    `json:"overlapPolicy" example:"BUFFER_ONE"`
	State         State     `json:"state" example:"RUNNING"`
	// Total is the range's fires; Done of them have ended (every item sent, or skipped by the policy).
	Total int `json:"total" example:"1440"`
	Done  int `json:"done" example:"360"`
	// Cursor is the scheduled time of the last fire done (zero before the first): the next fire is the range's
	// first after it.
	Cursor time.Time `json:"cursor,omitzero"`
	// Current is the scheduled time of the latest fire sent (or being sent) and not yet recorded done, if
	// any. Up to Pacing.MaxPending fires after Cursor may have been sent while their history records commit.
	Current time.Time `json:"current,omitzero"`
	// Items counts the items sent; Failed those that failed after their retries; Skipped those the SKIP
	// policy left out because the job's own run of the item was in flight.
	Items   int `json:"items"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Owner is the instance running the backfill now (empty while nobody has claimed it); Claims counts the
	// claims (a peer that took it over after another stopped adds one).
	Owner  string `json:"owner,omitempty"`
	Claims int    `json:"claims"`
	// CreatedBy is the API caller that started it; CancelledBy the one that cancelled it.
	CreatedBy   string    `json:"createdBy,omitempty"`
	CancelledBy string    `json:"cancelledBy,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	EndedAt     time.Time `json:"endedAt,omitzero"`
	// Reason says why a backfill failed.
	Reason string `json:"reason,omitempty"`
}

// New returns a running backfill of the request's range with total fires.
func New(id, job string, p Parsed, total int, by string, now time.Time) Backfill {
	b := Backfill{ID: id, Job: job, From: p.From, To: p.To, OverlapPolicy: p.OverlapPolicy, State: StateRunning,
		Total: total, CreatedBy: by, CreatedAt: now.UTC()}
	if total == 0 {
		b.State, b.EndedAt = StateDone, b.CreatedAt
	}
	return b
}

// Percent is the share of the fires done, 0-100.
func (b Backfill) Percent() int {
	if b.Total == 0 {
		return 100
	}
	return b.Done * 100 / b.Total
}

// Range returns the backfill's fires under sched.
func (b Backfill) Range(sched Schedule, allow func(time.Time) bool) Range {
	return Range{Schedule: sched, From: b.From, To: b.To, Allow: allow}
}

// Claim gives the running backfill to instance: an error if it has ended.
func (b Backfill) Claim(instance string) (Backfill, error) {
	if b.State.Ended() {
		return b, fmt.Errorf("backfill %s is %s", b.ID, b.State)
	}
	b.Owner = instance
	b.Claims++
	return b, nil
}

// Start marks the fire at t in flight.
func (b Backfill) Start(t time.Time) Backfill {
	b.Current = t
	return b
}

// FireOutcome is what one fire of a backfill did.
type FireOutcome struct {
	At      time.Time
	Items   int // sent
	Failed  int // of those sent
	Skipped int // left out by SKIP
}

// Advance records the fire at o.At done; the last fire ends the backfill. Fires are recorded done in their
// order while later ones may already be sent: a Current after o.At stays.
func (b Backfill) Advance(o FireOutcome, now time.Time) Backfill {
	if b.State.Ended() {
		return b
	}
	b.Done++
	b.Cursor = o.At
	if !b.Current.After(o.At) {
		b.Current = time.Time{}
	}
	b.Items += o.Items
	b.Failed += o.Failed
	b.Skipped += o.Skipped
	if b.Done >= b.Total {
		b.State, b.EndedAt, b.Owner = StateDone, now.UTC(), ""
	}
	return b
}

// Exhausted ends the backfill when its range has no fire after the cursor though fewer than Total are
// done (the job's schedule changed since it was counted).
func (b Backfill) Exhausted(now time.Time) Backfill {
	if b.State.Ended() {
		return b
	}
	b.State, b.EndedAt, b.Owner, b.Current = StateDone, now.UTC(), "", time.Time{}
	b.Total = b.Done
	return b
}

// Cancel ends the running backfill as cancelled by by; a backfill that has ended is a conflict.
func (b Backfill) Cancel(by string, now time.Time) (Backfill, error) {
	if b.State.Ended() {
		return b, ejserver.Errorf(ejserver.ECONFLICT, "backfill %s has ended (%s): nothing to cancel", b.ID, b.State)
	}
	b.State, b.CancelledBy, b.EndedAt, b.Owner, b.Current = StateCancelled, by, now.UTC(), "", time.Time{}
	return b, nil
}

// Fail ends the running backfill as failed for reason (its job is gone, its schedule cannot be read).
func (b Backfill) Fail(reason string, now time.Time) Backfill {
	if b.State.Ended() {
		return b
	}
	b.State, b.Reason, b.EndedAt, b.Owner, b.Current = StateFailed, reason, now.UTC(), "", time.Time{}
	return b
}
