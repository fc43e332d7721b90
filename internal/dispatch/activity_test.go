package dispatch

import (
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

func TestActivityBusyAroundABurst(t *testing.T) {
	const guard = 100 * time.Millisecond
	clk := clock.NewFake(time.Unix(1000, 0))
	a := NewActivity(clk)
	busy := func(want time.Duration) {
		t.Helper()
		if got := a.Busy(guard); got != want {
			t.Fatalf("at %s busy for %s, want %s", clk.Now().Format("05.000"), got, want)
		}
	}
	busy(0)
	due := clk.Now().Add(300 * time.Millisecond)
	a.waiting(due, 1)
	a.waiting(due, 1)
	busy(0) // due later than the guard
	clk.Advance(250 * time.Millisecond)
	busy(150 * time.Millisecond) // due in 50ms, and the guard after it
	a.waiting(due, -1)
	busy(150 * time.Millisecond) // one item still waits
	a.waiting(due, -1)
	busy(0)
	clk.Advance(50 * time.Millisecond)
	a.departure().leave(due, false, clk.Now()) // an item's request leaves now
	busy(guard)
	clk.Advance(60 * time.Millisecond)
	busy(40 * time.Millisecond)
	clk.Advance(40 * time.Millisecond)
	busy(0)

	var none *Activity // an executor without one reports to nil
	none.waiting(due, 1)
	none.departure().leave(due, false, clk.Now())
	if none.Busy(guard) != 0 {
		t.Fatal("a nil Activity is busy")
	}
}

// quietWithin reports whether awaitQuiet(stop, bound) returns within a real second; false: it still waits.
func quietWithin(a *Activity, stop <-chan struct{}, bound time.Duration) (func() bool, func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.awaitQuiet(stop, bound)
	}()
	returned := func() bool {
		select {
		case <-done:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}
	return returned, func() { <-done }
}

func TestActivityQuietOnceTheBurstHasLeft(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	a := NewActivity(clk)
	never := make(chan struct{})
	if returned, _ := quietWithin(a, never, time.Second); !returned() {
		t.Fatal("waited with nothing leaving")
	}

	due := clk.Now().Add(time.Second)
	a.waiting(due, 1)
	a.waiting(due, 1)
	if returned, _ := quietWithin(a, never, time.Second); !returned() {
		t.Fatal("waited for items whose time has not come")
	}
	clk.Advance(time.Second)
	first, second := a.departure(), a.departure()
	first.leave(due, true, clk.Now()) // the second item's timer has not fired yet
	returned, wait := quietWithin(a, never, time.Minute)
	first.left()
	if returned() {
		t.Fatal("quiet while an item whose time has come has not woken")
	}
	second.leave(due, true, clk.Now())
	first.left() // a second left of the same item counts nothing
	if returned() {
		t.Fatal("quiet while an item is leaving")
	}
	second.left()
	if !returned() {
		t.Fatal("still waiting after every item left")
	}
	wait()
	second.left()
	if a.leaving != 0 || len(a.due) != 0 {
		t.Fatalf("leaving %d, due %v after the burst", a.leaving, a.due)
	}
}

func TestActivityQuietWaitIsBounded(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	a := NewActivity(clk)
	stuck := a.departure()
	stuck.leave(clk.Now(), false, clk.Now()) // never leaves: waiting for a slot that never frees, say
	created := clk.TimerCreated()
	returned, wait := quietWithin(a, make(chan struct{}), 250*time.Millisecond)
	<-created
	clk.Advance(249 * time.Millisecond)
	if returned() {
		t.Fatal("returned before the bound")
	}
	clk.Advance(time.Millisecond)
	wait()

	stop := make(chan struct{})
	returned, wait = quietWithin(a, stop, time.Hour)
	if returned() {
		t.Fatal("returned while an item is leaving")
	}
	close(stop)
	wait()

	var none *Activity
	none.departure().leave(clk.Now(), false, clk.Now())
	none.departure().left()
	none.awaitQuiet(make(chan struct{}), time.Hour) // a nil Activity never makes anyone wait
}

// dueCount is the number of prepared items waiting for their time.
func (a *Activity) dueCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.due {
		n += c
	}
	return n
}

func TestActivityGapIsAsymmetric(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	a := NewActivity(clk)
	if gap, last := a.Gap(100*time.Millisecond, time.Second); !gap || !last.IsZero() {
		t.Fatalf("a peer that never sent: gap %t, last start %v", gap, last)
	}
	start := clk.Now()
	a.departure().leave(start, false, start)
	clk.Advance(150 * time.Millisecond)
	if gap, last := a.Gap(100*time.Millisecond, time.Second); !gap || !last.Equal(start) {
		t.Fatalf("150 ms after a burst: gap %t, last start %v, want true, %v", gap, last, start)
	}
	if gap, _ := a.Gap(200*time.Millisecond, 0); gap {
		t.Fatal("a gap 150 ms after a burst, asking for 200 ms since")
	}
	a.waiting(clk.Now().Add(500*time.Millisecond), 1)
	if gap, _ := a.Gap(100*time.Millisecond, 600*time.Millisecond); gap {
		t.Fatal("a gap with a burst due in 500 ms, asking for 600 ms ahead")
	}
	if gap, _ := a.Gap(100*time.Millisecond, 400*time.Millisecond); !gap {
		t.Fatal("no gap with a burst due in 500 ms, asking for 400 ms ahead")
	}
	var none *Activity
	if gap, _ := none.Gap(time.Second, time.Second); !gap {
		t.Fatal("a nil Activity (which sees no burst) is not between bursts")
	}
}

// A burst larger than the peer's request slots keeps starting requests after its items woke: Busy and Gap
// count from the latest request written (sent), not from the items' wake-up, and a request that ends
// (left) starts nothing.
func TestActivityBusyWhileABurstsRequestsStart(t *testing.T) {
	const guard = 100 * time.Millisecond
	clk := clock.NewFake(time.Unix(1000, 0))
	a := NewActivity(clk)
	woke := clk.Now()
	onSlot, waiting := a.departure(), a.departure()
	onSlot.leave(woke, false, woke)
	waiting.leave(woke, false, woke)
	onSlot.sent()  // written at once
	waiting.sent() // its job's own bound is full: it waits, and no longer holds the burst back
	if returned, _ := quietWithin(a, make(chan struct{}), time.Hour); !returned() {
		t.Fatal("not quiet once every request was written or waits for its job's slot")
	}
	clk.Advance(150 * time.Millisecond)
	onSlot.left() // answered: no request starts
	if got := a.Busy(guard); got != 0 {
		t.Fatalf("busy for %s 150 ms after the last request started", got)
	}
	waiting.sent() // its job's slot freed: the waiting item's request is written now
	if got := a.Busy(guard); got != guard {
		t.Fatalf("busy for %s as a request is written, want %s", got, guard)
	}
	if gap, last := a.Gap(guard, 0); gap || !last.Equal(clk.Now()) {
		t.Fatalf("as a request is written: gap %t, last start %v, want false, %v", gap, last, clk.Now())
	}
	clk.Advance(guard)
	if gap, _ := a.Gap(guard, 0); !gap || a.Busy(guard) != 0 {
		t.Fatal("no gap a guard after the last request was written")
	}
	if a.leaving != 0 {
		t.Fatalf("leaving %d after the burst", a.leaving)
	}
	var none *departure
	none.sent() // an executor without an Activity
}
