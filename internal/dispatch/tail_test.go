package dispatch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// parked holds the answers a test gives later: records waiting for ZooKeeper or the history's commit.
type parked struct {
	mu    sync.Mutex
	waits []func()
}

func (p *parked) park(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits = append(p.waits, f)
}

func (p *parked) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waits)
}

// answer answers every parked record, in its order.
func (p *parked) answer() {
	p.mu.Lock()
	waits := p.waits
	p.waits = nil
	p.mu.Unlock()
	for _, f := range waits {
		f()
	}
}

// parkedEnds is a registry whose item ends wait until the test answers them.
type parkedEnds struct {
	*fakeRegistry
	parked
}

func (p *parkedEnds) EndItemThen(job string, item int, version int32, done cluster.Completed, clearFailover bool, then func(error)) {
	p.park(func() { then(p.fakeRegistry.EndItem(job, item, version, done, clearFailover)) })
}

// parkedCommits is a history whose end records' commits wait until the test answers them.
type parkedCommits struct {
	recorder
	parked
}

func (p *parkedCommits) EnqueueCommittedThen(ctx context.Context, e ejserver.Execution, then func(error)) {
	p.park(func() { then(p.recorder.EnqueueCommitted(ctx, e)) })
}

// An item waiting for its end record's commit, then for its end in ZooKeeper, holds no goroutine, is not
// finished before ZooKeeper has its end, and holds the executor's drain until then.
func TestAnItemWaitingForItsEndHoldsNoGoroutine(t *testing.T) {
	const items = 40
	reg, rec, send := &parkedEnds{fakeRegistry: newFakeRegistry(items)}, &parkedCommits{}, newFakeSender()
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Recorder: rec, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	running := func() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.running) }
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	for range items {
		send.next(t)
	}
	waitFor(t, func() bool { return rec.waiting() == items })
	waitFor(t, func() bool { return executorGoroutines() == 0 })
	if reg.waiting() != 0 {
		t.Fatal("an end went to ZooKeeper before its record's commit")
	}
	rec.answer()
	waitFor(t, func() bool { return reg.waiting() == items })
	waitFor(t, func() bool { return executorGoroutines() == 0 })
	if n := running(); n != items {
		t.Fatalf("%d items running while their ends wait, want %d: an item finished before ZooKeeper had its end", n, items)
	}
	drained := make(chan struct{})
	go func() {
		e.Drain(time.Minute)
		close(drained)
	}()
	select {
	case <-drained:
		t.Fatal("the drain returned while items' ends were waiting")
	case <-time.After(50 * time.Millisecond): // a negative: the drain must not return within a moment
	}
	reg.answer()
	<-drained
	if n := running(); n != 0 {
		t.Fatalf("%d items running after the drain", n)
	}
	reg.fakeRegistry.mu.Lock()
	defer reg.fakeRegistry.mu.Unlock()
	if reg.endCalls != items || len(reg.ended) != items {
		t.Fatalf("%d ends written (%d recorded), want %d", reg.endCalls, len(reg.ended), items)
	}
}

// An end whose record answers with an error goes on as endItem's retries do, and the item finishes after it.
func TestAnItemWhoseEndRecordFailedIsEndedByItsRetries(t *testing.T) {
	reg := &failingEnds{fakeRegistry: newFakeRegistry(1)}
	send := newFakeSender()
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	reg.endFailures = 1 // the retry's first EndItem fails too: the back-off follows
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	waitFor(t, func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return len(reg.ended) == 1 })
	e.Drain(time.Minute)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.thens != 1 || reg.endCalls != 2 {
		t.Fatalf("%d records and %d EndItem calls after them, want the record and two tries", reg.thens, reg.endCalls)
	}
}

// failingEnds is a registry whose item ends as records fail (a connection broke), once each.
type failingEnds struct {
	*fakeRegistry
	thens int
}

func (f *failingEnds) EndItemThen(_ string, _ int, _ int32, _ cluster.Completed, _ bool, then func(error)) {
	f.mu.Lock()
	f.thens++
	f.mu.Unlock()
	then(errors.New("zk: connection closed"))
}
