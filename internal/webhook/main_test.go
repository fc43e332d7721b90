package webhook

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock is a Clock that moves only when told. Every back-off sleep (NewTimer) is announced on sleeps so
// a test can see how long the sender wants to wait and then advance exactly that far.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	sleeps chan time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), sleeps: make(chan time.Duration, 100)}
}

type fakeTimer struct {
	clock   *fakeClock
	at      time.Time
	ch      chan time.Time
	f       func()
	pending bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	t := c.add(d, nil)
	c.sleeps <- d
	return t
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer { return c.add(d, f) }

func (c *fakeClock) add(d time.Duration, f func()) *fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1), f: f, pending: true}
	if d <= 0 {
		t.pending = false
		c.fire(t)
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// fire runs or signals t; c.mu is held.
func (c *fakeClock) fire(t *fakeTimer) {
	if t.f != nil {
		go t.f()
	} else {
		t.ch <- c.now
	}
}

// Advance moves time forward by d and fires every timer due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.pending {
			continue
		}
		if !t.at.After(c.now) {
			t.pending = false
			c.fire(t)
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
}

func (t *fakeTimer) C() <-chan time.Time {
	if t.f != nil {
		return nil
	}
	return t.ch
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.pending
	t.pending = false
	return was
}

// deliverAdvancing runs Deliver, advancing the fake clock through every back-off sleep; it returns the
// result and the sleeps in order.
func deliverAdvancing(t *testing.T, s *Sender, clk *fakeClock, ctx context.Context, d Delivery) (Result, []time.Duration) {
	t.Helper()
	done := make(chan Result, 1)
	go func() { done <- s.Deliver(ctx, d) }()
	guard, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var sleeps []time.Duration
	for {
		select {
		case r := <-done:
			return r, sleeps
		case w := <-clk.sleeps:
			sleeps = append(sleeps, w)
			clk.Advance(w)
		case <-guard.Done():
			t.Fatal("Deliver did not return within 20s")
		}
	}
}

// waitFor polls cond until it holds, failing the test after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	guard, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		if guard.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-SystemClock().NewTimer(time.Millisecond).C()
	}
}
