package history

import (
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// BenchmarkWriterQueue measures the Writer's queue alone, without a store: what an item's records cost to
// queue and to take in batches (allocations, B/op), as a peer of steady-10k queues them: each item's start
// record and its staging and running traces, its end record and finished trace lag items later, a take every
// 16 items (~48 ms at 333 items/s), with the peer's StartHold (1 s). ns/op and B/op are per item.
//
//	go test ./internal/history -run '^$' -bench BenchmarkWriterQueue -benchmem
func BenchmarkWriterQueue(b *testing.B) {
	const lag, every = 32, 16
	clk := clock.NewFake(t0)
	w := NewWriter(nil, WriterConfig{Clock: clk, StartHold: time.Second, Logger: slog.New(slog.DiscardHandler)})
	base := newExec("bench", 0, t0)
	trace := func(e ejserver.Execution, s ejserver.TaskState) ejserver.StatusTrace {
		return ejserver.StatusTrace{ID: e.ID, JobName: e.JobName, TaskID: e.TaskID, State: s, CreationTime: t0}
	}
	var ring [lag]ejserver.Execution
	drain := func() {
		w.take()
		w.mu.Lock()
		w.inflight = 0
		w.mu.Unlock()
		w.pendExecs, w.pendWaits, w.pendTraces = w.pendExecs[len(w.pendExecs):], w.pendWaits[len(w.pendWaits):], w.pendTraces[len(w.pendTraces):]
	}
	b.ReportAllocs()
	for i := range b.N {
		e := base
		e.ID = ejserver.NewExecutionID()
		e.TaskID = e.ID
		w.Enqueue(running(e))
		w.EnqueueTrace(trace(e, ejserver.TaskStaging))
		w.EnqueueTrace(trace(e, ejserver.TaskRunning))
		if i >= lag {
			w.Enqueue(ring[i%lag])
			w.EnqueueTrace(trace(ring[i%lag], ejserver.TaskFinished))
		}
		ring[i%lag] = e
		if i%every == every-1 {
			clk.Advance(48 * time.Millisecond)
			drain()
		}
	}
	if st := w.Stats(); st.Dropped != 0 {
		b.Fatalf("dropped %d", st.Dropped)
	}
}
