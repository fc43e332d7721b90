package dispatch

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// fires is a Follower that keeps the keys of the fires it was told of (the alert service's part is not needed).
type fires struct {
	mu   sync.Mutex
	keys []string
}

func (f *fires) Follows(*ejserver.JobConfig) bool { return false }
func (f *fires) FireStarted(fr Fire, _ []int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, fr.Key)
	return nil
}
func (f *fires) ItemLeft(Fire, int, string, time.Time) {}
func (f *fires) ItemEnded(Fire, ItemEnd)               {}
func (f *fires) FireSkipped(Fire, string, bool)        {}
func (f *fires) FailedOver(Fire, int, string, string)  {}

// A workflow run's cancel ends its node's item in flight here as CANCEL_PREVIOUS does (aborted, recorded
// CANCELLED with the run's reason); a cancel of another fire, or of the same one again, stops nothing.
func TestExecutorCancelFireEndsTheFiresItems(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	send.holdItem(0) // never released: only the cancel ends it
	rec, fl := &recorder{}, &fires{}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Recorder: rec, Follower: fl,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Drain(time.Second)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	reg.mu.Lock()
	reg.trigger = &cluster.TriggerRequest{ID: "w1", RequestedAt: at, Instances: []string{"me"}, Workflow: json.RawMessage(`{"name":"wf"}`)}
	reg.mu.Unlock()
	e.Trigger("j")
	p := send.next(t)
	key := FireKey(at, "tw1")
	fl.mu.Lock()
	told := append([]string(nil), fl.keys...)
	fl.mu.Unlock()
	if p.Source != string(ejserver.SourceWorkflow) || len(told) != 1 || told[0] != key {
		t.Fatalf("the node's item: source %s, fires %v (want %s)", p.Source, told, key)
	}
	if n := e.CancelFire("j", "1-tother", "x"); n != 0 {
		t.Fatalf("a cancel of another fire stopped %d items", n)
	}
	if n := e.CancelFire("j", key, "cancelled through the API"); n != 1 {
		t.Fatalf("the cancel stopped %d items, want 1", n)
	}
	waitFor(t, func() bool { return len(e.Running("j")) == 0 })
	if n := e.CancelFire("j", key, "again"); n != 0 {
		t.Fatalf("a second cancel stopped %d items", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, x := range rec.execs {
		if x.ID == p.ExecutionID && x.Done() {
			if x.Success || x.State != CancelledState || !strings.Contains(x.FailureCause, "its workflow run was cancelled (cancelled through the API)") {
				t.Fatalf("the cancelled item is recorded as %+v", x)
			}
			return
		}
	}
	t.Fatal("the cancelled item's end is not recorded")
}
