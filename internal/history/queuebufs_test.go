package history

import (
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// The queue's arrays serve again after each take (queueBufs): over many takes, with records held back
// (StartHold), replaced, and queued while a batch is out, every end record and every trace is taken exactly
// once and intact, and a start record is taken only when its end was not queued with it.
func TestTheQueuesReusedArraysLoseNoRecord(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		clk := clock.NewFake(t0)
		w := NewWriter(nil, WriterConfig{Clock: clk, StartHold: time.Second, Logger: slog.New(slog.DiscardHandler), QueueSize: 1 << 20})
		ends := map[string]ejserver.Execution{}
		traces := map[string]int{}
		gotEnds := map[string]int{}
		gotTraces := map[string]int{}
		take := func() {
			if !w.take() {
				return
			}
			for _, e := range w.pendExecs {
				if e.Done() {
					if want := ends[e.ID]; e != want {
						t.Fatalf("seed %d: end record %s taken as %+v, queued as %+v", seed, e.ID, e, want)
					}
					gotEnds[e.ID]++
				}
			}
			for _, tr := range w.pendTraces {
				gotTraces[tr.ID]++
			}
			w.mu.Lock()
			w.inflight = 0
			w.mu.Unlock()
			w.pendExecs, w.pendWaits, w.pendTraces = w.pendExecs[len(w.pendExecs):], w.pendWaits[len(w.pendWaits):], w.pendTraces[len(w.pendTraces):]
		}
		var open []ejserver.Execution
		for i := range 3000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(open) == 0:
				e := newExec("j", i%7, t0.Add(time.Duration(i)*time.Millisecond))
				e.ShardingItem = i
				w.Enqueue(running(e))
				tr := ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: "j", TaskID: e.ID, State: ejserver.TaskRunning, CreationTime: t0}
				w.EnqueueTrace(tr)
				traces[tr.ID]++
				open = append(open, e)
			case r < 8:
				k := rng.IntN(len(open))
				e := open[k]
				open = append(open[:k], open[k+1:]...)
				ends[e.ID] = e
				w.Enqueue(e)
				tr := ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: "j", TaskID: e.ID, State: ejserver.TaskFinished, CreationTime: t0}
				w.EnqueueTrace(tr)
				traces[tr.ID]++
			default:
				clk.Advance(time.Duration(rng.IntN(400)) * time.Millisecond)
				take()
			}
		}
		w.mu.Lock()
		w.draining = true
		w.mu.Unlock()
		take()
		for id := range ends {
			if gotEnds[id] != 1 {
				t.Fatalf("seed %d: end record %s taken %d times", seed, id, gotEnds[id])
			}
		}
		for id := range traces {
			if gotTraces[id] != 1 {
				t.Fatalf("seed %d: trace %s taken %d times", seed, id, gotTraces[id])
			}
		}
		if len(gotEnds) != len(ends) || len(gotTraces) != len(traces) {
			t.Fatalf("seed %d: records taken that were never queued", seed)
		}
	}
}
