// Package clock is the one place in internal/ that reads the wall clock. Services take a Clock in their
// constructor so tests can drive time with Fake instead of sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
	// Since is Now().Sub(t).
	Since(t time.Time) time.Duration
}

// Timer is the part of *time.Timer services use.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped it.
	Stop() bool
	// Reset changes the timer to fire after d.
	Reset(d time.Duration)
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (Real) Since(t time.Time) time.Duration { return time.Since(t) }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }

// Sleep waits for d on c, or returns false early when done closes.
func Sleep(c Clock, d time.Duration, done <-chan struct{}) bool { return SleepArmed(c, d, done, nil) }

// SleepArmed is Sleep that calls armed, if set, once its timer is set (not at all when d <= 0): a caller that
// reports itself asleep does it there, so that whoever acts on the report, a test moving a Fake clock past the
// wake-up say, finds the timer already set rather than one made after the move, a whole d too late.
func SleepArmed(c Clock, d time.Duration, done <-chan struct{}, armed func()) bool {
	if d <= 0 {
		return true
	}
	t := c.NewTimer(d)
	defer t.Stop()
	if armed != nil {
		armed()
	}
	select {
	case <-t.C():
		return true
	case <-done:
		return false
	}
}

// Fake is a manually advanced clock for tests. Timers fire when Advance moves time past their deadline.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// waiters are signalled whenever a timer is created, so a test can wait until code under test sleeps.
	waiters []chan struct{}
}

// NewFake returns a fake clock at t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns Now().Sub(t).
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer makes a timer that fires once Advance reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, c: make(chan time.Time, 1), at: f.now.Add(d), active: true}
	f.timers = append(f.timers, t)
	for _, w := range f.waiters {
		close(w)
	}
	f.waiters = nil
	f.fireLocked()
	return t
}

// TimerCreated returns a channel closed the next time a timer is created (or reset).
func (f *Fake) TimerCreated() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	f.waiters = append(f.waiters, ch)
	return ch
}

// Advance moves the clock forward by d and fires the timers that are due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.fireLocked()
}

func (f *Fake) fireLocked() {
	kept := f.timers[:0]
	for _, t := range f.timers {
		if t.active && !t.at.After(f.now) {
			t.active = false
			select {
			case t.c <- f.now:
			default:
			}
			continue
		}
		if t.active {
			kept = append(kept, t)
		}
	}
	f.timers = kept
}

type fakeTimer struct {
	f      *Fake
	c      chan time.Time
	at     time.Time
	active bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.at = t.f.now.Add(d)
	if !t.active {
		t.active = true
		t.f.timers = append(t.f.timers, t)
	}
	for _, w := range t.f.waiters {
		close(w)
	}
	t.f.waiters = nil
	t.f.fireLocked()
}
