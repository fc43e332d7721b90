package sharding

import (
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/schedule"
)

func TestHolders(t *testing.T) {
	fire := time.Date(2026, 11, 25, 3, 34, 57, 0, time.UTC)
	const lead = time.Second
	cutoff := fire.Add(-lead - HoldMargin) // registered by then: holds the fire
	a, b, y := Instance{"a@-@1", "10.0.0.1"}, Instance{"b@-@2", "10.0.0.2"}, Instance{"y@-@9", "10.0.0.3"}
	tests := []struct {
		name             string
		candidates       []Instance
		registered       map[string]time.Time
		wantHold, wantLt []Instance
		wantRecheck      time.Time
	}{
		{"all registered long before: all hold", []Instance{a, b, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), b.ID: fire.Add(-time.Hour), y.ID: fire.Add(-time.Minute)},
			[]Instance{a, b, y}, nil, time.Time{}},
		{"a restarted peer's new instance, registered after the hand-off, waits", []Instance{a, b, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), b.ID: fire.Add(-time.Hour), y.ID: fire.Add(2 * time.Second)},
			[]Instance{a, b}, []Instance{y}, fire.Add(2*time.Second + HoldMargin + 30*time.Second)},
		{"registered exactly at the cutoff holds", []Instance{a, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), y.ID: cutoff},
			[]Instance{a, y}, nil, time.Time{}},
		{"registered just after the cutoff waits", []Instance{a, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), y.ID: cutoff.Add(time.Millisecond)},
			[]Instance{a}, []Instance{y}, cutoff.Add(time.Millisecond + HoldMargin + 30*time.Second)},
		{"an instance whose registration is unknown waits (counted as registered at the fire)", []Instance{a, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour)},
			[]Instance{a}, []Instance{y}, fire.Add(HoldMargin + 30*time.Second)},
		{"nobody holds it: all of them, nobody waits", []Instance{a, y},
			map[string]time.Time{a.ID: fire, y.ID: fire.Add(time.Second)},
			[]Instance{a, y}, nil, time.Time{}},
		{"no candidate", nil, nil, nil, nil, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.candidates)
			hold, later := Holders(in, tt.registered, fire, lead)
			if !slices.Equal(hold, tt.wantHold) || !slices.Equal(later, tt.wantLt) {
				t.Fatalf("Holders = %v, %v; want %v, %v", hold, later, tt.wantHold, tt.wantLt)
			}
			if !slices.Equal(in, tt.candidates) {
				t.Fatal("Holders changed its input")
			}
			if got := RecheckAt(later, tt.registered, fire, Holding{Lead: lead, Wait: 30 * time.Second}); !got.Equal(tt.wantRecheck) {
				t.Fatalf("RecheckAt = %v, want %v", got, tt.wantRecheck)
			}
		})
	}
}

// Holders keeps every candidate exactly once, gives a fire at least one holder, keeps only instances registered
// by the cutoff unless none was, and RecheckAt comes after every left-out instance's last possible held fire.
func FuzzHolders(f *testing.F) {
	f.Add(uint8(3), int64(-10_000), int64(5_000), int64(2_000), int64(1_000), int64(30_000))
	f.Add(uint8(2), int64(0), int64(0), int64(-3_000), int64(0), int64(1))
	f.Add(uint8(1), int64(5_000), int64(0), int64(0), int64(1_000), int64(30_000))
	f.Fuzz(func(t *testing.T, n uint8, r0, r1, r2, leadMs, waitMs int64) {
		fire := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
		lead, wait := time.Duration(leadMs%60_000)*time.Millisecond, time.Duration(waitMs%120_000)*time.Millisecond
		offsets := []int64{r0, r1, r2}
		var candidates []Instance
		registered := map[string]time.Time{}
		for i := range int(n % 6) {
			in := Instance{ID: string(rune('a'+i)) + "@-@1", ServerIP: "10.0.0.1"}
			candidates = append(candidates, in)
			if i < len(offsets) { // the others' registration is unknown
				registered[in.ID] = fire.Add(time.Duration(offsets[i]%3_600_000) * time.Millisecond)
			}
		}
		hold, later := Holders(candidates, registered, fire, lead)
		if len(candidates) > 0 && len(hold) == 0 {
			t.Fatal("a fire with candidates got no holder")
		}
		if got := slices.Concat(hold, later); len(got) != len(candidates) {
			t.Fatalf("hold %v + later %v, candidates %v", hold, later, candidates)
		}
		for _, in := range candidates {
			if slices.Contains(hold, in) == slices.Contains(later, in) {
				t.Fatalf("%s in hold and later, or in neither", in.ID)
			}
		}
		cutoff := fire.Add(-lead - HoldMargin)
		if len(later) > 0 {
			for _, in := range hold {
				if at, ok := registered[in.ID]; !ok || at.After(cutoff) {
					t.Fatalf("%s holds, registered %v after the cutoff %v", in.ID, at, cutoff)
				}
			}
		}
		due := RecheckAt(later, registered, fire, Holding{Lead: lead, Wait: wait})
		for _, in := range later {
			at, ok := registered[in.ID]
			if !ok {
				at = fire
			}
			if due.Before(at.Add(HoldMargin + wait)) {
				t.Fatalf("recheck at %v, before %s's last held fire could end (%v)", due, in.ID, at.Add(HoldMargin+wait))
			}
		}
	})
}

// every3hFrom is a schedule firing every 3 hours from first.
func every3hFrom(first time.Time) func(time.Time) time.Time {
	return func(t time.Time) time.Time {
		if t.Before(first) {
			return first
		}
		return first.Add((t.Sub(first)/(3*time.Hour) + 1) * 3 * time.Hour)
	}
}

// every is a schedule firing on multiples of d.
type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Truncate(time.Duration(e)).Add(time.Duration(e)) }

func TestHolding(t *testing.T) {
	const lead, wait = time.Second, 30 * time.Second
	minute := every(time.Minute).Next
	at := time.Date(2026, 12, 3, 10, 0, 20, 0, time.UTC) // a registration between the fires of 10:00 and 10:01
	now := at.Add(30 * time.Second)                      // 10:00:50
	tenOClock := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name          string
		h             Holding
		earliest, end time.Time // Earliest(now), Until(at)
	}{
		{"misfire off: Wait from the hand-off", Holding{Lead: lead, Wait: wait, Last: tenOClock, Next: minute, Known: true},
			now.Add(lead - wait), at.Add(HoldMargin + wait)},
		{"schedule not known: Wait", Holding{Lead: lead, Wait: wait, Misfire: true},
			now.Add(lead - wait), at.Add(HoldMargin + wait)},
		{"misfire on, every minute: the last fire, until the first fire the instance holds", Holding{Lead: lead, Wait: wait,
			Misfire: true, Last: tenOClock, Next: minute, Known: true}, tenOClock, tenOClock.Add(time.Minute)},
		{"misfire on, every 10 s: Wait reaches further", Holding{Lead: lead, Wait: wait, Misfire: true,
			Last: tenOClock.Add(50 * time.Second), Next: every(10 * time.Second).Next, Known: true}, now.Add(lead - wait), at.Add(HoldMargin + wait)},
		{"misfire on, no fire handed off here yet: any within MaxShardingWait", Holding{Lead: lead, Wait: wait, Misfire: true,
			Next: minute, Known: true}, now.Add(lead - schedule.MaxShardingWait), tenOClock.Add(time.Minute)},
		{"misfire on, every 3 hours, the last fire an hour ago: Wait, and at most MaxShardingWait", Holding{Lead: lead, Wait: wait,
			Misfire: true, Last: tenOClock.Add(-time.Hour), Next: every(3 * time.Hour).Next, Known: true},
			now.Add(lead - wait), at.Add(HoldMargin + wait)},
		{"misfire on, every 3 hours, the last fire 3 min ago: until MaxShardingWait after it", Holding{Lead: lead, Wait: wait,
			Misfire: true, Last: at.Add(-3 * time.Minute), Next: every3hFrom(at.Add(-3 * time.Minute)), Known: true},
			at.Add(-3 * time.Minute), at.Add(-3*time.Minute - lead + schedule.MaxShardingWait)},
		{"misfire on, every 3 hours, no fire handed off here yet: MaxShardingWait", Holding{Lead: lead, Wait: wait,
			Misfire: true, Next: every(3 * time.Hour).Next, Known: true},
			now.Add(lead - schedule.MaxShardingWait), at.Add(HoldMargin + schedule.MaxShardingWait)},
		{"misfire on, no fire after the registration: Wait", Holding{Lead: lead, Wait: wait, Misfire: true,
			Last: tenOClock, Next: func(time.Time) time.Time { return time.Time{} }, Known: true},
			tenOClock, at.Add(HoldMargin + wait)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.Earliest(now); !got.Equal(tt.earliest) {
				t.Errorf("Earliest = %v, want %v", got, tt.earliest)
			}
			if got := tt.h.Until(at); !got.Equal(tt.end) {
				t.Errorf("Until = %v, want %v", got, tt.end)
			}
		})
	}
}

// FuzzHolding checks Holding against the executors' rule (schedule.ShardingWait): a fire handed off a lead before
// its time and held from then as that rule says is still held at now only if it is no earlier than Earliest(now),
// and a fire an instance registered at misses (HoldCutoff) is held no later than Until.
func FuzzHolding(f *testing.F) {
	f.Add(int64(60_000), int64(1_000), int64(30_000), true, int64(20_000), int64(25_000))
	f.Add(int64(10_000), int64(1_000), int64(30_000), true, int64(59_000), int64(0))
	f.Add(int64(3_600_000), int64(500), int64(30_000), true, int64(100_000), int64(-5_000))
	f.Add(int64(60_000), int64(1_000), int64(30_000), false, int64(1_000), int64(1_000))
	f.Fuzz(func(t *testing.T, periodMs, leadMs, waitMs int64, misfire bool, nowMs, regMs int64) {
		period := time.Duration(1_000+abs(periodMs)%7_200_000) * time.Millisecond
		lead := time.Duration(abs(leadMs)%2_000) * time.Millisecond
		lead = min(lead, period/10)
		wait := time.Duration(100+abs(waitMs)%120_000) * time.Millisecond
		base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
		now := base.Add(time.Duration(abs(nowMs)%86_400_000) * time.Millisecond)
		next := every(period).Next
		prev := func(t time.Time) time.Time { // the last fire at or before t
			if t.Truncate(period).Equal(t) {
				return t
			}
			return t.Truncate(period)
		}
		holdEnd := func(fire time.Time) time.Time {
			off := fire.Add(-lead)
			return off.Add(schedule.ShardingWait(wait, lead, off, next(fire), misfire))
		}
		last := prev(now.Add(lead)) // the last fire handed off by now
		h := Holding{Lead: lead, Wait: wait, Misfire: misfire, Last: last, Next: next, Known: true}
		earliest := h.Earliest(now)
		for fire := last; !fire.Before(now.Add(-schedule.MaxShardingWait - wait - time.Minute)); fire = fire.Add(-period) {
			if holdEnd(fire).After(now) && fire.Before(earliest) {
				t.Fatalf("fire %v is held until %v, after now %v, but Earliest is %v", fire, holdEnd(fire), now, earliest)
			}
		}
		at := now.Add(time.Duration(regMs%600_000) * time.Millisecond)
		until := h.Until(at)
		for fire := prev(at.Add(lead + HoldMargin)); !fire.Before(at.Add(-schedule.MaxShardingWait - wait - time.Minute)); fire = fire.Add(-period) {
			if !HoldCutoff(fire, lead).Before(at) {
				continue // the instance holds this one
			}
			if holdEnd(fire).After(until) {
				t.Fatalf("a fire of %v the instance registered at %v misses is held until %v, after Until %v", fire, at, holdEnd(fire), until)
			}
		}
	})
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
