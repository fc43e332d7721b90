package dispatch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/webhook"
)

// jobContexts is how many jobs hold a context.
func (e *Executor) jobContexts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.jobCtx)
}

// TestExecutorHoldsAJobContextOnlyWhileItsItemsRun: a job's context lives while one of its items is in
// flight, and goes with the last (a context kept for every job that ever fired cost ~0.25 KB a job); one
// on its way when CancelJob comes is halted (no retry follows) but not aborted: it records its answer.
func TestExecutorHoldsAJobContextOnlyWhileItsItemsRun(t *testing.T) {
	reg, send := newFakeRegistry(3), newFakeSender()
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	for range 3 {
		send.next(t)
	}
	if n := e.jobContexts(); n != 1 {
		t.Fatalf("%d job contexts while item 0 is in flight, want 1", n)
	}
	close(release)
	waitFor(t, func() bool { return e.jobContexts() == 0 })

	// a second fire's held item is halted by CancelJob (the job was disabled), and the job's context goes
	release = send.holdItem(1)
	e.Fire(Due{Job: "j", At: time.Unix(110, 0)})
	for range 3 {
		send.next(t)
	}
	e.CancelJob("j")
	if n := e.jobContexts(); n != 0 {
		t.Fatalf("%d job contexts after CancelJob, want 0", n)
	}
	send.mu.Lock()
	var halt context.Context
	for i, p := range send.got {
		if p.ShardingItem == 1 && p.ScheduledAt.Equal(time.Unix(110, 0)) {
			halt = send.halts[i]
		}
	}
	send.mu.Unlock()
	if halt == nil || !errors.Is(context.Cause(halt), errJobHalted) {
		t.Fatalf("the held item's Halt = %v, want done with %v", halt, errJobHalted)
	}
	// items 0 and 2 end on their own; item 1 stays on its way until its receiver answers
	waitFor(t, func() bool { r := e.Running("j"); return len(r) == 1 && r[0] == 1 })
	close(release)
	waitFor(t, func() bool { return len(e.Running("j")) == 0 })
}

// TestDisablingAJobMidRequestRecordsTheReceiversAnswer: with the real sender, a job disabled while its
// item's request is at the receiver records the receiver's 200, not "cancelled" (the nemesis soak's seed
// 20: its end-of-run disable landed 6 ms after the receiver answered, and the item was recorded failed).
func TestDisablingAJobMidRequestRecordsTheReceiversAnswer(t *testing.T) {
	var e *Executor
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.CancelJob("j")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	s := webhook.New(webhook.Config{})
	defer s.Close()
	reg, rec := newFakeRegistry(1), &recorder{}
	reg.snap.Config.Webhook.URL = srv.URL
	e = NewExecutor(ExecutorConfig{Registry: reg, Sender: s, Recorder: rec, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Drain(5 * time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	var end *ejserver.Execution
	waitFor(t, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for i := range rec.execs {
			if !rec.execs[i].CompletedAt.IsZero() {
				end = &rec.execs[i]
			}
		}
		return end != nil
	})
	if !end.Success || end.StatusCode != 200 || end.FailureCause != "" {
		t.Fatalf("end record %+v, want the receiver's 200", end)
	}
}
