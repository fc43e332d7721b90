package webhook

import "time"

// Clock is the sender's source of time: request timestamps, the deadline check, back-off sleeps and the
// per-attempt connect and response timers. Tests inject a fake one; production uses SystemClock.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer whose C fires once after d (a back-off sleep).
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d (a per-attempt timeout); its C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a stoppable one-shot timer made by a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// SystemClock returns the wall clock: the one place in this package that reads real time.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return sysTimer{t: time.NewTimer(d)} }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer {
	return sysTimer{t: time.AfterFunc(d, f)}
}

type sysTimer struct{ t *time.Timer }

func (s sysTimer) C() <-chan time.Time { return s.t.C }
func (s sysTimer) Stop() bool          { return s.t.Stop() }
