package schedule

import (
	"testing"
	"time"
)

func TestEffectiveOverlap(t *testing.T) {
	for _, c := range []struct {
		policy  string
		misfire bool
		want    Overlap
	}{
		{"", true, BufferOne}, {"", false, Skip}, {"ALLOW", true, Allow}, {"ALLOW", false, Allow},
		{"CANCEL_PREVIOUS", false, CancelPrevious}, {"SKIP", false, Skip}, {"BUFFER_ONE", true, BufferOne},
	} {
		if got := EffectiveOverlap(c.policy, c.misfire); got != c.want {
			t.Errorf("EffectiveOverlap(%q, %t) = %s, want %s", c.policy, c.misfire, got, c.want)
		}
	}
}

func TestOverlapConflict(t *testing.T) {
	for _, c := range []struct {
		policy              string
		misfire, misfireSet bool
		conflict            bool
	}{
		{"", true, true, false}, {"", false, true, false},
		{"BUFFER_ONE", true, true, false}, {"BUFFER_ONE", false, true, true}, {"BUFFER_ONE", false, false, false},
		{"SKIP", false, true, false}, {"SKIP", true, true, true}, {"SKIP", true, false, false},
		{"ALLOW", true, true, true}, {"ALLOW", false, true, false}, {"ALLOW", true, false, false},
		{"CANCEL_PREVIOUS", true, true, true}, {"CANCEL_PREVIOUS", false, true, false},
		{"BOGUS", true, true, false}, // an unknown policy is refused on its own field
	} {
		got := OverlapConflict(c.policy, c.misfire, c.misfireSet)
		if (got != "") != c.conflict {
			t.Errorf("OverlapConflict(%q, %t, %t) = %q, want conflict %t", c.policy, c.misfire, c.misfireSet, got, c.conflict)
		}
	}
}

func TestOnBusy(t *testing.T) {
	for _, c := range []struct {
		p      Overlap
		manual bool
		want   Action
	}{
		{BufferOne, false, Buffer}, {Skip, false, SkipFire}, {Allow, false, RunAlongside},
		{CancelPrevious, false, CancelThenRun}, {BufferOne, true, Queue}, {Skip, true, Queue},
		{Allow, true, Queue}, {CancelPrevious, true, Queue},
	} {
		if got := OnBusy(c.p, c.manual); got != c.want {
			t.Errorf("OnBusy(%s, %t) = %s, want %s", c.p, c.manual, got, c.want)
		}
	}
}

func TestCatchUpConflict(t *testing.T) {
	for _, c := range []struct {
		mode   string
		replay bool
		window int
		field  string
	}{
		{"", false, 0, ""}, {"", true, 0, ""}, {"last", true, 0, ""}, {"all", false, 60, ""}, {"all", false, 0, ""},
		{"none", true, 0, "catchUp"}, {"all", true, 0, "catchUp"}, {"last", false, 60, "catchUpWindowSeconds"},
		{"", false, 60, "catchUpWindowSeconds"}, {"", true, 60, "catchUpWindowSeconds"},
	} {
		field, msg := CatchUpConflict(c.mode, c.replay, c.window)
		if field != c.field || (field == "") != (msg == "") {
			t.Errorf("CatchUpConflict(%q, %t, %d) = %q %q, want field %q", c.mode, c.replay, c.window, field, msg, c.field)
		}
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// every returns a schedule firing every d from t0 on.
func every(d time.Duration) func(time.Time) time.Time {
	return func(after time.Time) time.Time {
		if after.Before(t0) {
			return t0
		}
		return t0.Add((after.Sub(t0)/d + 1) * d)
	}
}

func secs(ns ...int) []time.Time {
	var out []time.Time
	for _, n := range ns {
		out = append(out, t0.Add(time.Duration(n)*time.Second))
	}
	return out
}

func TestMissed(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, c := range []struct {
		name      string
		mode      CatchUp
		last, now int
		window    time.Duration
		want      []time.Time
		dropped   int
	}{
		{"none replays nothing", CatchUpNone, 10, 50, 0, nil, 0},
		{"no gap", CatchUpAll, 40, 50, 0, nil, 0},
		{"last: the latest missed only", CatchUpLast, 10, 50, 0, secs(40), 2},
		{"all: every missed fire oldest first", CatchUpAll, 10, 50, 0, secs(20, 30, 40), 0},
		{"all within a window", CatchUpAll, 10, 50, 25 * time.Second, secs(30, 40), 1},
		{"a fire exactly at the window's edge is in it", CatchUpAll, 10, 50, 20 * time.Second, secs(30, 40), 1},
		{"window wider than the gap", CatchUpAll, 10, 50, time.Hour, secs(20, 30, 40), 0},
		{"last after now: nothing", CatchUpAll, 60, 50, 0, nil, 0},
		{"last off the schedule", CatchUpAll, 15, 50, 0, secs(20, 30, 40), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Missed(every(10*time.Second), at(c.last), at(c.now), c.mode, c.window)
			if !equalTimes(p.Fires, c.want) || p.Dropped != c.dropped {
				t.Errorf("Missed = %v dropped %d, want %v dropped %d", p.Fires, p.Dropped, c.want, c.dropped)
			}
		})
	}
}

func TestMissedCapsAll(t *testing.T) {
	p := Missed(every(time.Second), t0, t0.Add(2000*time.Second), CatchUpAll, 0)
	if len(p.Fires) != MaxCatchUpFires || p.Dropped != 1999-MaxCatchUpFires {
		t.Fatalf("got %d fires, %d dropped", len(p.Fires), p.Dropped)
	}
	if want := t0.Add(1999 * time.Second); !p.Fires[len(p.Fires)-1].Equal(want) {
		t.Fatalf("the newest fires are kept: last is %v, want %v", p.Fires[len(p.Fires)-1], want)
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func TestJitter(t *testing.T) {
	if Jitter("a", t0, 0) != 0 || Jitter("a", t0, -5) != 0 {
		t.Fatal("no jitter without jitterMs")
	}
	if first, again := Jitter("job", t0, 5000), Jitter("job", t0, 5000); first != again {
		t.Fatal("jitter is not deterministic")
	}
	// spread: over many fires of one job the offsets cover the range rather than herding
	seen := map[int]bool{}
	for i := range 1000 {
		d := Jitter("job", t0.Add(time.Duration(i)*time.Minute), 9999)
		if d < 0 || d > 9999*time.Millisecond {
			t.Fatalf("jitter %v out of range", d)
		}
		seen[int(d/time.Second)] = true
	}
	if len(seen) != 10 {
		t.Fatalf("1000 fires' jitter fell in %d of 10 seconds", len(seen))
	}
	if Jitter("ab", t0, 1<<30) == Jitter("a", t0, 1<<30) && Jitter("job1", t0, 1<<30) == Jitter("job2", t0, 1<<30) {
		t.Fatal("different jobs share an offset")
	}
}

func FuzzSchedule(f *testing.F) {
	f.Add("job", int64(0), 1000, int64(10), int64(50), int64(3), int64(25), uint8(2))
	f.Add("", int64(-5), 0, int64(0), int64(0), int64(1), int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, job string, at int64, maxMs int, last, now, step, window int64, mode uint8) {
		maxMs %= MaxJitterMs + 1
		d := Jitter(job, t0.Add(time.Duration(at)), maxMs)
		if d < 0 || d > time.Duration(max(maxMs, 0))*time.Millisecond || d != Jitter(job, t0.Add(time.Duration(at)), maxMs) {
			t.Fatalf("Jitter(%q, %d, %d) = %v", job, at, maxMs, d)
		}
		step = 1 + abs(step)%600
		last, now, window = abs(last)%100_000, abs(now)%100_000, abs(window)%100_000
		m := []CatchUp{CatchUpNone, CatchUpLast, CatchUpAll}[mode%3]
		lastT, nowT := t0.Add(time.Duration(last)*time.Second), t0.Add(time.Duration(now)*time.Second)
		win := time.Duration(window) * time.Second
		p := Missed(every(time.Duration(step)*time.Second), lastT, nowT, m, win)
		all := Missed(every(time.Duration(step)*time.Second), lastT, nowT, CatchUpAll, 0)
		total := len(all.Fires) + all.Dropped
		switch m {
		case CatchUpNone:
			if len(p.Fires) != 0 {
				t.Fatalf("none planned %v", p.Fires)
			}
		case CatchUpLast:
			if len(p.Fires) > 1 || len(p.Fires)+p.Dropped != total {
				t.Fatalf("last planned %d fires, dropped %d, of %d", len(p.Fires), p.Dropped, total)
			}
		case CatchUpAll:
			if len(p.Fires) > MaxCatchUpFires || len(p.Fires)+p.Dropped != total {
				t.Fatalf("all planned %d fires, dropped %d, of %d", len(p.Fires), p.Dropped, total)
			}
		}
		for i, ft := range p.Fires {
			if !ft.After(lastT) || !ft.Before(nowT) || (i > 0 && !ft.After(p.Fires[i-1])) {
				t.Fatalf("fire %v outside (%v, %v) or out of order", ft, lastT, nowT)
			}
			if m == CatchUpAll && win > 0 && ft.Before(nowT.Add(-win)) {
				t.Fatalf("fire %v older than the window", ft)
			}
		}
	})
}

func abs(n int64) int64 {
	if n < 0 {
		if n == -n { // math.MinInt64
			return 0
		}
		return -n
	}
	return n
}
