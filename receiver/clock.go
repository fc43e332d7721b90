package receiver

import (
	"context"
	"time"
)

// clock is the source of time for callbacks: heartbeat ticks and retry back-off. Tests inject a fake one
// (the field Options.clock, Callback.clock); nil means the system clock.
type clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) timer
}

type timer interface {
	C() <-chan time.Time
	Stop() bool
}

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (s sysTimer) C() <-chan time.Time { return s.t.C }
func (s sysTimer) Stop() bool          { return s.t.Stop() }

func clockOr(c clock) clock {
	if c == nil {
		return systemClock{}
	}
	return c
}

// sleep waits d on c, or until ctx is done (returning its cause).
func sleep(ctx context.Context, c clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
