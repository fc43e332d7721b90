package history

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// EnqueueCommitted returns only once the record's transaction has committed, and the records that arrive
// together still travel in one batch (group commit).
func TestEnqueueCommittedWaitsForTheBatchCommit(t *testing.T) {
	sink := &fakeSink{gate: make(chan struct{})}
	w := startWriter(t, sink, WriterConfig{FlushInterval: time.Hour, CommitDelay: 20 * time.Millisecond})
	const n = 20
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- w.EnqueueCommitted(context.Background(), newExec("g", i, t0)) })
	}
	// none returns while the store has not answered
	select {
	case err := <-errs:
		t.Fatalf("EnqueueCommitted returned %v before the store committed", err)
	case <-time.After(100 * time.Millisecond): // a negative: nothing must happen within a moment
	}
	close(sink.gate) // the store answers from now on
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, batches := sink.written()
	if len(got) != n {
		t.Fatalf("%d records written, want %d", len(got), n)
	}
	if len(batches) >= n {
		t.Fatalf("batches %v: the waiting records were written one transaction each", batches)
	}
}

// An idle writer does not keep a waiter for FlushInterval: it writes CommitDelay after the record.
func TestEnqueueCommittedDoesNotWaitForTheFlushInterval(t *testing.T) {
	sink := &fakeSink{}
	w := startWriter(t, sink, WriterConfig{FlushInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.EnqueueCommitted(ctx, newExec("idle", 0, t0)); err != nil {
		t.Fatal(err)
	}
	if got, _ := sink.written(); len(got) != 1 {
		t.Fatalf("%d records written, want 1", len(got))
	}
}

// A store that fails never holds a waiter up for long: the waiter is told the record is not committed (it
// stays queued and is written once the store answers), and a degraded writer does not wait at all.
func TestEnqueueCommittedWhileTheStoreFails(t *testing.T) {
	var mu sync.Mutex
	down := true
	sink := &fakeSink{fail: func([]ejserver.Execution) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return ejserver.Errorf(ejserver.EUNAVAILABLE, "down")
		}
		return nil
	}}
	w := startWriter(t, sink, WriterConfig{RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.EnqueueCommitted(ctx, newExec("down", 0, t0)); !errors.Is(err, ErrNotCommitted) {
		t.Fatalf("first waiter: %v, want ErrNotCommitted", err)
	}
	if w.Health().State != HealthDegraded {
		t.Fatal("not degraded")
	}
	// told at once, with the store's error (not after the wait's context ends)
	if err := w.EnqueueCommitted(ctx, newExec("down", 1, t0)); !errors.Is(err, ErrNotCommitted) ||
		!strings.Contains(err.Error(), "the store is failing") || !strings.Contains(err.Error(), "down") {
		t.Fatalf("waiter while degraded: %v, want ErrNotCommitted: the store is failing (down)", err)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if got, _ := sink.written(); len(got) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the records not committed were not written once the store answered")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

// A record the store rejects is dropped, and its waiter is told so.
func TestEnqueueCommittedRejected(t *testing.T) {
	sink := &fakeSink{fail: func([]ejserver.Execution) error { return ejserver.Errorf(ejserver.EINVALID, "bad") }}
	w := startWriter(t, sink, WriterConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.EnqueueCommitted(ctx, newExec("bad", 0, t0)); !errors.Is(err, ErrNotCommitted) {
		t.Fatalf("got %v, want ErrNotCommitted", err)
	}
}

// Stop answers the waiters it leaves.
func TestEnqueueCommittedAtStop(t *testing.T) {
	sink := &fakeSink{gate: make(chan struct{})}
	w := NewWriter(sink, WriterConfig{Logger: discardLogger(), StopTimeout: 10 * time.Millisecond})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- w.EnqueueCommitted(context.Background(), newExec("stop", 0, t0)) }()
	for w.Stats().Backlog == 0 {
		time.Sleep(time.Millisecond) // polling: the record is queued
	}
	w.Stop()
	if err := <-errc; !errors.Is(err, ErrNotCommitted) {
		t.Fatalf("got %v, want ErrNotCommitted", err)
	}
}

// EnqueueCommittedThen's waiters hold no goroutine while the store has not answered, and each is told once:
// the ones whose context ended first get ErrNotCommitted, the others nil at the commit, and a commit after
// a context's end tells nobody twice.
func TestEnqueueCommittedThenHoldsNoGoroutineAndTellsOnce(t *testing.T) {
	sink := &fakeSink{gate: make(chan struct{})}
	w := startWriter(t, sink, WriterConfig{FlushInterval: time.Hour, CommitDelay: time.Millisecond})
	const n = 1000
	var mu sync.Mutex
	told := map[int][]error{}
	var all sync.WaitGroup
	all.Add(n)
	short, cancelShort := context.WithCancel(context.Background())
	before := runtime.NumGoroutine()
	for i := range n {
		ctx := context.Background()
		if i%2 == 0 {
			ctx = short
		}
		w.EnqueueCommittedThen(ctx, newExec("then", i, t0), func(err error) {
			mu.Lock()
			told[i] = append(told[i], err)
			mu.Unlock()
			all.Done()
		})
	}
	if now := runtime.NumGoroutine(); now-before > n/10 {
		t.Fatalf("%d goroutines more with %d waiters queued: a waiter holds one", now-before, n)
	}
	cancelShort() // the even waiters give up before the store answers
	for deadline := time.Now().Add(20 * time.Second); ; {
		mu.Lock()
		k := len(told)
		mu.Unlock()
		if k == n/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters told after their context ended, want %d", k, n/2)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	close(sink.gate)
	all.Wait()
	if got, _ := sink.written(); len(got) != n {
		t.Fatalf("%d records written, want %d (a waiter that gave up still has its record written)", len(got), n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		errs := told[i]
		switch {
		case len(errs) != 1:
			t.Fatalf("waiter %d told %d times: %v", i, len(errs), errs)
		case i%2 == 0 && !errors.Is(errs[0], ErrNotCommitted):
			t.Fatalf("waiter %d (context ended): %v, want ErrNotCommitted", i, errs[0])
		case i%2 == 1 && errs[0] != nil:
			t.Fatalf("waiter %d: %v, want nil", i, errs[0])
		}
	}
}

// A degraded writer answers EnqueueCommittedThen before it returns.
func TestEnqueueCommittedThenWhileDegraded(t *testing.T) {
	sink := &fakeSink{fail: func([]ejserver.Execution) error { return ejserver.Errorf(ejserver.EUNAVAILABLE, "down") }}
	w := startWriter(t, sink, WriterConfig{RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.EnqueueCommitted(ctx, newExec("down", 0, t0)); !errors.Is(err, ErrNotCommitted) {
		t.Fatalf("first waiter: %v, want ErrNotCommitted", err)
	}
	var got error
	answered := false
	w.EnqueueCommittedThen(ctx, newExec("down", 1, t0), func(err error) { got, answered = err, true })
	if !answered || !errors.Is(got, ErrNotCommitted) {
		t.Fatalf("answered %v with %v, want ErrNotCommitted before it returned", answered, got)
	}
}
