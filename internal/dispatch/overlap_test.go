package dispatch

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/schedule"
)

func TestExecutorAllowRunsBesideTheRunningItem(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.snap.Config.OverlapPolicy, reg.snap.Config.Misfire = string(schedule.Allow), false
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	first := send.next(t)
	e.Fire(Due{Job: "j", At: time.Unix(101, 0)})
	beside := send.next(t) // arrives while the first is held
	if beside.ExecutionID == first.ExecutionID || beside.Source != string(ejserver.SourceNormal) || !beside.ScheduledAt.Equal(time.Unix(101, 0)) {
		t.Fatalf("the run beside: %+v", beside)
	}
	reg.mu.Lock()
	begun := len(reg.running)
	reg.mu.Unlock()
	if begun != 1 {
		t.Fatalf("%d running nodes: the run beside must not take the fenced run's node", begun)
	}
	send.mu.Lock()
	delete(send.hold, 0)
	send.mu.Unlock()
	close(release)
	send.none(t) // no catch-up
	waitFor(t, func() bool { return len(e.Running("j")) == 0 })
}

func TestExecutorCancelPreviousEndsTheRunningItem(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.snap.Config.OverlapPolicy, reg.snap.Config.Misfire = string(schedule.CancelPrevious), false
	send.holdItem(0) // never released: only the cancel ends it
	rec := &recorder{}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Recorder: rec, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	first := send.next(t)
	send.mu.Lock()
	delete(send.hold, 0) // the replacing run answers at once
	send.mu.Unlock()
	e.Fire(Due{Job: "j", At: time.Unix(101, 0)})
	next := send.next(t)
	if next.ExecutionID == first.ExecutionID || next.Source != string(ejserver.SourceNormal) || !next.ScheduledAt.Equal(time.Unix(101, 0)) {
		t.Fatalf("the replacing run: %+v", next)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, x := range rec.execs {
		if x.ID == first.ExecutionID && x.Done() {
			if x.Success || x.State != CancelledState || x.FailureCause != cancelCause {
				t.Fatalf("the cancelled run is recorded as %+v", x)
			}
			return
		}
	}
	t.Fatal("the cancelled run's end is not recorded")
}

func TestExecutorJitterDelaysAndTellsTheReceiver(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.snap.Config.JitterMs = 400
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	at := time.Now().Truncate(time.Second).Add(time.Second)
	e.Fire(Due{Job: "j", At: at})
	p := send.next(t)
	want := schedule.Jitter("j", at, 400)
	if time.Duration(p.JitterMs)*time.Millisecond != want || !p.DueAt.Equal(at.Add(want)) || !p.ScheduledAt.Equal(at) {
		t.Fatalf("payload %+v, want jitter %v", p, want)
	}
	if now := time.Now(); now.Before(at.Add(want)) {
		t.Fatalf("sent %v before its due time", at.Add(want).Sub(now))
	}
}

// A fire whose offset happens to be 0 is still a jittered fire: its body says dueAt (= scheduledAt).
func TestExecutorJitterOfZeroStillSaysDueAt(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.snap.Config.JitterMs = 1 // offsets of 0 or 1 ms: a second with 0 is a few seconds back
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	at := time.Now().Truncate(time.Second)
	for schedule.Jitter("j", at, 1) != 0 {
		at = at.Add(-time.Second)
	}
	e.Fire(Due{Job: "j", At: at})
	if p := send.next(t); p.JitterMs != 0 || !p.DueAt.Equal(at) || !p.ScheduledAt.Equal(at) {
		t.Fatalf("payload %+v, want dueAt %v", p, at)
	}
}
