package history

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// TestWriterShedsTracesWhileBehind: a writer whose backlog reaches ShedTracesAt (it cannot write: not started
// yet, as a saturated one falls behind) answers that a new task gets no status traces, counts each such task,
// and logs once; once it has written its backlog down below half of ShedTracesAt it takes them again and logs
// that. Its executions are all written. With NoStatusTraces it never counts a task as shed, and a negative
// ShedTracesAt never sheds.
func TestWriterShedsTracesWhileBehind(t *testing.T) {
	s := openStore(t, "sqlite")
	clk := clock.NewFake(t0)
	logs := newLogRecorder()
	w := NewWriter(s, WriterConfig{QueueSize: 100, ShedTracesAt: 40, BatchSize: 10, FlushInterval: time.Second,
		Clock: clk, Logger: slog.New(logs)})
	recs := execs(45, "behind")
	enqueueAll(w, recs[:39])
	if !w.StatusTraces() {
		t.Fatal("39 records held, shedding at 40: traces refused")
	}
	enqueueAll(w, recs[39:])
	for range 3 {
		if w.StatusTraces() {
			t.Fatal("45 records held, shedding at 40: traces taken")
		}
	}
	if st := w.Stats(); st.TracesShed != 3 || st.Dropped != 0 {
		t.Fatalf("stats %+v, want 3 tasks shed, nothing dropped", st)
	}
	if n := logs.count("history writer behind: new tasks get no status traces until it catches up"); n != 1 {
		t.Fatalf("%d logs of shedding, want 1", n)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	eventually(t, "the backlog to be written", func() bool { return w.Stats().Written == 45 },
		func() { clk.Advance(time.Second) })
	if !w.StatusTraces() {
		t.Fatal("backlog written: traces still refused")
	}
	if n := logs.count("history writer caught up: status traces resumed"); n != 1 {
		t.Fatalf("%d logs of resuming, want 1", n)
	}
	for _, r := range recs {
		mustGet(t, s, r.ID)
	}

	for _, cfg := range []WriterConfig{{NoStatusTraces: true}, {ShedTracesAt: -1}} {
		cfg.QueueSize, cfg.Clock, cfg.Logger = 100, clk, discardLogger()
		w := NewWriter(s, cfg) // never started: everything stays held
		enqueueAll(w, execs(90, "held"))
		if got, want := w.StatusTraces(), !cfg.NoStatusTraces; got != want || w.Stats().TracesShed != 0 {
			t.Errorf("%+v with 90 held: StatusTraces %v, %d shed; want %v, none", cfg, got, w.Stats().TracesShed, want)
		}
	}
}
