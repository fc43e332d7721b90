package dispatch

import (
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// Activity tracks when this peer sends webhooks, so that background work that competes for the CPU (the
// history writer) can keep out of a burst's way: requests of a fire leave together, and on a small machine
// every millisecond of CPU taken from them shows as lateness. The executor reports to it; a nil *Activity
// ignores reports and is never busy.
type Activity struct {
	clk clock.Clock

	mu        sync.Mutex
	lastStart time.Time
	due       map[time.Time]int // scheduled time -> prepared items waiting for it
}

// NewActivity returns an Activity that reads clk.
func NewActivity(clk clock.Clock) *Activity {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Activity{clk: clk, due: map[time.Time]int{}}
}

// waiting counts a prepared item waiting for its scheduled time at (+1), or no longer waiting (-1).
func (a *Activity) waiting(at time.Time, delta int) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := a.due[at] + delta; n > 0 {
		a.due[at] = n
	} else {
		delete(a.due, at)
	}
}

// started records that an item's request is leaving now (the executor's clock reading, taken anyway).
func (a *Activity) started(now time.Time) {
	if a == nil {
		return
	}
	a.mu.Lock()
	if now.After(a.lastStart) {
		a.lastStart = now
	}
	a.mu.Unlock()
}

// Busy returns how long from now the peer is expected to stay busy sending, 0 when it is quiet: a request
// left within the last guard, or prepared items are due within the next guard (then until guard after
// they are due). The map holds one entry per distinct scheduled time waited for: a handful, as a fire's
// items share theirs.
func (a *Activity) Busy(guard time.Duration) time.Duration {
	if a == nil {
		return 0
	}
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var busy time.Duration
	if since := now.Sub(a.lastStart); since < guard {
		busy = guard - since
	}
	for at := range a.due {
		if until := at.Sub(now); until < guard {
			busy = max(busy, until+guard)
		}
	}
	return busy
}
