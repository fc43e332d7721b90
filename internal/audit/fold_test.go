package audit

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ejserver/ejserver/internal/clock"
)

func goleakMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 24, 2, 10, 0, 0, time.UTC)

func TestFolder(t *testing.T) {
	t.Parallel()
	f := NewFolder(2)
	deny := func(at time.Duration, src string, status int) bool {
		_, now := f.Observe(Denial{Time: t0.Add(at), Source: src, Status: status, Method: "GET", Path: "/api/v1/jobs"})
		return now
	}
	if !deny(0, "10.0.0.1", 401) {
		t.Fatal("the first denial of a source is recorded at once")
	}
	for i := range 1000 {
		if deny(time.Duration(i)*time.Millisecond, "10.0.0.1", 401+2*(i%2)) {
			t.Fatal("a later denial of the same minute is recorded at once")
		}
	}
	if !deny(time.Second, "10.0.0.2", 401) {
		t.Fatal("another source is recorded at once")
	}
	if !deny(2*time.Second, "10.0.0.3", 401) {
		t.Fatal("the first source beyond the bound is recorded once, as the other sources")
	}
	if deny(3*time.Second, "10.0.0.4", 401) {
		t.Fatal("a second source beyond the bound is folded")
	}
	if got := f.Flush(t0.Add(59 * time.Second)); len(got) != 0 {
		t.Fatalf("flushed a minute that is not over: %+v", got)
	}
	if !deny(61*time.Second, "10.0.0.1", 401) {
		t.Fatal("a new minute starts a new bucket")
	}
	got := f.Flush(t0.Add(61 * time.Second))
	if len(got) != 2 {
		t.Fatalf("flush = %+v", got)
	}
	if got[0].Source != OtherSources || got[0].Count != 1 || got[1].Source != "10.0.0.1" || got[1].Count != 1000 {
		t.Fatalf("flush = %+v", got)
	}
	if got[1].Detail != "1000 more refused requests from 10.0.0.1 in the minute from 02:10 (500 × 401, 500 × 403); the first was recorded on its own" {
		t.Fatalf("detail %q", got[1].Detail)
	}
	if f.Pending() != 1 {
		t.Fatalf("pending %d, want the next minute's bucket", f.Pending())
	}
}

type memStore struct {
	mu sync.Mutex
	es []Entry
}

func (m *memStore) WriteAudit(_ context.Context, es []Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.es = append(m.es, es...)
	return nil
}

func (m *memStore) entries() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Entry(nil), m.es...)
}

func TestRecorderFoldsAFlood(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	st := &memStore{}
	r := NewRecorder(RecorderConfig{Store: st, Instance: "p1", Clock: clk, FlushInterval: time.Minute})
	r.Stop() // before Start: safe
	sleeping := clk.TimerCreated()
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	for range 10_000 {
		r.Deny(context.Background(), Denial{Source: "10.9.9.9", Status: 401, Method: "GET", Path: "/api/v1/jobs"})
	}
	if n := len(st.entries()); n != 1 {
		t.Fatalf("%d entries after a flood, want 1", n)
	}
	<-sleeping
	clk.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for len(st.entries()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the folded entry was not written")
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	es := st.entries()
	if es[1].Count != 9999 || es[1].Action != AuthDenied || es[1].Instance != "p1" || es[1].ID == "" {
		t.Fatalf("folded entry %+v", es[1])
	}
	r.Stop()
	r.Stop()
}
