package schedule

import (
	"testing"
	"time"
)

// Look: the per-item decision of catchUp all at a scheduled fire, from this peer's mark.
func TestLook(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, c := range []struct {
		name       string
		step       time.Duration
		mark, fire time.Time
		drop, look bool
	}{
		{"no mark: gained, or the first fire here", time.Second, time.Time{}, at(10), false, true},
		{"the previous fire ran here", time.Second, at(9), at(10), false, false},
		{"a fire between was skipped here", time.Second, at(8), at(10), false, true},
		{"many fires between", time.Second, at(1), at(10), false, true},
		{"a later fire here queued this one", time.Second, at(11), at(10), true, false},
		{"this very fire ran here already", time.Second, at(10), at(10), true, false},
		{"a 5 s schedule: the previous fire", 5 * time.Second, at(5), at(10), false, false},
		{"a 5 s schedule: one skipped", 5 * time.Second, at(0), at(10), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			drop, look := Look(every(c.step), c.mark, c.fire)
			if drop != c.drop || look != c.look {
				t.Fatalf("Look = drop %t, look %t; want %t, %t", drop, look, c.drop, c.look)
			}
		})
	}
	// a schedule without more fires: nothing between
	if drop, look := Look(func(time.Time) time.Time { return time.Time{} }, at(1), at(10)); drop || look {
		t.Fatalf("no next fire: drop %t look %t", drop, look)
	}
}

// Since: where an item's missed fires count from.
func TestSince(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var zero time.Time
	for _, c := range []struct {
		name    string
		changed time.Time
		known   []time.Time
		want    time.Time
		ok      bool
	}{
		{"never ran anywhere", at(0), []time.Time{zero, zero, zero}, zero, false},
		{"nothing known, no config time", zero, nil, zero, false},
		{"last recorded run", at(0), []time.Time{zero, at(5), zero}, at(5), true},
		{"a run left in flight is newer", at(0), []time.Time{zero, at(5), at(7)}, at(7), true},
		{"the mark here is newer", at(0), []time.Time{at(9), at(5), zero}, at(9), true},
		{"a LOST end is the last run", at(0), []time.Time{zero, at(6), zero}, at(6), true},
		{"the config changed since (enabled, resumed, edited)", at(20), []time.Time{zero, at(5), zero}, at(20), true},
		{"the config changed before", at(3), []time.Time{zero, at(5), zero}, at(5), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Since(c.changed, c.known...)
			if ok != c.ok || !got.Equal(c.want) {
				t.Fatalf("Since = %v, %t; want %v, %t", got, ok, c.want, c.ok)
			}
		})
	}
}

// Allowed: a schedule narrowed by the job's calendars, as Missed walks it.
func TestAllowed(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	sec := every(time.Second)
	if Allowed(sec, nil)(at(3)) != at(4) {
		t.Fatal("nil allow is not the schedule")
	}
	odd := func(t time.Time) bool { return t.Sub(t0)/time.Second%2 == 1 }
	next := Allowed(sec, odd)
	if got := next(at(3)); !got.Equal(at(5)) {
		t.Fatalf("next odd after 3 = %v", got)
	}
	p := Missed(next, at(0), at(10), CatchUpAll, 0)
	if !equalTimes(p.Fires, secs(1, 3, 5, 7, 9)) {
		t.Fatalf("missed odd fires %v", p.Fires)
	}
	if got := Allowed(sec, func(time.Time) bool { return false })(at(0)); !got.IsZero() {
		t.Fatalf("nothing allowed: %v", got)
	}
}
