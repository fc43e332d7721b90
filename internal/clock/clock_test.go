package clock

import (
	"testing"
	"time"
)

func TestFakeTimerFiresOnAdvance(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	tm := f.NewTimer(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Second)
	select {
	case at := <-tm.C():
		if !at.Equal(time.Unix(10, 0)) {
			t.Fatalf("fired at %v", at)
		}
	default:
		t.Fatal("did not fire")
	}
	if tm.Stop() {
		t.Fatal("Stop after firing reported an active timer")
	}
	tm.Reset(time.Second)
	f.Advance(time.Second)
	select {
	case <-tm.C():
	default:
		t.Fatal("reset timer did not fire")
	}
}

func TestSleepReturnsEarlyWhenDone(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	done := make(chan struct{})
	close(done)
	if Sleep(f, time.Hour, done) {
		t.Fatal("Sleep reported a full sleep")
	}
	if !Sleep(f, 0, nil) {
		t.Fatal("zero sleep not immediate")
	}
}

func TestTimerCreatedSignals(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ch := f.TimerCreated()
	go f.NewTimer(time.Second)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no signal")
	}
}

// SleepArmed calls armed once its timer is set: a Fake clock moved past the wake-up from there wakes it.
func TestSleepArmedCallsBackOnceTheTimerIsSet(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	done := make(chan bool, 1)
	go func() { done <- SleepArmed(f, time.Second, nil, func() { f.Advance(time.Second) }) }()
	select {
	case slept := <-done:
		if !slept {
			t.Fatal("SleepArmed reported an early return")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a clock moved past the wake-up from armed did not wake the sleep")
	}
	called := false
	if !SleepArmed(f, 0, nil, func() { called = true }) || called {
		t.Fatal("a sleep of 0 armed a timer")
	}
}
