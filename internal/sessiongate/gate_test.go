package sessiongate

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 20, 0, 0, 0, time.UTC)
	deadline := t0.Add(time.Second)
	sound := Standing{Healthy: true, Lease: true, Epoch: 3}
	suspended := Standing{Epoch: 3}
	stale := Standing{Healthy: true, Epoch: 3} // reconnected or thawed, not yet proven alive
	expired := Standing{Expired: true, Epoch: 4}
	renewed := Standing{Healthy: true, Lease: true, Epoch: 4}
	tests := []struct {
		name       string
		start, cur Standing
		now        time.Time
		want       Decision
		reason     string
	}{
		{"sound all along", sound, sound, t0, Fire, ""},
		{"sound past the deadline (a late fire is not a doubtful one)", sound, sound, deadline.Add(time.Hour), Fire, ""},
		{"suspended before the deadline", sound, suspended, t0, Wait, ""},
		{"suspended just before the deadline", sound, suspended, deadline.Add(-time.Nanosecond), Wait, ""},
		{"suspended at the deadline", sound, suspended, deadline, Skip, ReasonDeadline},
		{"suspended past the deadline", sound, suspended, deadline.Add(time.Millisecond), Skip, ReasonDeadline},
		{"reconnected, lease not yet renewed", sound, stale, t0, Wait, ""},
		{"reconnected, lease renewed: same session", sound, sound, t0.Add(40 * time.Millisecond), Fire, ""},
		{"began suspended, resumed", suspended, sound, t0, Fire, ""},
		{"expired while waiting", sound, expired, t0, Skip, ReasonExpired},
		{"expired and renewed while waiting: a new session", sound, renewed, t0, Skip, ReasonExpired},
		{"renewed while suspended at the start", suspended, renewed, t0, Skip, ReasonExpired},
		{"expired at the start", expired, expired, t0, Skip, ReasonExpired},
		{"expired at the start, renewed since", expired, renewed, t0, Skip, ReasonExpired},
		{"an expiry since, even with a sound lease and time left", Standing{Healthy: true, Lease: true}, sound, t0, Skip, ReasonExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Decide(tt.start, tt.cur, tt.now, deadline)
			if got != tt.want || reason != tt.reason {
				t.Fatalf("Decide = %v %q, want %v %q", got, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	due := time.Date(2026, 11, 24, 20, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		next  time.Time
		grace time.Duration
		want  time.Time
	}{
		{"no next fire: the grace", time.Time{}, 4 * time.Second, due.Add(4 * time.Second)},
		{"next fire after the grace", due.Add(time.Minute), 4 * time.Second, due.Add(4 * time.Second)},
		{"next fire within the grace: never into it", due.Add(time.Second), 4 * time.Second, due.Add(time.Second)},
		{"next fire not after due: unknown", due, 4 * time.Second, due.Add(4 * time.Second)},
		{"next fire before due: unknown", due.Add(-time.Second), 4 * time.Second, due.Add(4 * time.Second)},
		{"no grace", due.Add(time.Second), 0, due},
		{"negative grace", due.Add(time.Second), -time.Second, due},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Deadline(due, tt.next, tt.grace); !got.Equal(tt.want) {
				t.Fatalf("Deadline = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzDecide checks the safety properties: a fire goes on only under a sound lease of the session it began
// under, never waits at or past its deadline, and a deadline is never past due+grace nor into the next fire.
func FuzzDecide(f *testing.F) {
	f.Add(true, true, false, int64(0), false, true, false, int64(0), int64(0), int64(1000), int64(500), int64(4000))
	f.Add(true, true, false, int64(2), false, false, false, int64(2), int64(999), int64(1000), int64(0), int64(4000))
	f.Add(false, false, true, int64(1), true, true, false, int64(2), int64(5), int64(1000), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, sh, sl, se bool, sEpoch int64, ch, cl, ce bool, cEpoch int64, nowMs, nextMs, dueMs, graceMs int64) {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		start := Standing{Healthy: sh, Lease: sl, Expired: se, Epoch: sEpoch}
		cur := Standing{Healthy: ch, Lease: cl, Expired: ce, Epoch: cEpoch}
		due := base.Add(time.Duration(dueMs%1e7) * time.Millisecond)
		next := base.Add(time.Duration(nextMs%1e7) * time.Millisecond)
		grace := time.Duration(graceMs%1e6) * time.Millisecond
		now := base.Add(time.Duration(nowMs%1e7) * time.Millisecond)
		deadline := Deadline(due, next, grace)
		if deadline.Before(due) || deadline.After(due.Add(max(grace, 0))) {
			t.Fatalf("deadline %v outside [due %v, due+grace %v]", deadline, due, grace)
		}
		if next.After(due) && deadline.After(next) {
			t.Fatalf("deadline %v runs into the next fire %v", deadline, next)
		}
		d, reason := Decide(start, cur, now, deadline)
		switch d {
		case Fire:
			if !cur.Lease || cur.Expired || start.Expired || cur.Epoch != start.Epoch || reason != "" {
				t.Fatalf("fired under %+v (began under %+v)", cur, start)
			}
		case Wait:
			if !now.Before(deadline) || cur.Lease || cur.Epoch != start.Epoch {
				t.Fatalf("waits at %v with deadline %v under %+v", now, deadline, cur)
			}
		case Skip:
			if reason != ReasonExpired && reason != ReasonDeadline {
				t.Fatalf("skip without a reason: %q", reason)
			}
			if cur.Lease && !cur.Expired && !start.Expired && cur.Epoch == start.Epoch {
				t.Fatalf("skipped under a sound lease of the same session: %+v", cur)
			}
		default:
			t.Fatalf("decision %v", d)
		}
	})
}
