package backfill

import (
	"fmt"
	"time"

	"github.com/ejserver/ejserver"
)

// MaxFires caps the fires of one backfill: a longer range is refused, naming the field.
const MaxFires = 10000

// Schedule is a job's cron schedule (cronexpr's schedules satisfy it): Next returns the first fire strictly
// after t, zero when there is none.
type Schedule interface {
	Next(t time.Time) time.Time
}

// Range is the fires a backfill runs: every fire of Schedule at or after From and at or before To that
// Allow accepts (nil: all). Allow is where a job's calendars and endAt narrow the cron's fires.
type Range struct {
	Schedule Schedule
	From, To time.Time
	Allow    func(time.Time) bool
}

// Next returns the range's first fire strictly after t (or its first fire at all for a zero t), and false
// when none is left.
func (r Range) Next(t time.Time) (time.Time, bool) {
	if t.IsZero() || t.Before(r.From) {
		t = r.From.Add(-time.Nanosecond)
	}
	for {
		t = r.Schedule.Next(t)
		if t.IsZero() || t.After(r.To) {
			return time.Time{}, false
		}
		if r.Allow == nil || r.Allow(t) {
			return t, true
		}
	}
}

// Count counts the range's fires, up to limit+1: more than limit is an error naming the field "to".
func (r Range) Count(limit int) (int, error) {
	n := 0
	for t, ok := r.Next(time.Time{}); ok; t, ok = r.Next(t) {
		n++
		if n > limit {
			return 0, ejserver.Invalid("to", "the range from %s holds more than %d fires: backfill a shorter range",
				r.From.Format(time.RFC3339), limit)
		}
	}
	return n, nil
}

// Request is what an operator asks for: the range and what a backfill fire does beside the job's own run.
type Request struct {
	From          string `json:"from" example:"2026-11-01T00:00:00Z"`
	To            string `json:"to" example:"2026-11-02T00:00:00Z"`
	OverlapPolicy string `json:"overlapPolicy,omitempty" example:"BUFFER_ONE"`
}

// The overlap policies of a backfill: what one of its items does when the job's own run of that item is in
// flight (the item's running node exists).
const (
	// OverlapBufferOne (the default): wait until the job's run ends, then run: the schedule goes first.
	OverlapBufferOne = "BUFFER_ONE"
	// OverlapSkip: skip the item of that fire (counted as skipped in the progress).
	OverlapSkip = "SKIP"
	// OverlapAllow: run beside the job's run (the backfill's webhook-ids are its own).
	OverlapAllow = "ALLOW"
)

// Parsed is a validated request.
type Parsed struct {
	From, To      time.Time
	OverlapPolicy string
}

// Parse validates a request against now: both ends RFC 3339, From before To, To not in the future (a
// backfill runs past fires; the schedule runs the rest). Errors name the field.
func Parse(req Request, now time.Time) (Parsed, error) {
	var p Parsed
	var err error
	if req.From == "" {
		return p, ejserver.Invalid("from", "is required (RFC 3339, e.g. 2026-11-01T00:00:00Z)")
	}
	if p.From, err = time.Parse(time.RFC3339, req.From); err != nil {
		return p, ejserver.Invalid("from", "is not an RFC 3339 time: %q", req.From)
	}
	if req.To == "" {
		return p, ejserver.Invalid("to", "is required (RFC 3339, e.g. 2026-11-02T00:00:00Z)")
	}
	if p.To, err = time.Parse(time.RFC3339, req.To); err != nil {
		return p, ejserver.Invalid("to", "is not an RFC 3339 time: %q", req.To)
	}
	if !p.From.Before(p.To) {
		return p, ejserver.Invalid("to", "must be after from (%s)", req.From)
	}
	if p.To.After(now) {
		return p, ejserver.Invalid("to", "is in the future (%s): a backfill runs past fires only", now.UTC().Format(time.RFC3339))
	}
	switch req.OverlapPolicy {
	case "":
		p.OverlapPolicy = OverlapBufferOne
	case OverlapBufferOne, OverlapSkip, OverlapAllow:
		p.OverlapPolicy = req.OverlapPolicy
	case "CANCEL_PREVIOUS":
		return p, ejserver.Invalid("overlapPolicy", "CANCEL_PREVIOUS is not offered for a backfill: it never cancels the job's own runs (use BUFFER_ONE, SKIP or ALLOW)")
	default:
		return p, ejserver.Invalid("overlapPolicy", "must be BUFFER_ONE, SKIP or ALLOW, got %q", req.OverlapPolicy)
	}
	p.From, p.To = p.From.UTC(), p.To.UTC()
	return p, nil
}

// String is for logs.
func (p Parsed) String() string {
	return fmt.Sprintf("%s..%s %s", p.From.Format(time.RFC3339), p.To.Format(time.RFC3339), p.OverlapPolicy)
}
