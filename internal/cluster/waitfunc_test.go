package cluster

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// waitResult is what a WaitFunc's fn was called with, and on which call.
type waitResult struct {
	snap  *JobSnapshot
	err   error
	calls int32
}

// recordWait returns an fn for WaitFunc that sends its first call's arguments on the channel and counts its
// calls.
func recordWait() (func(*JobSnapshot, error), <-chan waitResult, *atomic.Int32) {
	ch := make(chan waitResult, 1)
	var calls atomic.Int32
	return func(s *JobSnapshot, err error) {
		n := calls.Add(1)
		if n == 1 {
			ch <- waitResult{snap: s, err: err, calls: n}
		}
	}, ch, &calls
}

func awaitResult(t *testing.T, ch <-chan waitResult, what string) waitResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: fn was not called", what)
		return waitResult{}
	}
}

// WaitFunc calls fn once: at once when cond holds, at the change that makes it hold, with ctx's error and the
// last snapshot when ctx ends first, and with ENOTFOUND when the job is deleted while it waits.
func TestWaitFuncEndsAsWaitDoesAndCallsOnce(t *testing.T) {
	ns := zktest.Namespace("waitfunc")
	p := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	createLed(t, p, "orders", 2)
	ctx := context.Background()

	fn, ch, calls := recordWait()
	p.r.WaitFunc(ctx, "orders", func(s *JobSnapshot) bool { return s.IsLeader() }, fn)
	select { // cond holds: fn ran on this goroutine, before WaitFunc returned
	case res := <-ch:
		if res.err != nil || res.snap == nil || !res.snap.IsLeader() {
			t.Fatalf("at once: %+v", res)
		}
	default:
		t.Fatal("cond held at once, but fn was not called before WaitFunc returned")
	}

	disabled := func(s *JobSnapshot) bool { return s.ServerDisabled("10.0.0.1") }
	fn, ch, calls = recordWait()
	p.r.WaitFunc(ctx, "orders", disabled, fn)
	if err := p.r.SetServerState("orders", "10.0.0.1", ServerDisabled); err != nil {
		t.Fatal(err)
	}
	if res := awaitResult(t, ch, "a change"); res.err != nil || !disabled(res.snap) {
		t.Fatalf("after the change: %+v", res)
	}

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	fn, ch, _ = recordWait()
	p.r.WaitFunc(short, "orders", func(*JobSnapshot) bool { return false }, fn)
	res := awaitResult(t, ch, "ctx's end")
	if !errors.Is(res.err, context.DeadlineExceeded) || res.snap == nil || res.snap.Name != "orders" {
		t.Fatalf("at ctx's end: err %v, last snapshot %+v", res.err, res.snap)
	}

	fn, ch, _ = recordWait()
	p.r.WaitFunc(ctx, "orders", func(*JobSnapshot) bool { return false }, fn)
	if err := p.r.DeleteJob("orders"); err != nil {
		t.Fatal(err)
	}
	if res := awaitResult(t, ch, "the job's deletion"); !ejserver.IsNotFound(res.err) {
		t.Fatalf("after the deletion: %+v", res)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("fn of the changed wait was called %d times", n)
	}
}

// A parked wait is a record on the job's entry, not a goroutine: a thousand waits that do not end add no
// goroutine, and waits that ended without a change of the job do not pile up on its entry.
func TestWaitFuncParksWithoutAGoroutine(t *testing.T) {
	ns := zktest.Namespace("waitpark")
	p := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	createLed(t, p, "orders", 1)
	never := func(*JobSnapshot) bool { return false }
	ctx, cancel := context.WithCancel(context.Background())
	before := runtime.NumGoroutine()
	fn, _, calls := recordWait()
	for range 1000 {
		p.r.WaitFunc(ctx, "orders", never, fn)
	}
	if grew := runtime.NumGoroutine() - before; grew > 100 {
		t.Fatalf("1,000 parked waits added %d goroutines", grew)
	}
	cancel()
	deadline := time.Now().Add(15 * time.Second)
	for calls.Load() < 1000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := calls.Load(); n != 1000 {
		t.Fatalf("%d of 1,000 waits ended with their ctx", n)
	}

	e := p.r.entry("orders")
	for range 50 { // each ends before the next parks, and no change of the job comes between them
		short, stop := context.WithTimeout(context.Background(), time.Millisecond)
		done := make(chan struct{})
		p.r.WaitFunc(short, "orders", never, func(*JobSnapshot, error) { close(done) })
		<-done
		stop()
	}
	e.mu.Lock()
	parked := len(e.waiting)
	e.mu.Unlock()
	if parked > 1 {
		t.Fatalf("%d ended waits are still parked on the entry", parked)
	}
}
