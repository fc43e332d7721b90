package history

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

func TestHoldStarts(t *testing.T) {
	const hold = time.Second
	now := t0.Add(time.Minute)
	a, b := newExec("held", 0, t0), newExec("held", 1, t0)
	beat := running(b)
	beat.HeartbeatAt = t0.Add(time.Second)
	wait := &waiter{}
	type rec struct {
		e    ejserver.Execution
		age  time.Duration
		wait *waiter
	}
	for _, c := range []struct {
		name        string
		q           []rec
		write, keep []string // ids, with "+" marking an end record
		replaced    int
	}{
		{name: "a young start record stays", q: []rec{{e: running(a), age: 10 * time.Millisecond}}, keep: []string{"a"}},
		{name: "an old start record goes", q: []rec{{e: running(a), age: hold}}, write: []string{"a"}},
		{name: "an end record goes at once", q: []rec{{e: a}}, write: []string{"a+"}},
		{name: "a start record someone waits for goes", q: []rec{{e: running(a), wait: wait}}, write: []string{"a"}},
		{name: "its end replaces a start record", q: []rec{{e: running(a), age: time.Millisecond}, {e: a}},
			write: []string{"a+"}, replaced: 1},
		{name: "an old start record is replaced too", q: []rec{{e: running(a), age: time.Hour}, {e: a}},
			write: []string{"a+"}, replaced: 1},
		{name: "an end queued before the start: both go, the store keeps the end",
			q: []rec{{e: a}, {e: running(a), age: time.Millisecond}}, write: []string{"a+"}, keep: []string{"a"}},
		{name: "a later heartbeat replaces a start record, and stays young",
			q: []rec{{e: running(b), age: time.Millisecond}, {e: beat, age: time.Millisecond}}, keep: []string{"b"}, replaced: 1},
		{name: "an earlier heartbeat does not replace a later one",
			q: []rec{{e: beat, age: time.Hour}, {e: running(b), age: time.Millisecond}}, write: []string{"b"}, keep: []string{"b"}},
		{name: "others keep their order",
			q:     []rec{{e: running(b), age: time.Millisecond}, {e: running(a), age: time.Millisecond}, {e: a}, {e: b}},
			write: []string{"a+", "b+"}, replaced: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var q queued
			for _, r := range c.q {
				q.recs, q.waits, q.at = append(q.recs, r.e), append(q.waits, r.wait), append(q.at, now.Add(-r.age))
			}
			write, keep, replaced := holdStarts(q, now, hold)
			names := func(p queued) []string {
				var out []string
				for _, e := range p.recs {
					n := map[string]string{a.ID: "a", b.ID: "b"}[e.ID]
					if e.Done() {
						n += "+"
					}
					out = append(out, n)
				}
				return out
			}
			if got := names(write); !slices.Equal(got, c.write) {
				t.Errorf("written %v, want %v", got, c.write)
			}
			if got := names(keep); !slices.Equal(got, c.keep) {
				t.Errorf("kept %v, want %v", got, c.keep)
			}
			if replaced != c.replaced {
				t.Errorf("replaced %d, want %d", replaced, c.replaced)
			}
			if len(write.waits) != len(write.recs) || len(write.at) != len(write.recs) ||
				len(keep.waits) != len(keep.recs) || len(keep.at) != len(keep.recs) {
				t.Errorf("parallel slices differ in length: %+v %+v", write, keep)
			}
		})
	}
}

// FuzzHoldStarts checks holdStarts' invariants on any queue: every record is written, kept or replaced;
// records someone waits for and end records are written; nothing older than hold is kept; what the store
// ends with for each execution (the queue's records applied in order by the upsert's rule) is the same
// whether the queue is written whole or as holdStarts splits it (the part written, then the part kept).
func FuzzHoldStarts(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0x10, 0x91, 0x22, 0xf3, 0x04, 0x85})
	f.Fuzz(func(t *testing.T, data []byte) {
		const hold = time.Second
		now := t0.Add(time.Hour)
		ids := []string{"x", "y", "z"}
		var q queued
		for _, d := range data {
			e := newExec("fuzz", 0, t0)
			e.ID = ids[int(d)%len(ids)]
			switch (d >> 2) & 3 {
			case 0:
				e = running(e)
			case 1:
				e = running(e)
				e.HeartbeatAt = t0.Add(time.Duration(d>>4) * time.Second)
			case 2:
				e.CompletedAt = t0.Add(time.Duration(d>>4) * time.Second)
			}
			var w *waiter
			if d&0x80 != 0 && d&0x40 != 0 {
				w = &waiter{}
			}
			q.recs, q.waits = append(q.recs, e), append(q.waits, w)
			q.at = append(q.at, now.Add(-time.Duration(d>>4)*200*time.Millisecond))
		}
		write, keep, replaced := holdStarts(q, now, hold)
		if len(write.recs)+len(keep.recs)+replaced != len(q.recs) {
			t.Fatalf("%d written + %d kept + %d replaced != %d queued", len(write.recs), len(keep.recs), replaced, len(q.recs))
		}
		for i, e := range keep.recs {
			if e.Done() || keep.waits[i] != nil || now.Sub(keep.at[i]) >= hold {
				t.Fatalf("kept %+v (waiter %v, queued %v ago)", e, keep.waits[i] != nil, now.Sub(keep.at[i]))
			}
		}
		final := func(parts ...[]ejserver.Execution) map[string]ejserver.Execution {
			out := map[string]ejserver.Execution{}
			for _, p := range parts {
				for _, e := range p {
					if old, ok := out[e.ID]; !ok || replaces(e, old) {
						out[e.ID] = e
					}
				}
			}
			return out
		}
		whole, split := final(q.recs), final(write.recs, keep.recs)
		for id, e := range whole {
			if s, ok := split[id]; !ok || s.Done() != e.Done() || !s.CompletedAt.Equal(e.CompletedAt) || !s.HeartbeatAt.Equal(e.HeartbeatAt) {
				t.Fatalf("execution %s ends as %+v, want %+v", id, split[id], e)
			}
		}
	})
}

// TestWriterHoldsStartRecords writes through a Writer with StartHold into each store: a start record whose
// end follows within the hold is written once, as its end (one upsert, no update); a start record alone is
// written once the hold has passed; Stop writes a held start record at once.
func TestWriterHoldsStartRecords(t *testing.T) {
	eachStore(t, func(t *testing.T, s Store) {
		clk := clock.NewFake(t0)
		sink := &recordingSink{Sink: s}
		w := startWriter(t, sink, WriterConfig{FlushInterval: 100 * time.Millisecond, StartHold: time.Second, Clock: clk})

		short, long := newExec("hold", 0, t0), newExec("hold", 1, t0)
		w.Enqueue(running(short))
		w.Enqueue(running(long))
		w.Enqueue(short)
		// The clock moves on in flush intervals but stops short of the hold, however long a write takes here
		// (a loaded machine): the long item's start record must not be due before the first batch is seen.
		eventually(t, "the short item's end", func() bool { return len(sink.ids()) > 0 },
			func() {
				if clk.Now().Before(t0.Add(900 * time.Millisecond)) {
					clk.Advance(100 * time.Millisecond)
				}
			})
		if got := sink.ids(); !slices.Equal(got, []string{short.ID + "+"}) {
			t.Fatalf("written %v, want only the short item's end", got)
		}
		if got := mustGet(t, s, short.ID); !got.Done() {
			t.Fatalf("the short item is %+v", got)
		}
		eventually(t, "the long item's start record after the hold", func() bool {
			_, err := s.GetExecution(testCtx(t), long.ID)
			return err == nil
		}, func() { clk.Advance(100 * time.Millisecond) })
		if got := mustGet(t, s, long.ID); got.Done() {
			t.Fatalf("the long item is %+v", got)
		}

		third := newExec("hold", 2, t0)
		w.Enqueue(running(third))
		w.Stop()
		if got := mustGet(t, s, third.ID); got.Done() {
			t.Fatalf("the third item is %+v", got)
		}
		if st := w.Stats(); st.Written != 4 || st.Backlog != 0 || st.Dropped != 0 {
			t.Errorf("stats %+v, want 4 written (the short item's start with its end)", st)
		}
	})
}

// recordingSink records the execution records that reach the store, an end record's id marked with "+".
type recordingSink struct {
	Sink
	mu   sync.Mutex
	seen []string
}

func (r *recordingSink) WriteExecutions(ctx context.Context, recs []ejserver.Execution) error {
	err := r.Sink.WriteExecutions(ctx, recs)
	if err == nil {
		r.mu.Lock()
		for _, e := range recs {
			id := e.ID
			if e.Done() {
				id += "+"
			}
			r.seen = append(r.seen, id)
		}
		r.mu.Unlock()
	}
	return err
}

func (r *recordingSink) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}
