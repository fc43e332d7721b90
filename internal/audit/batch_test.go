package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gateStore holds its first write until release is closed and records every write's entries.
type gateStore struct {
	started chan struct{} // closed when the first write begins
	release chan struct{}
	err     error

	mu     sync.Mutex
	writes [][]Entry
	once   sync.Once
}

func newGateStore() *gateStore {
	return &gateStore{started: make(chan struct{}), release: make(chan struct{})}
}

func (s *gateStore) WriteAudit(ctx context.Context, es []Entry) error {
	s.once.Do(func() {
		close(s.started)
		<-s.release
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, append([]Entry(nil), es...))
	return s.err
}

func (s *gateStore) sizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, w := range s.writes {
		out = append(out, len(w))
	}
	return out
}

// TestRecordsArrivingDuringAWriteShareTheNext: changes recorded while a write is in progress are written
// together in one write once it ends, and each caller returns that write's outcome. Written one transaction
// each, they waited one by one for the history database's write connection, which a busy history writer
// holds: 73 job creations' entries timed out while 100,000 jobs registered.
func TestRecordsArrivingDuringAWriteShareTheNext(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			st := newGateStore()
			if fail {
				st.err = errors.New("disk full")
			}
			r := NewRecorder(RecorderConfig{Store: st, Instance: "p1"})
			const n = 10
			errs := make(chan error, n+1)
			go func() { errs <- r.Record(context.Background(), Entry{Action: "job.create", Job: "first"}) }()
			<-st.started
			for i := range n {
				go func() {
					errs <- r.Record(context.Background(), Entry{Action: "job.create", Job: fmt.Sprintf("j%d", i)})
				}()
			}
			// the n callers have joined the batch waiting for the first write once it holds n entries
			deadline := time.Now().Add(10 * time.Second)
			for r.batch.waiting() != n {
				if time.Now().After(deadline) {
					t.Fatalf("%d entries wait for the next write, want %d", r.batch.waiting(), n)
				}
				time.Sleep(time.Millisecond)
			}
			close(st.release)
			for range n + 1 {
				if err := <-errs; (err != nil) != fail {
					t.Fatalf("a caller got %v, want an error: %v", err, fail)
				}
			}
			if got := st.sizes(); len(got) != 2 || got[0] != 1 || got[1] != n {
				t.Fatalf("writes of %v entries, want [1 %d]", got, n)
			}
			// and the next record is written at once, alone
			if err := r.Record(context.Background(), Entry{Action: "job.delete", Job: "last"}); (err != nil) != fail {
				t.Fatalf("a later record got %v", err)
			}
			if got := st.sizes(); len(got) != 3 || got[2] != 1 {
				t.Fatalf("writes of %v entries, want a third of 1", got)
			}
		})
	}
}
