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
	a.started(clk.Now())
	busy(guard)
	clk.Advance(60 * time.Millisecond)
	busy(40 * time.Millisecond)
	clk.Advance(40 * time.Millisecond)
	busy(0)

	var none *Activity // an executor without one reports to nil
	none.waiting(due, 1)
	none.started(clk.Now())
	if none.Busy(guard) != 0 {
		t.Fatal("a nil Activity is busy")
	}
}
