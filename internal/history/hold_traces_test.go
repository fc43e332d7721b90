package history

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

func trace(job, task string, state ejserver.TaskState) ejserver.StatusTrace {
	return ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: job, TaskID: task, State: state, CreationTime: t0}
}

func TestHoldTraces(t *testing.T) {
	const hold = time.Second
	now := t0.Add(time.Minute)
	type tr struct {
		task  string
		state ejserver.TaskState
		age   time.Duration
	}
	young := 10 * time.Millisecond
	for _, c := range []struct {
		name        string
		q           []tr
		write, keep []string // task/state initials
	}{
		{name: "a young task's staging and running wait", q: []tr{{"a", ejserver.TaskStaging, young}, {"a", ejserver.TaskRunning, young}},
			keep: []string{"aS", "aR"}},
		{name: "its end takes them along", q: []tr{{"a", ejserver.TaskStaging, young}, {"a", ejserver.TaskRunning, young}, {"a", ejserver.TaskFinished, 0}},
			write: []string{"aS", "aR", "aF"}},
		{name: "an error ends a task too", q: []tr{{"a", ejserver.TaskRunning, young}, {"a", ejserver.TaskError, 0}},
			write: []string{"aR", "aE"}},
		{name: "old ones go", q: []tr{{"a", ejserver.TaskStaging, hold}, {"a", ejserver.TaskRunning, young}},
			write: []string{"aS"}, keep: []string{"aR"}},
		{name: "another task's end does not", q: []tr{{"a", ejserver.TaskStaging, young}, {"b", ejserver.TaskStaging, young}, {"b", ejserver.TaskFinished, 0}},
			write: []string{"bS", "bF"}, keep: []string{"aS"}},
		{name: "an end alone goes", q: []tr{{"c", ejserver.TaskFinished, 0}}, write: []string{"cF"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var q queuedTraces
			for _, r := range c.q {
				q.recs, q.at = append(q.recs, trace("held", r.task, r.state)), append(q.at, now.Add(-r.age))
			}
			write, keep := holdTraces(q, now, hold)
			names := func(p queuedTraces) []string {
				var out []string
				for i, r := range p.recs {
					if !p.at[i].Equal(q.at[slices.IndexFunc(q.recs, func(x ejserver.StatusTrace) bool { return x.ID == r.ID })]) {
						t.Errorf("%s lost its queue time", r.ID)
					}
					out = append(out, r.TaskID+string(r.State[5]))
				}
				return out
			}
			if got := names(write); !slices.Equal(got, c.write) {
				t.Errorf("write %v, want %v", got, c.write)
			}
			if got := names(keep); !slices.Equal(got, c.keep) {
				t.Errorf("keep %v, want %v", got, c.keep)
			}
		})
	}
}

func FuzzHoldTraces(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0x10, 0x91, 0x22, 0xf3, 0x04, 0x85})
	f.Fuzz(func(t *testing.T, data []byte) {
		const hold = time.Second
		now := t0.Add(time.Hour)
		states := []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskRunning, ejserver.TaskFinished, ejserver.TaskError}
		var q queuedTraces
		for _, d := range data {
			r := trace([]string{"j", "k"}[d&1], []string{"x", "y", "z"}[int(d>>1)%3], states[(d>>3)&3])
			q.recs, q.at = append(q.recs, r), append(q.at, now.Add(-time.Duration(d>>5)*300*time.Millisecond))
		}
		write, keep := holdTraces(q, now, hold)
		// every trace is in exactly one part, each part in queue order
		wi, ki := 0, 0
		for _, r := range q.recs {
			switch {
			case wi < len(write.recs) && write.recs[wi].ID == r.ID:
				wi++
			case ki < len(keep.recs) && keep.recs[ki].ID == r.ID:
				ki++
			default:
				t.Fatalf("trace %+v lost or out of order", r)
			}
		}
		if wi != len(write.recs) || ki != len(keep.recs) {
			t.Fatalf("%d + %d traces out of %d queued", len(write.recs), len(keep.recs), len(q.recs))
		}
		ended := func(r ejserver.StatusTrace) bool {
			return slices.ContainsFunc(q.recs, func(x ejserver.StatusTrace) bool {
				return x.JobName == r.JobName && x.TaskID == r.TaskID && !begun(x.State)
			})
		}
		for i, r := range keep.recs {
			if !begun(r.State) || now.Sub(keep.at[i]) >= hold || ended(r) {
				t.Fatalf("kept %+v, queued %v ago, its task ended: %v", r, now.Sub(keep.at[i]), ended(r))
			}
		}
		// all is written once the hold has passed
		if write, keep := holdTraces(q, now.Add(hold), hold); len(keep.recs) != 0 || len(write.recs) != len(q.recs) {
			t.Fatalf("after the hold %d kept", len(keep.recs))
		}
	})
}

// txSink records, for each transaction, the executions and traces written in it.
type txSink struct {
	Sink
	mu  sync.Mutex
	txs [][]string
}

func (s *txSink) WriteExecutions(ctx context.Context, recs []ejserver.Execution) error {
	return s.WriteBatch(ctx, recs, nil)
}

func (s *txSink) WriteTraces(ctx context.Context, recs []ejserver.StatusTrace) error {
	return s.WriteBatch(ctx, nil, recs)
}

func (s *txSink) WriteBatch(ctx context.Context, execs []ejserver.Execution, traces []ejserver.StatusTrace) error {
	if err := s.Sink.(BatchSink).WriteBatch(ctx, execs, traces); err != nil {
		return err
	}
	var tx []string
	for _, e := range execs {
		tx = append(tx, "exec "+e.JobName)
	}
	for _, t := range traces {
		tx = append(tx, string(t.State)+" "+t.TaskID)
	}
	s.mu.Lock()
	s.txs = append(s.txs, tx)
	s.mu.Unlock()
	return nil
}

func (s *txSink) transactions() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.txs)
}

// TestWriterHoldsATasksTraces writes through a Writer with StartHold into SQLite: a short task's staging and
// running traces wait for its end's, and the three are written in one transaction; a long task's are written
// once the hold has passed; Stop writes held traces at once.
func TestWriterHoldsATasksTraces(t *testing.T) {
	clk := clock.NewFake(t0)
	s := openStore(t, "sqlite")
	sink := &txSink{Sink: s}
	w := startWriter(t, sink, WriterConfig{FlushInterval: 100 * time.Millisecond, StartHold: time.Second, Clock: clk})
	w.EnqueueTrace(trace("held", "short", ejserver.TaskStaging))
	w.EnqueueTrace(trace("held", "long", ejserver.TaskStaging))
	w.EnqueueTrace(trace("held", "short", ejserver.TaskRunning))
	// a flush interval passes: nothing is due
	clk.Advance(100 * time.Millisecond)
	w.EnqueueTrace(trace("held", "short", ejserver.TaskFinished))
	eventually(t, "the short task's traces", func() bool { return len(sink.transactions()) > 0 },
		func() {
			if clk.Now().Before(t0.Add(900 * time.Millisecond)) {
				clk.Advance(100 * time.Millisecond)
			}
		})
	want := []string{"TASK_STAGING short", "TASK_RUNNING short", "TASK_FINISHED short"}
	if got := sink.transactions(); len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("transactions %q, want one of %q", got, want)
	}
	eventually(t, "the long task's staging after the hold", func() bool { return len(sink.transactions()) == 2 },
		func() { clk.Advance(100 * time.Millisecond) })
	w.EnqueueTrace(trace("held", "third", ejserver.TaskStaging))
	w.Stop()
	got := sink.transactions()
	if want := [][]string{{"TASK_STAGING long"}, {"TASK_STAGING third"}}; !slices.EqualFunc(got[1:], want, slices.Equal) {
		t.Errorf("later transactions %q, want %q", got[1:], want)
	}
	tr, err := s.ListTraces(testCtx(t), TraceFilter{JobName: "held"})
	if err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); len(tr) != 5 || st.Written != 5 || st.Backlog != 0 || st.Dropped != 0 {
		t.Errorf("%d traces stored, stats %+v, want 5", len(tr), st)
	}
}

// TestWriterGathersAWave: gather waits CommitDelay, and again while records someone waits for keep arriving,
// up to CommitWindow; without a new one it ends after CommitDelay.
func TestWriterGathersAWave(t *testing.T) {
	for _, c := range []struct {
		name    string
		arrive  int           // waited-for records that arrive, one in each CommitDelay
		gathers time.Duration // how long gather waits
	}{
		{"alone", 0, 10 * time.Millisecond},
		{"two more", 2, 30 * time.Millisecond},
		{"a long wave stops at the window", 10, 40 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			w := NewWriter(&fakeSink{}, WriterConfig{CommitDelay: 10 * time.Millisecond, CommitWindow: 40 * time.Millisecond,
				Clock: clk, Logger: discardLogger()})
			done := make(chan struct{})
			created := clk.TimerCreated()
			go func() {
				defer close(done)
				w.gather(testCtx(t))
			}()
			for i := 0; ; i++ {
				select {
				case <-created:
				case <-done:
					if got := clk.Since(t0); got != c.gathers {
						t.Errorf("gathered for %v, want %v", got, c.gathers)
					}
					return
				case <-testCtx(t).Done():
					t.Fatal("gather neither slept nor returned")
				}
				if i < c.arrive {
					w.enqueue(newExec("wave", i, t0), &waiter{then: func(error) {}, stop: func() bool { return true }})
				}
				created = clk.TimerCreated()
				clk.Advance(10 * time.Millisecond)
			}
		})
	}
}

// Held records do not count toward a full batch: once the queue holds BatchSize records the writer keeps
// back, the next record does not wake it (it did at every Enqueue, each wake-up a flush that yields to the
// peer's bursts, and the waited-for records in the queue waited with it).
func TestWriterHeldRecordsDoNotFillABatch(t *testing.T) {
	clk := clock.NewFake(t0)
	w := NewWriter(&fakeSink{}, WriterConfig{BatchSize: 4, StartHold: time.Second, Clock: clk, Logger: discardLogger()})
	for i := range 5 {
		w.EnqueueTrace(trace("held", fmt.Sprint("task-", i), ejserver.TaskStaging))
		w.Enqueue(running(newExec("held", i, t0)))
	}
	if w.take() {
		t.Fatal("took held records")
	}
	select {
	case <-w.kick:
	default:
	}
	w.EnqueueTrace(trace("held", "task-5", ejserver.TaskStaging))
	w.Enqueue(running(newExec("held", 5, t0)))
	select {
	case <-w.kick:
		t.Fatal("a record queued behind held ones woke the writer for a full batch")
	default:
	}
	// the traces a full batch's transaction takes: three for each of 4 executions; task-5's is one of them
	full := w.tracesBeside(4)
	for i := 6; i < 5+full-1; i++ {
		w.EnqueueTrace(trace("held", fmt.Sprint("task-", i), ejserver.TaskStaging))
	}
	select {
	case <-w.kick:
		t.Fatalf("%d traces queued since the last take woke the writer; a full batch takes %d", full-1, full)
	default:
	}
	w.EnqueueTrace(trace("held", "task-last", ejserver.TaskStaging))
	select {
	case <-w.kick:
	default:
		t.Fatal("a full batch of traces queued since the last take did not wake the writer")
	}
}
