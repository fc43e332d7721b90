package cluster

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestEventQueueOrderAndIdle(t *testing.T) {
	var q eventQueue
	q.init()
	idle := q.idle()
	next := 0
	for round, n := range []int{1, 5, 3, eventQueueKeep + 10, 2} {
		for i := range n {
			q.push(zk.Event{Path: strconv.Itoa(round*100000 + i)})
		}
		for i := range n {
			ev, seq, ok := q.pop()
			if want := strconv.Itoa(round*100000 + i); !ok || ev.Path != want {
				t.Fatalf("round %d: popped %q %v, want %q", round, ev.Path, ok, want)
			}
			next++
			if seq != uint64(next) {
				t.Fatalf("event %d popped with sequence number %d", next, seq)
			}
		}
		select {
		case <-idle:
			t.Fatal("idle closed before the queue was found drained")
		default:
		}
	}
	if cap(q.items) > eventQueueKeep {
		t.Fatalf("a drained queue keeps an array of %d events", cap(q.items))
	}
	// the consumer finds the queue empty: idle closes, and pop waits for the next event or the close
	done := make(chan bool)
	go func() {
		_, _, ok := q.pop()
		done <- ok
	}()
	select {
	case <-idle:
	case <-time.After(10 * time.Second):
		t.Fatal("idle not closed once the queue was drained")
	}
	q.close()
	if ok := <-done; ok {
		t.Fatal("pop returned an event after close")
	}
}

// A queue that holds what it held before allocates nothing per event: the session drains it after almost
// every event of a peer's recursive watch.
func TestEventQueueAllocatesNothingInSteadyState(t *testing.T) {
	var q eventQueue
	q.init()
	ev := zk.Event{Type: zk.EventNodeDeleted, Path: "/bench/steady-10k-00001/sharding/0/running"}
	q.push(ev)
	_, _, _ = q.pop()
	allocs := testing.AllocsPerRun(1000, func() {
		q.push(ev)
		q.push(ev)
		_, _, _ = q.pop()
		_, _, _ = q.pop()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per two events pushed and popped", allocs)
	}
	q.close()
}

// waitFor sees a condition that turned true, and a queue that drained, between its look and its wait: the
// condition here does what the session goroutine did in a Dial that hung in CI (handles the last event, which
// makes the session healthy, and drains the queue) right after waitFor has looked.
func TestEventQueueWaitForACondition(t *testing.T) {
	var q eventQueue
	q.init()
	popped := make(chan bool)
	go func() {
		for {
			_, _, ok := q.pop()
			popped <- ok
			if !ok {
				return
			}
		}
	}()
	var healthy atomic.Bool
	looks := 0
	done := func() bool {
		looks++
		if looks == 1 {
			q.push(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
			<-popped
			healthy.Store(true)
			// the consumer finds the queue drained: wait until it has closed the idle channel, if one is asked for
			q.mu.Lock()
			for q.idleCh != nil {
				q.mu.Unlock()
				time.Sleep(time.Millisecond)
				q.mu.Lock()
			}
			q.mu.Unlock()
			time.Sleep(20 * time.Millisecond) // and has gone back to wait for the next event
			return false
		}
		return healthy.Load()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.waitFor(ctx, done); err != nil {
		t.Fatalf("waitFor: %v after %d looks, the condition true and the queue drained", err, looks)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := q.waitFor(ctx2, func() bool { return false }); err != context.DeadlineExceeded {
		t.Fatalf("waitFor of a condition never true: %v, want the context's deadline", err)
	}
	q.close()
	if ok := <-popped; ok {
		t.Fatal("pop returned an event after close")
	}
}
