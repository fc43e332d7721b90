package dispatch

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// waitObserver records the executor's session waits and skips.
type waitObserver struct {
	nopObserver
	mu      sync.Mutex
	waits   []time.Duration
	fired   []bool
	skipped []string
}

func (o *waitObserver) SessionWaited(_ string, waited time.Duration, fired bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waits, o.fired = append(o.waits, waited), append(o.fired, fired)
}

func (o *waitObserver) Skipped(_ string, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.skipped = append(o.skipped, reason)
}

func (o *waitObserver) seen() ([]time.Duration, []bool, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Duration(nil), o.waits...), append([]bool(nil), o.fired...), append([]string(nil), o.skipped...)
}

// graceExecutor is newLeadExecutor with a 4 s session grace and an observer; next is the job's next fire.
func graceExecutor(reg *fakeRegistry, send *fakeSender, next time.Time) (*Executor, *clock.Fake, *waitObserver) {
	clk := clock.NewFake(time.Unix(1000, 0))
	obs := &waitObserver{}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Clock: clk, Activity: NewActivity(clk), Observer: obs,
		SessionGrace: 4 * time.Second, NextFire: func(string) time.Time { return next },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return e, clk, obs
}

func (f *fakeRegistry) runningCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.running)
}

// A fire handed off while the session is suspended (the connection dropped, the session lives) waits for it
// and goes out when it resumes: the reconnect costs lateness, not the fire (issue 20's soak lost such fires).
func TestExecutorFireHandedOffDuringASuspensionWaitsForTheSession(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	e, clk, obs := graceExecutor(reg, send, time.Unix(1011, 0))
	defer e.Drain(time.Second)
	reg.suspend(true)
	created := clk.TimerCreated()
	// handed off a second ahead, into the suspension; then waiting for the session, up to its deadline
	e.Fire(Due{Job: "j", At: time.Unix(1001, 0), Next: time.Unix(1011, 0)})
	<-created
	send.none(t)
	clk.Advance(40 * time.Millisecond)
	reg.suspend(false)                                         // same session: resumed
	waitFor(t, func() bool { return reg.runningCount() == 2 }) // prepared: fenced, waiting for the scheduled time
	send.none(t)
	clk.Advance(time.Second)
	for range 2 {
		if p := send.next(t); !p.ScheduledAt.Equal(time.Unix(1001, 0)) || p.Source != string(ejserver.SourceNormal) {
			t.Fatalf("payload %+v", p)
		}
	}
	waits, fired, skipped := obs.seen()
	if len(waits) != 1 || !fired[0] || waits[0] != 40*time.Millisecond || len(skipped) != 0 {
		t.Fatalf("waits %v fired %v skipped %v, want one wait of 40ms that fired", waits, fired, skipped)
	}
}

// A prepared item whose session is suspended at its scheduled time is sent late, when the session resumes,
// under the running node it was fenced with.
func TestExecutorPreparedItemWaitsForASuspendedSessionAtItsTime(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	e, clk, obs := graceExecutor(reg, send, time.Unix(1002, 0))
	defer e.Drain(time.Second)
	created := clk.TimerCreated()
	e.Fire(Due{Job: "j", At: time.Unix(1001, 0), Next: time.Unix(1002, 0)})
	<-created // prepared, waiting for its time
	reg.suspend(true)
	created = clk.TimerCreated()
	clk.Advance(time.Second) // its time: the session is in doubt
	<-created                // waiting for the session
	send.none(t)
	clk.Advance(60 * time.Millisecond)
	reg.suspend(false)
	if p := send.next(t); !p.ScheduledAt.Equal(time.Unix(1001, 0)) {
		t.Fatalf("payload %+v", p)
	}
	waitFor(t, func() bool { return reg.endedCount() == 1 })
	if waits, fired, _ := obs.seen(); len(waits) != 1 || !fired[0] || waits[0] != 60*time.Millisecond {
		t.Fatalf("waits %v fired %v", waits, fired)
	}
}

// A session that expires while a fire waits for it costs the fire: its ephemeral nodes went, other peers may
// take the items. Whether it expires before the fire is prepared or after, and even once a new session is up.
func TestExecutorSkipsAFireWhoseSessionExpiredWhileItWaited(t *testing.T) {
	t.Run("at the hand-off", func(t *testing.T) {
		reg, send := newFakeRegistry(1), newFakeSender()
		e, clk, obs := graceExecutor(reg, send, time.Unix(1011, 0))
		defer e.Drain(time.Second)
		reg.suspend(true)
		created := clk.TimerCreated()
		e.Fire(Due{Job: "j", At: time.Unix(1001, 0), Next: time.Unix(1011, 0)})
		<-created
		reg.expire()
		reg.renew() // a new session: the fire began under the old one
		waitFor(t, func() bool { _, _, s := obs.seen(); return len(s) == 1 })
		_, fired, skipped := obs.seen()
		if len(fired) != 1 || fired[0] || skipped[0] != "ZooKeeper session in doubt: the session expired" {
			t.Fatalf("fired %v skipped %v", fired, skipped)
		}
		clk.Advance(time.Second)
		send.none(t)
		if n := reg.runningCount(); n != 0 {
			t.Fatalf("%d items fenced", n)
		}
	})
	t.Run("at the scheduled time", func(t *testing.T) {
		reg, send := newFakeRegistry(1), newFakeSender()
		e, clk, obs := graceExecutor(reg, send, time.Unix(1011, 0))
		defer e.Drain(time.Second)
		created := clk.TimerCreated()
		e.Fire(Due{Job: "j", At: time.Unix(1001, 0), Next: time.Unix(1011, 0)})
		<-created
		reg.suspend(true)
		created = clk.TimerCreated()
		clk.Advance(time.Second)
		<-created
		reg.expire()
		reg.renew()
		send.none(t)
		waitFor(t, func() bool { return reg.runningCount() == 0 }) // the unsent item's running node went
		if _, fired, _ := obs.seen(); len(fired) != 1 || fired[0] {
			t.Fatalf("fired %v", fired)
		}
	})
}

// The wait is bounded: at the scheduled time plus the grace, or at the job's next fire if that comes first,
// a fire whose session is still in doubt is skipped.
func TestExecutorWaitsForASuspendedSessionOnlyUntilTheDeadline(t *testing.T) {
	for name, tc := range map[string]struct {
		next time.Time
		wait time.Duration // from the hand-off at 1000
	}{
		"the grace":           {time.Unix(1060, 0), 5 * time.Second}, // 1001 + 4 s
		"the job's next fire": {time.Unix(1002, 0), 2 * time.Second}, // 1002
	} {
		t.Run(name, func(t *testing.T) {
			reg, send := newFakeRegistry(1), newFakeSender()
			e, clk, obs := graceExecutor(reg, send, tc.next)
			defer e.Drain(time.Second)
			reg.suspend(true)
			created := clk.TimerCreated()
			e.Fire(Due{Job: "j", At: time.Unix(1001, 0), Next: tc.next})
			<-created
			clk.Advance(tc.wait - time.Millisecond)
			send.none(t)
			if _, _, s := obs.seen(); len(s) != 0 {
				t.Fatalf("skipped before the deadline: %v", s)
			}
			clk.Advance(time.Millisecond)
			waitFor(t, func() bool { _, _, s := obs.seen(); return len(s) == 1 })
			waits, fired, skipped := obs.seen()
			if len(waits) != 1 || fired[0] || waits[0] != tc.wait || skipped[0] != "ZooKeeper session in doubt: still suspended at the fire's deadline" {
				t.Fatalf("waits %v fired %v skipped %v", waits, fired, skipped)
			}
			reg.suspend(false)
			send.none(t)
		})
	}
}
