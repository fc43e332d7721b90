package cluster

import (
	"strconv"
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
