package dispatch

import (
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// Activity tracks when this peer sends webhooks, so that work that competes for the CPU keeps out of a
// burst's way: requests of a fire leave together, and on a small machine every millisecond of CPU taken
// from them shows as lateness. The history writer asks Busy before each batch; the executor records an
// item's outcome only once the burst it belongs to has left (awaitQuiet). The executor reports to it; a nil
// *Activity ignores reports, is never busy and never makes anyone wait.
type Activity struct {
	clk clock.Clock

	mu        sync.Mutex
	lastStart time.Time
	due       map[time.Time]int // scheduled time -> prepared items waiting for it
	leaving   int               // items at their time whose request has not left yet
	quiet     chan struct{}     // closed when the burst has left; nil while nobody waits for that
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
	a.countDueLocked(at, delta)
}

func (a *Activity) countDueLocked(at time.Time, delta int) {
	if n := a.due[at] + delta; n > 0 {
		a.due[at] = n
	} else {
		delete(a.due, at)
		a.signalQuietLocked()
	}
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

// Gap reports whether the peer is between bursts: no request started within the last since, and no
// prepared item is due within the next ahead. It also returns when the latest request started, so that a
// caller doing one thing per gap can tell one gap from the next.
func (a *Activity) Gap(since, ahead time.Duration) (gap bool, lastStart time.Time) {
	if a == nil {
		return true, time.Time{}
	}
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.lastStart) < since {
		return false, a.lastStart
	}
	for at := range a.due {
		if at.Sub(now) < ahead {
			return false, a.lastStart
		}
	}
	return true, a.lastStart
}

// departure is one item's request on its way out: leaving when the item's time has come, left once the
// request is written (or waits for a slot of its job's own bound, or is not sent at all). A nil *departure
// ignores both.
type departure struct {
	a       *Activity
	counted bool // guarded by a.mu: counted in a.leaving, and not yet left
}

// departure returns an item's departure, not yet leaving.
func (a *Activity) departure() *departure {
	if a == nil {
		return nil
	}
	return &departure{a: a}
}

// leave counts the item as leaving now, at its scheduled time at (waited: it was counted as waiting for
// at, and no longer is); its request is the latest to have started.
func (d *departure) leave(at time.Time, waited bool, now time.Time) {
	if d == nil {
		return
	}
	a := d.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if waited {
		a.countDueLocked(at, -1)
	}
	if !d.counted {
		d.counted = true
		a.leaving++
	}
	a.startedLocked(now)
}

// startedLocked records that a request started at now, unless a later one already did.
func (a *Activity) startedLocked(now time.Time) {
	if now.After(a.lastStart) {
		a.lastStart = now
	}
}

// left marks the item's request as gone; only the first call after leave counts. Safe from any goroutine.
func (d *departure) left() {
	if d == nil {
		return
	}
	a := d.a
	a.mu.Lock()
	defer a.mu.Unlock()
	d.leftLocked()
}

func (d *departure) leftLocked() {
	if !d.counted {
		return
	}
	d.counted = false
	d.a.leaving--
	d.a.signalQuietLocked()
}

// sent is the Sender's word on the item's request (webhook.Delivery.Sent): it was written to its connection,
// or it waits for a slot of its job's own bound. Either way the burst no longer holds it back (left), and the
// request is the latest to have started (one that begins to wait does so as its item wakes). A burst larger
// than the peer's request slots keeps starting requests for as long as its last items wait for those slots
// (667 items on 256 slots: ~250 ms on the 2-core machine of docs/benchmarks.md), and its items stay leaving
// until then; counted from the items' wake-up, Busy and Gap saw the burst end ~100 ms after it began, and the
// history writer's transaction and the Collector's collection ran in the middle of it. Safe from any
// goroutine.
func (d *departure) sent() {
	if d == nil {
		return
	}
	a := d.a
	now := a.clk.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	d.leftLocked()
	a.startedLocked(now)
}

// signalQuietLocked wakes those waiting for quiet if it is quiet now.
func (a *Activity) signalQuietLocked() {
	if a.quiet != nil && a.quietLocked(a.clk.Now()) {
		close(a.quiet)
		a.quiet = nil
	}
}

// quietLocked reports whether no request is on its way out: none leaving, and no prepared item whose time
// has come still waiting to wake.
func (a *Activity) quietLocked(now time.Time) bool {
	if a.leaving > 0 {
		return false
	}
	for at := range a.due {
		if !at.After(now) {
			return false
		}
	}
	return true
}

// awaitQuiet waits until the requests on their way out have left, for bound at most, or until stop closes.
func (a *Activity) awaitQuiet(stop <-chan struct{}, bound time.Duration) {
	if a == nil {
		return
	}
	var timeout <-chan time.Time
	for {
		a.mu.Lock()
		if a.quietLocked(a.clk.Now()) {
			a.mu.Unlock()
			return
		}
		if a.quiet == nil {
			a.quiet = make(chan struct{})
		}
		quiet := a.quiet
		a.mu.Unlock()
		if timeout == nil {
			t := a.clk.NewTimer(bound)
			defer t.Stop()
			timeout = t.C()
		}
		select {
		case <-quiet:
		case <-timeout:
			return
		case <-stop:
			return
		}
	}
}
