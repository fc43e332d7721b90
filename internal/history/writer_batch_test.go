package history

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// batchSink is a fakeSink that can write both tables in one transaction; fail decides each WriteBatch's error.
type batchSink struct {
	*fakeSink
	bmu     sync.Mutex
	batches [][2]int // executions and traces of each WriteBatch that succeeded
	fail    func(call int) error
	calls   int
}

func (b *batchSink) WriteBatch(ctx context.Context, execs []ejserver.Execution, traces []ejserver.StatusTrace) error {
	b.bmu.Lock()
	b.calls++
	call := b.calls
	b.bmu.Unlock()
	if b.fail != nil {
		if err := b.fail(call); err != nil {
			return err
		}
	}
	b.fakeSink.mu.Lock()
	b.fakeSink.execs = append(b.fakeSink.execs, execs...)
	b.fakeSink.traces = append(b.fakeSink.traces, traces...)
	b.fakeSink.mu.Unlock()
	b.bmu.Lock()
	b.batches = append(b.batches, [2]int{len(execs), len(traces)})
	b.bmu.Unlock()
	return nil
}

func (b *batchSink) together() [][2]int {
	b.bmu.Lock()
	defer b.bmu.Unlock()
	return append([][2]int(nil), b.batches...)
}

func testTraces(n int, job string) []ejserver.StatusTrace {
	out := make([]ejserver.StatusTrace, n)
	for i := range out {
		out[i] = ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: job, TaskID: "task-" + job, InstanceID: "i",
			ExecutionType: "READY", ShardingItems: "0", State: ejserver.TaskRunning, CreationTime: t0.Add(time.Duration(i))}
	}
	return out
}

// A sink that writes both tables at once gets one transaction for a flush's executions and traces (up to
// BatchSize of each), and a record's waiter hears of that transaction's commit.
func TestWriterWritesBothTablesInOneTransaction(t *testing.T) {
	clk := clock.NewFake(t0)
	sink := &batchSink{fakeSink: &fakeSink{}}
	w := startQueued(t, sink, WriterConfig{BatchSize: 4, FlushInterval: time.Second, Clock: clk}, execs(6, "both"), testTraces(3, "both"))
	eventually(t, "the records", func() bool { return w.Stats().Written == 9 }, func() { clk.Advance(time.Second) })
	got := sink.together()
	if len(got) == 0 || got[0] != [2]int{4, 3} {
		t.Errorf("transactions of both tables %v, want the first of 4 executions and 3 traces", got)
	}
	if _, batches := sink.written(); len(batches) > 1 {
		t.Errorf("executions written apart from the traces in %v", batches)
	}
	if n := len(sink.fakeSink.traces); n != 3 {
		t.Errorf("%d traces written, want 3", n)
	}

	if st := w.Stats(); st.Backlog != 0 || st.Dropped != 0 || st.Failures != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A transaction takes, beside its executions, up to three traces each (a task's staging, running and end)
// when that is more than BatchSize: a flush of one-item tasks' records is one transaction, not one of its
// executions and BatchSize traces followed by one of the traces left. Traces beyond that are written alone,
// BatchSize at a time.
func TestWriterTracesRideWithTheirExecutions(t *testing.T) {
	for _, tc := range []struct {
		name          string
		execs, traces int
		together      [][2]int
		alone         []int
	}{
		{"one-item tasks in one batch", 3, 9, [][2]int{{3, 9}}, nil},
		{"two batches of one-item tasks", 6, 18, [][2]int{{4, 12}, {2, 6}}, nil},
		{"few executions still take BatchSize traces", 1, 4, [][2]int{{1, 4}}, nil},
		{"traces beyond three an execution go alone", 2, 15, [][2]int{{2, 6}}, []int{4, 4, 1}},
		{"multi-item tasks: fewer traces than executions", 4, 3, [][2]int{{4, 3}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			sink := &batchSink{fakeSink: &fakeSink{}}
			w := startQueued(t, sink, WriterConfig{BatchSize: 4, FlushInterval: time.Second, Clock: clk}, execs(tc.execs, "ride"), testTraces(tc.traces, "ride"))
			want := int64(tc.execs + tc.traces)
			eventually(t, "the records", func() bool { return w.Stats().Written == want }, func() { clk.Advance(time.Second) })
			if got := sink.together(); !slices.Equal(got, tc.together) {
				t.Errorf("transactions of both tables %v, want %v", got, tc.together)
			}
			sink.fakeSink.mu.Lock()
			alone, batches := slices.Clone(sink.fakeSink.traceBatches), slices.Clone(sink.fakeSink.batches)
			sink.fakeSink.mu.Unlock()
			if !slices.Equal(alone, tc.alone) {
				t.Errorf("traces written alone in batches of %v, want %v", alone, tc.alone)
			}
			if len(batches) > 0 {
				t.Errorf("executions written apart from the traces in %v", batches)
			}
		})
	}
}

// A waiter's record travels with the traces queued beside it, and the waiter hears of that commit.
func TestWriterWaiterCommitsWithTheTraces(t *testing.T) {
	sink := &batchSink{fakeSink: &fakeSink{}}
	w := startWriter(t, sink, WriterConfig{FlushInterval: time.Hour})
	w.EnqueueTrace(testTraces(1, "both")[0])
	if err := w.EnqueueCommitted(testCtx(t), newExec("both", 0, t0)); err != nil {
		t.Fatal(err)
	}
	if got := sink.together(); len(got) != 1 || got[0] != [2]int{1, 1} {
		t.Errorf("transactions %v, want one of the waiter's record and the trace", got)
	}
}

// A batch the store rejects (not a transient error) is written table by table and record by record, and a
// transient error keeps the records for the next attempt: nothing is lost either way.
func TestWriterBothTablesRejectedOrUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"rejected", errors.New("history store: write history: value too long")},
		{"unavailable", ejserver.Unavailable(errors.New("disk I/O error"), "write history")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			sink := &batchSink{fakeSink: &fakeSink{}, fail: func(call int) error {
				if call == 1 {
					return tc.err
				}
				return nil
			}}
			w := startWriter(t, sink, WriterConfig{BatchSize: 10, FlushInterval: time.Second, RetryMin: time.Second, Clock: clk})
			enqueueAll(w, execs(3, "again"))
			for _, tr := range testTraces(2, "again") {
				w.EnqueueTrace(tr)
			}
			eventually(t, "the records", func() bool { return w.Stats().Written == 5 }, func() { clk.Advance(time.Second) })
			if st := w.Stats(); st.Dropped != 0 || st.Backlog != 0 {
				t.Errorf("stats %+v", st)
			}
			if h := w.Health(); h.State != HealthOK {
				t.Errorf("health %+v", h)
			}
			written, _ := sink.written()
			if len(written) != 3 || len(sink.fakeSink.traces) != 2 {
				t.Errorf("%d executions and %d traces written, want 3 and 2", len(written), len(sink.fakeSink.traces))
			}
		})
	}
}

// Through the Writer into each store (each writes both tables in one transaction): the executions and traces
// are all there, and each transaction took both tables' records.
func TestWriterBothTablesIntoTheStore(t *testing.T) {
	eachStore(t, func(t *testing.T, s Store) {
		clk := clock.NewFake(t0)
		sink := &txSink{Sink: s}
		recs, trs := execs(10, "stored"), testTraces(12, "stored")
		w := startQueued(t, sink, WriterConfig{BatchSize: 8, FlushInterval: time.Second, Clock: clk}, recs, trs)
		eventually(t, "the records", func() bool { return w.Stats().Written == 22 }, func() { clk.Advance(time.Second) })
		for _, r := range recs {
			mustGet(t, s, r.ID)
		}
		got, err := s.ListTraces(testCtx(t), TraceFilter{JobName: "stored", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(trs) {
			t.Errorf("%d traces stored, want %d", len(got), len(trs))
		}
		// 10 executions and 12 traces: 8 and 12 (up to three each), then the 2 left
		var sizes [][2]int
		for _, tx := range sink.transactions() {
			n := [2]int{}
			for _, r := range tx {
				if strings.HasPrefix(r, "exec ") {
					n[0]++
				} else {
					n[1]++
				}
			}
			sizes = append(sizes, n)
		}
		if want := [][2]int{{8, 12}, {2, 0}}; !slices.Equal(sizes, want) {
			t.Errorf("transactions of %v executions and traces, want %v", sizes, want)
		}
	})
}
