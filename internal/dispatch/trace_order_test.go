package dispatch

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// orderRecorder notes, at each end record's commit, whether its task's end trace was queued already.
type orderRecorder struct {
	recorder
	traceFirst []bool
}

func (r *orderRecorder) EnqueueCommittedThen(ctx context.Context, e ejserver.Execution, then func(error)) {
	then(r.EnqueueCommitted(ctx, e))
}

func (r *orderRecorder) EnqueueCommitted(ctx context.Context, e ejserver.Execution) error {
	r.mu.Lock()
	ended := false
	for _, t := range r.traces {
		ended = ended || (t.TaskID == e.TaskID && t.State != ejserver.TaskStaging && t.State != ejserver.TaskRunning)
	}
	r.traceFirst = append(r.traceFirst, ended)
	r.mu.Unlock()
	return r.recorder.EnqueueCommitted(ctx, e)
}

// A task's end trace is queued before its last item's end record is committed, so that the history writer
// writes it in that record's transaction (history.holdTraces keeps the task's other traces for it).
func TestExecutorQueuesTheTaskEndTraceBeforeTheEndRecordCommits(t *testing.T) {
	reg := newFakeRegistry(1)
	send := newFakeSender()
	rec := &orderRecorder{}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Recorder: rec, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	e.Drain(5 * time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.traceFirst) != 1 || !rec.traceFirst[0] {
		t.Fatalf("task's end trace queued before the end record's commit: %v, want [true]", rec.traceFirst)
	}
}
