package dispatch

import (
	"runtime"
	"sync"
	"testing"
)

// An item waiting for its scheduled time keeps the stack grown for sending through garbage collections
// (which shrink a stack less than a quarter used): grown and then left unused while waiting, it was halved at
// each collection and regrown at the send, in the burst.
func TestWaitOnGrownStackKeepsTheStackThroughCollections(t *testing.T) {
	const waiters = 64
	stackInUse := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.StackInuse
	}
	measure := func(wait func(release <-chan struct{})) uint64 {
		before := stackInUse()
		release := make(chan struct{})
		var started, done sync.WaitGroup
		started.Add(waiters)
		done.Add(waiters)
		for range waiters {
			go func() {
				defer done.Done()
				started.Done()
				wait(release)
			}()
		}
		started.Wait()
		held := stackInUse() - before
		close(release)
		done.Wait()
		return held / waiters
	}
	grownThenWait := measure(func(release <-chan struct{}) {
		growStack()
		<-release
	})
	waitOnGrown := measure(func(release <-chan struct{}) {
		onGrownStack(func() bool { <-release; return true })
	})
	t.Logf("stack per waiting goroutine after two collections: grown then waiting %d KB, waiting on the grown stack %d KB",
		grownThenWait>>10, waitOnGrown>>10)
	if waitOnGrown < 2*sendStackFrame-4<<10 {
		t.Fatalf("a goroutine waiting on its grown stack holds %d bytes of stack after two collections, want about %d",
			waitOnGrown, 2*sendStackFrame)
	}
}
