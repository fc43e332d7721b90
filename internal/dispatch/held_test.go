package dispatch

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// Hold holds nothing: the fakes' resharding is the test's function.
func (resharderFunc) Hold(string, time.Time) func() { return func() {} }

// holdingResharder records the fires held and whether each was held when the resharding ran.
type holdingResharder struct {
	mu        sync.Mutex
	held      map[time.Time]int
	atReshard []time.Time // the fires held when Reshard was called
	reshard   func()
}

func (h *holdingResharder) Hold(_ string, fire time.Time) func() {
	h.mu.Lock()
	h.held[fire]++
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		h.held[fire]--
		h.mu.Unlock()
	}
}

func (h *holdingResharder) Reshard(context.Context, string) error {
	h.mu.Lock()
	for at, n := range h.held {
		if n > 0 {
			h.atReshard = append(h.atReshard, at)
		}
	}
	h.mu.Unlock()
	h.reshard()
	return nil
}

// A scheduled fire that waits for its job's sharding is held (Resharder.Hold) while the leader reshards, so
// that the resharding keeps the instances that hold it; the hold ends with the wait. A fire ready at once holds
// nothing.
func TestExecutorHoldsAFireWhileItWaitsForItsSharding(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.snap.Items[1].Owner = "left"
	reg.gone = map[string]bool{"left": true}
	h := &holdingResharder{held: map[time.Time]int{}}
	h.reshard = func() {
		reg.update(func(s *cluster.JobSnapshot) {
			s.Items = []cluster.ItemState{{Exists: true, Owner: "me", OwnerVersion: 2}, {Exists: true, Owner: "me", OwnerVersion: 2}}
		})
	}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Resharder: h})
	defer e.Drain(time.Second)
	held, ready := time.Unix(100, 0), time.Unix(101, 0)
	e.Fire(Due{Job: "j", At: held})
	send.next(t)
	send.next(t)
	e.Fire(Due{Job: "j", At: ready}) // resharded already: nothing to wait for
	send.next(t)
	send.next(t)
	send.none(t)
	e.Drain(time.Second)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.atReshard) != 1 || !h.atReshard[0].Equal(held) {
		t.Fatalf("fires held at the resharding: %v, want [%v]", h.atReshard, held)
	}
	for at, n := range h.held {
		if n != 0 {
			t.Fatalf("the fire at %v is still held %d times", at, n)
		}
	}
	if _, ok := h.held[ready]; ok {
		t.Fatal("a fire that did not wait was held")
	}
}
