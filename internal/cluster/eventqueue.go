package cluster

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"
)

// eventQueue is an unbounded FIFO between go-zookeeper's callback (which must never block) and the
// session goroutine.
//
// It allocates nothing while it holds what it held before: a peer's recursive watch brought a few events
// for every item its cluster runs (a running node created and deleted, a completed node set; since handled
// as they arrive, itemevents.go), and the session goroutine drains the queue after almost every one.
// Advancing the slice past each event and making a new idle channel at each drain cost two allocations an
// event (~1 KB per item a peer delivered, in steady-10k); the queue now keeps its array, and the idle channel
// is made only for a caller that waits.
type eventQueue struct {
	mu     sync.Mutex
	items  []zk.Event
	head   int // items[head:] are queued
	signal chan struct{}
	idleCh chan struct{} // closed at the next drain; nil until idle is asked for it
	closed bool
	// pushed counts the events queued since the start: an event's sequence number is the count after its push
	// (pop returns it), so an answer received after event n was pushed comes after event n (see echoes.go).
	pushed, popped uint64
}

// eventQueueKeep is the most events whose array a drained queue keeps (a start-up's burst is let go).
const eventQueueKeep = 4096

func (q *eventQueue) init() {
	q.signal = make(chan struct{}, 1)
}

func (q *eventQueue) push(ev zk.Event) {
	q.mu.Lock()
	if !q.closed {
		q.items = append(q.items, ev)
		q.pushed++
	}
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pushedCount is the number of events queued so far.
func (q *eventQueue) pushedCount() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushed
}

// pop blocks until an event arrives or the queue closes; seq is the event's sequence number (from 1).
func (q *eventQueue) pop() (_ zk.Event, seq uint64, _ bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			ev := q.items[q.head]
			q.items[q.head] = zk.Event{}
			q.head++
			q.popped++
			seq := q.popped
			if q.head == len(q.items) {
				q.head = 0
				q.items = q.items[:0]
				if cap(q.items) > eventQueueKeep {
					q.items = nil
				}
			}
			q.mu.Unlock()
			return ev, seq, true
		}
		if q.closed {
			q.mu.Unlock()
			return zk.Event{}, 0, false
		}
		// wake anyone waiting for the queue to drain
		if q.idleCh != nil {
			close(q.idleCh)
			q.idleCh = nil
		}
		q.mu.Unlock()
		<-q.signal
	}
}

// idle returns a channel closed the next time the queue is drained.
func (q *eventQueue) idle() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.idleCh == nil {
		q.idleCh = make(chan struct{})
	}
	return q.idleCh
}

// waitFor returns when done, a condition the consumer's handling of events makes true, holds, or with ctx's
// error. It asks for the idle channel before it looks at done: looked at first, done could turn true and the
// queue drain between the look and the ask, and the channel asked for then would wait for an event that may
// never come (a Dial hung for its 30 s so, in CI, with the session granted).
func (q *eventQueue) waitFor(ctx context.Context, done func() bool) error {
	for {
		drained := q.idle()
		if done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-drained:
		}
	}
}

func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}
