package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/testutil/pgtest"
)

// fakeSink is a Sink whose answers the test controls.
type fakeSink struct {
	mu      sync.Mutex
	execs   []ejserver.Execution
	traces  []ejserver.StatusTrace
	batches []int
	// traceBatches are the sizes of the WriteTraces calls: traces written without executions
	traceBatches []int
	// fail, when set, decides the error of each call.
	fail func(recs []ejserver.Execution) error
	// gate, when set, makes every call wait for a value or for the context.
	gate chan struct{}
}

func (f *fakeSink) WriteExecutions(ctx context.Context, recs []ejserver.Execution) error {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return ejserver.Unavailable(ctx.Err(), "gate")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(recs); err != nil {
			return err
		}
	}
	f.execs = append(f.execs, recs...)
	f.batches = append(f.batches, len(recs))
	return nil
}

func (f *fakeSink) WriteTraces(_ context.Context, recs []ejserver.StatusTrace) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.traces = append(f.traces, recs...)
	f.traceBatches = append(f.traceBatches, len(recs))
	return nil
}

func (f *fakeSink) written() ([]ejserver.Execution, []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.execs), slices.Clone(f.batches)
}

func startWriter(t *testing.T, sink Sink, cfg WriterConfig) *Writer {
	t.Helper()
	return startQueued(t, sink, cfg, nil, nil)
}

// startQueued starts a writer with recs and trs already queued, so that its first flush finds them all: a
// started writer woken by a full batch of executions can take them before the traces are queued.
func startQueued(t *testing.T, sink Sink, cfg WriterConfig, recs []ejserver.Execution, trs []ejserver.StatusTrace) *Writer {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	w := NewWriter(sink, cfg)
	enqueueAll(w, recs)
	for _, tr := range trs {
		w.EnqueueTrace(tr)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func execs(n int, job string) []ejserver.Execution {
	out := make([]ejserver.Execution, n)
	for i := range out {
		out[i] = newExec(job, i%4, t0.Add(time.Duration(i)*time.Millisecond))
	}
	return out
}

func enqueueAll(w *Writer, recs []ejserver.Execution) (accepted int) {
	for _, r := range recs {
		if w.Enqueue(r) {
			accepted++
		}
	}
	return accepted
}

// TestWriterBatches writes through the Writer into each store: a part batch waits for the flush interval, a
// full batch goes at once, no batch exceeds BatchSize, and a start and an end record of one execution that
// travel together leave the end record.
func TestWriterBatches(t *testing.T) {
	eachStore(t, func(t *testing.T, s Store) {
		clk := clock.NewFake(t0)
		counting := &countingSink{Sink: s}
		w := startWriter(t, counting, WriterConfig{BatchSize: 10, FlushInterval: time.Second, Clock: clk})

		first := execs(5, "batched")
		enqueueAll(w, first)
		eventually(t, "the part batch to be written after the flush interval",
			func() bool { return w.Stats().Written == 5 }, func() { clk.Advance(time.Second) })

		// 25 records: full batches are written without the clock moving.
		second := execs(25, "batched")
		second[3] = running(second[2])
		second[3], second[2] = second[2], second[3] // the start record, then its end record
		enqueueAll(w, second)
		eventually(t, "full batches to be written at once", func() bool { return w.Stats().Written == 30 })
		if !w.EnqueueTrace(ejserver.StatusTrace{ID: "tr-1", JobName: "batched", TaskID: "x", State: ejserver.TaskRunning, CreationTime: t0}) {
			t.Fatal("trace refused")
		}
		eventually(t, "the trace", func() bool { return w.Stats().Written == 31 }, func() { clk.Advance(time.Second) })

		if m := counting.max(); m > 10 {
			t.Errorf("a batch of %d records, BatchSize is 10", m)
		}
		got := mustGet(t, s, second[3].ID)
		if !got.Done() {
			t.Errorf("the start record won over the end record: %+v", got)
		}
		c, err := s.CountsSince(testCtx(t), []string{"batched"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if c["batched"].Success != 29 {
			t.Errorf("counts %+v, want 29 successes", c["batched"])
		}
		if st := w.Stats(); st.Backlog != 0 || st.Dropped != 0 || st.Failures != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestWriterWithoutStatusTraces writes executions and traces through a Writer with NoStatusTraces into each
// store: the executions are stored, no trace is (and none counts as dropped), and a trace written before the
// option was set stays readable.
func TestWriterWithoutStatusTraces(t *testing.T) {
	eachStore(t, func(t *testing.T, s Store) {
		ctx := testCtx(t)
		kept := ejserver.StatusTrace{ID: "tr-kept", JobName: "untraced", TaskID: "task-0", State: ejserver.TaskFinished, CreationTime: t0}
		if err := s.WriteTraces(ctx, []ejserver.StatusTrace{kept}); err != nil {
			t.Fatal(err)
		}
		clk := clock.NewFake(t0)
		w := startWriter(t, s, WriterConfig{BatchSize: 10, FlushInterval: time.Second, Clock: clk, NoStatusTraces: true})
		recs := execs(3, "untraced")
		enqueueAll(w, recs)
		for i, state := range []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskRunning, ejserver.TaskFinished} {
			tr := ejserver.StatusTrace{ID: fmt.Sprintf("tr-%d", i), JobName: "untraced", TaskID: "task-1", State: state,
				CreationTime: t0.Add(time.Duration(i+1) * time.Millisecond)}
			if !w.EnqueueTrace(tr) {
				t.Fatalf("trace %d refused", i)
			}
		}
		eventually(t, "the executions to be written", func() bool { return w.Stats().Written == 3 },
			func() { clk.Advance(time.Second) })
		for _, r := range recs {
			mustGet(t, s, r.ID)
		}
		got, err := s.ListTraces(ctx, TraceFilter{JobName: "untraced", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != kept.ID {
			t.Errorf("traces %+v, want only %s (written before)", got, kept.ID)
		}
		if st := w.Stats(); st.Written != 3 || st.Backlog != 0 || st.Dropped != 0 {
			t.Errorf("stats %+v, want 3 written, nothing queued or dropped", st)
		}
	})
}

type countingSink struct {
	Sink
	mu      sync.Mutex
	largest int
}

func (c *countingSink) WriteExecutions(ctx context.Context, recs []ejserver.Execution) error {
	c.mu.Lock()
	c.largest = max(c.largest, len(recs))
	c.mu.Unlock()
	return c.Sink.WriteExecutions(ctx, recs)
}

func (c *countingSink) max() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.largest
}

// TestWriterQueueFull blocks the sink: Enqueue keeps returning (it would hang the test if it blocked), accepts
// exactly QueueSize records, counts the rest as dropped, and logs the drops once per DropLogInterval.
func TestWriterQueueFull(t *testing.T) {
	clk := clock.NewFake(t0)
	sink := &fakeSink{gate: make(chan struct{})}
	rec := newLogRecorder()
	w := startWriter(t, sink, WriterConfig{QueueSize: 100, BatchSize: 10, Clock: clk, Logger: slog.New(rec),
		DropLogInterval: time.Minute})

	recs := execs(310, "full")
	if got := enqueueAll(w, recs); got != 100 {
		t.Fatalf("accepted %d records, want the queue size 100", got)
	}
	if st := w.Stats(); st.Dropped != 210 || st.Backlog != 100 || st.Written != 0 {
		t.Fatalf("stats %+v, want 210 dropped, 100 held", st)
	}
	close(sink.gate) // the store answers again
	eventually(t, "the queue to drain", func() bool { return w.Stats().Written == 100 }, func() { clk.Advance(time.Second) })
	eventually(t, "the drops to be logged", func() bool { return rec.count("history records dropped") == 1 })

	w.Stop()

	// A store that is down: drops within DropLogInterval of the last log are counted, and logged together
	// once the interval has passed.
	down := &fakeSink{fail: func([]ejserver.Execution) error {
		return ejserver.Unavailable(errors.New("connection refused"), "down")
	}}
	started := clk.TimerCreated()
	w2 := startWriter(t, down, WriterConfig{QueueSize: 1, Clock: clk, Logger: slog.New(rec), DropLogInterval: time.Minute,
		RetryMin: time.Second, RetryMax: time.Second})
	// step advances the clock and returns once the goroutine has been round its loop (it made a new timer).
	step := func(d time.Duration) {
		looped := clk.TimerCreated()
		clk.Advance(d)
		<-looped
	}
	drop := func(n int) {
		for range n {
			w2.Enqueue(recs[1])
		}
	}
	<-started // the goroutine waits for its first flush
	w2.Enqueue(recs[0])
	drop(50)
	step(time.Second)
	if n := rec.count("history records dropped"); n != 2 {
		t.Fatalf("%d drop logs, want 2", n)
	}
	drop(50)
	step(30 * time.Second)
	if n := rec.count("history records dropped"); n != 2 {
		t.Fatalf("%d drop logs within the interval, want still 2", n)
	}
	step(31 * time.Second)
	if n := rec.count("history records dropped"); n != 3 {
		t.Fatalf("%d drop logs after the interval, want 3", n)
	}
	if st := w2.Stats(); st.Dropped != 100 {
		t.Errorf("stats %+v, want 100 dropped", st)
	}
	if h := w.Health(); h.State != HealthOK {
		t.Errorf("health %+v: a slow store is not a failed one", h)
	}
}

// TestWriterRetriesWhileUnavailable keeps failing writes with EUNAVAILABLE: the Writer keeps the records,
// is degraded with the last error, backs off (no retry until the clock moves), and writes everything in order
// once the store answers.
func TestWriterRetriesWhileUnavailable(t *testing.T) {
	clk := clock.NewFake(t0)
	down := true
	var mu sync.Mutex
	sink := &fakeSink{fail: func([]ejserver.Execution) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return ejserver.Unavailable(errors.New("connection refused"), "history store: write executions")
		}
		return nil
	}}
	w := startWriter(t, sink, WriterConfig{BatchSize: 4, FlushInterval: time.Second, RetryMin: time.Second,
		RetryMax: 4 * time.Second, Clock: clk})

	recs := execs(10, "retry")
	recs[5] = running(recs[6]) // a start record, then (recs[6]) its end record
	enqueueAll(w, recs)
	eventually(t, "degraded health", func() bool { return w.Health().State == HealthDegraded })
	h := w.Health()
	if h.LastError == "" || !h.Since.Equal(clk.Now()) {
		t.Errorf("health %+v", h)
	}
	failures := w.Stats().Failures
	if st := w.Stats(); st.Backlog != 10 || st.Dropped != 0 {
		t.Errorf("stats %+v, want all 10 held", st)
	}
	// The back-off grows: after a few failures, a retry needs several seconds.
	// (the clock moves while waiting: the writer may arm its back-off timer only after the test looked)
	for range 4 {
		eventually(t, "a retry", func() bool { return w.Stats().Failures > failures }, func() { clk.Advance(4 * time.Second) })
		failures = w.Stats().Failures
	}

	mu.Lock()
	down = false
	mu.Unlock()
	eventually(t, "recovery", func() bool { return w.Stats().Written == 10 }, func() { clk.Advance(4 * time.Second) })
	if h := w.Health(); h.State != HealthOK {
		t.Errorf("health %+v after recovery", h)
	}
	got, _ := sink.written()
	if !slices.Equal(ids(got), ids(recs)) {
		t.Errorf("written out of order:\n got %v\nwant %v", ids(got), ids(recs))
	}
}

// TestWriterDropsRejectedRecords makes the store reject one record for good: the batch is retried record by
// record, the bad one is dropped and counted, the others are written, and the Writer stays healthy.
func TestWriterDropsRejectedRecords(t *testing.T) {
	clk := clock.NewFake(t0)
	recs := execs(8, "reject")
	bad := recs[3].ID
	sink := &fakeSink{fail: func(batch []ejserver.Execution) error {
		if slices.ContainsFunc(batch, func(e ejserver.Execution) bool { return e.ID == bad }) {
			return fmt.Errorf("history store: write executions: value too long")
		}
		return nil
	}}
	w := startWriter(t, sink, WriterConfig{BatchSize: 8, Clock: clk})
	enqueueAll(w, recs)
	eventually(t, "the good records", func() bool { return w.Stats().Written == 7 })
	if st := w.Stats(); st.Dropped != 1 || st.Backlog != 0 {
		t.Errorf("stats %+v, want 1 dropped", st)
	}
	if h := w.Health(); h.State != HealthOK {
		t.Errorf("health %+v", h)
	}
}

func TestWriterStartStop(t *testing.T) {
	clk := clock.NewFake(t0)
	sink := &fakeSink{}
	w := NewWriter(sink, WriterConfig{Clock: clk, Logger: discardLogger()})
	w.Stop() // before Start: nothing to do
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err == nil {
		t.Error("a second Start succeeded")
	}
	enqueueAll(w, execs(5, "stop"))
	w.Stop() // flushes without the clock moving
	if st := w.Stats(); st.Written != 5 || st.Backlog != 0 {
		t.Errorf("stats after Stop %+v, want 5 written", st)
	}
	w.Stop()

	// A store that hangs: Stop gives up after StopTimeout and counts the records as lost.
	hung := &fakeSink{gate: make(chan struct{})}
	w = NewWriter(hung, WriterConfig{Clock: clk, Logger: discardLogger(), StopTimeout: 20 * time.Millisecond})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	enqueueAll(w, execs(5, "hung"))
	w.Stop()
	if st := w.Stats(); st.Written != 0 || st.Dropped != 5 || st.Backlog != 0 {
		t.Errorf("stats after Stop on a hung store %+v, want 5 dropped", st)
	}

	// The context of Start ending stops the goroutine too (and flushes).
	ctx, cancel := context.WithCancel(context.Background())
	w = NewWriter(sink, WriterConfig{Clock: clk, Logger: discardLogger()})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	enqueueAll(w, execs(3, "ctx"))
	cancel()
	eventually(t, "the flush at the end of the context", func() bool { return w.Stats().Written == 3 })
	w.Stop()
}

// TestWriterSurvivesPostgresOutage stops PostgreSQL (SIGINT to the postmaster's PID) while records keep
// coming: Enqueue keeps returning, the Writer holds what fits in its queue and counts the rest as dropped, its
// health is degraded; after PostgreSQL restarts, the held records are written and health is ok again. A
// second Writer is fed all along by a producer goroutine (dispatch going on through the outage): nothing it
// produced is unaccounted for (written + dropped = produced) and everything accepted reaches the store.
func TestWriterSurvivesPostgresOutage(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// A cluster of its own: the shared one must stay up for the other tests (and EJ_TEST_PG_DSN's cannot be
	// stopped).
	cluster, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Close(); err != nil {
			t.Error(err)
		}
	})
	dsn, err := cluster.CreateDatabase(ctx, "outage")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, dsn, WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	clk := clock.NewFake(t0)
	rec := newLogRecorder()
	w := startWriter(t, s, WriterConfig{QueueSize: 200, BatchSize: 20, FlushInterval: time.Second,
		RetryMin: time.Second, RetryMax: 4 * time.Second, WriteTimeout: 5 * time.Second, Clock: clk, Logger: slog.New(rec)})
	advance := func() { clk.Advance(4 * time.Second) }

	// The producer's Writer, on the same clock, and the producer.
	w2 := startWriter(t, s, WriterConfig{QueueSize: 100, BatchSize: 20, FlushInterval: time.Second,
		RetryMin: time.Second, RetryMax: 4 * time.Second, WriteTimeout: 5 * time.Second, Clock: clk})
	produce, produced := make(chan struct{}), make(chan int)
	go func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-produce:
				produced <- n
				return
			case <-tick.C:
				w2.Enqueue(newExec("dispatch", n%4, t0.Add(time.Duration(n)*time.Millisecond)))
				n++
			}
		}
	}()
	stopProducer := sync.OnceValue(func() int { close(produce); return <-produced })
	t.Cleanup(func() { stopProducer() }) // also when the test fails early

	before := execs(50, "outage")
	enqueueAll(w, before)
	eventually(t, "the first records", func() bool { return w.Stats().Written == 50 }, advance)

	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	during := execs(520, "outage")
	enqueueAll(w, during[:20])
	eventually(t, "degraded health", func() bool { return w.Health().State == HealthDegraded }, advance)
	if h := w.Health(); h.LastError == "" {
		t.Errorf("health %+v has no error", h)
	}
	accepted := 20 + enqueueAll(w, during[20:])
	if accepted != 200 {
		t.Errorf("accepted %d records during the outage, want the queue size 200", accepted)
	}
	if st := w.Stats(); st.Dropped != 320 || st.Backlog != 200 {
		t.Errorf("stats %+v, want 320 dropped and 200 held", st)
	}
	eventually(t, "the drops to be logged", func() bool { return rec.count("history records dropped") >= 1 }, advance)
	if rec.count("history store unavailable; records queue up and are dropped when the queue is full") != 1 {
		t.Error("the outage was not logged once")
	}

	if err := cluster.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "writes to resume", func() bool { return w.Stats().Written == 250 }, advance)
	if h := w.Health(); h.State != HealthOK {
		t.Errorf("health %+v after the restart", h)
	}
	if st := w.Stats(); st.Backlog != 0 || st.Dropped != 320 {
		t.Errorf("stats %+v", st)
	}

	n := stopProducer()
	eventually(t, "the producer's Writer to drain", func() bool { return w2.Stats().Backlog == 0 }, advance)
	st2 := w2.Stats()
	if st2.Written+st2.Dropped != int64(n) || st2.Dropped == 0 || st2.Written == 0 {
		t.Errorf("producer made %d records; its Writer: %+v (want written + dropped = produced, both > 0)", n, st2)
	}
	c, err := s.CountsSince(ctx, []string{"outage", "dispatch"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if c["outage"].Success != 250 || c["dispatch"].Success != st2.Written {
		t.Errorf("the store holds %+v, want 250 outage and %d dispatch executions", c, st2.Written)
	}
}

// TestWriterYieldsToABusyPeer: a flush holds off while Yield says the peer is busy, writes as soon as it is
// quiet, and after MaxYield at the latest when it never is.
func TestWriterYieldsToABusyPeer(t *testing.T) {
	for _, maxYield := range []time.Duration{time.Hour, time.Second} {
		t.Run(maxYield.String(), func(t *testing.T) {
			clk := clock.NewFake(t0)
			var busy atomic.Bool
			var asked atomic.Int64
			busy.Store(true)
			sink := &fakeSink{}
			w := startWriter(t, sink, WriterConfig{BatchSize: 10, FlushInterval: time.Hour, MaxYield: maxYield, Clock: clk,
				Yield: func() time.Duration {
					asked.Add(1)
					if busy.Load() {
						return 100 * time.Millisecond
					}
					return 0
				}})
			written := func() int { e, _ := sink.written(); return len(e) }
			tick := func() { clk.Advance(50 * time.Millisecond) }
			start := clk.Now()
			enqueueAll(w, execs(10, "yield")) // a full batch: flushed at once, but the peer is busy
			if maxYield == time.Second {
				// never quiet: MaxYield bounds the wait
				eventually(t, "the batch after MaxYield", func() bool { return written() == 10 }, tick)
				if waited := clk.Since(start); waited < time.Second {
					t.Fatalf("wrote after %s of a busy peer, want MaxYield (1s)", waited)
				}
				return
			}
			eventually(t, "the writer to hold off through bursts", func() bool { return asked.Load() >= 5 }, tick)
			if n := written(); n != 0 {
				t.Fatalf("%d records written while the peer was busy", n)
			}
			busy.Store(false)
			eventually(t, "the batch once the peer is quiet", func() bool { return written() == 10 }, tick)
		})
	}
}
