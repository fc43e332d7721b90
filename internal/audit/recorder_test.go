package audit

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// failingStore fails its first fails writes with err and records the entries of the writes that succeed.
type failingStore struct {
	mu      sync.Mutex
	fails   int
	err     error
	written []Entry
}

func (s *failingStore) WriteAudit(_ context.Context, es []Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails > 0 {
		s.fails--
		return s.err
	}
	s.written = append(s.written, es...)
	return nil
}

func (s *failingStore) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.written {
		out = append(out, e.ID)
	}
	return out
}

// TestAFailedWriteIsWrittenAgain: a change whose write failed (the history database's write connection held
// past the write's timeout by a saturated history writer: two job creations' entries were lost so while
// 100,000 jobs registered) is kept and written at the next flush, once; a write that fails again keeps it
// again.
func TestAFailedWriteIsWrittenAgain(t *testing.T) {
	st := &failingStore{fails: 2, err: context.DeadlineExceeded}
	r := NewRecorder(RecorderConfig{Store: st, Instance: "p1"})
	ctx := context.Background()
	if err := r.Record(ctx, Entry{ID: "a", Action: "job.create", Job: "j"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Record = %v, want the write's error", err)
	}
	if n := r.Pending(); n != 1 {
		t.Fatalf("%d entries kept, want 1", n)
	}
	r.Flush(ctx) // fails again: kept again
	if n, ids := r.Pending(), st.ids(); n != 1 || len(ids) != 0 {
		t.Fatalf("after a second failure: %d kept, written %v", n, ids)
	}
	r.Flush(ctx)
	if n, ids := r.Pending(), st.ids(); n != 0 || len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("after the retry: %d kept, written %v, want [a]", n, ids)
	}
	r.Flush(ctx)
	if ids := st.ids(); len(ids) != 1 {
		t.Fatalf("written %v after one more flush, want [a] once", ids)
	}
}

// TestEntriesKeptForARetryAreBounded: past MaxPending the entries of failed writes are dropped, not kept.
func TestEntriesKeptForARetryAreBounded(t *testing.T) {
	st := &failingStore{fails: 3, err: errors.New("disk full")}
	r := NewRecorder(RecorderConfig{Store: st, Instance: "p1", MaxPending: 2})
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		_ = r.Record(ctx, Entry{ID: id, Action: "job.create", Job: "j"})
	}
	if n := r.Pending(); n != 2 {
		t.Fatalf("%d entries kept, want MaxPending (2)", n)
	}
	r.Flush(ctx)
	if ids := st.ids(); len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
		t.Fatalf("written %v, want [a b]", ids)
	}
}
