package cluster

import (
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// laterQueue holds refreshes to be kicked campaignDelay from when they were put off. Every key waits the same
// delay, so the queue is in due order: one goroutine (laterLoop, owned by the registry) kicks them as they
// fall due.
type laterQueue struct {
	delay time.Duration
	mu    sync.Mutex
	keys  []laterKey
	wake  chan struct{}
}

type laterKey struct {
	due time.Time
	k   refreshKey
}

// kickLater kicks k the queue's delay (campaignDelay) from now.
func (r *Registry) kickLater(k refreshKey) {
	q := &r.later
	q.mu.Lock()
	q.keys = append(q.keys, laterKey{due: r.clk.Now().Add(q.delay), k: k})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// laterLoop kicks the put-off refreshes once due, until the registry stops.
func (r *Registry) laterLoop() {
	defer r.wg.Done()
	q := &r.later
	for {
		q.mu.Lock()
		now := r.clk.Now()
		n := 0
		for n < len(q.keys) && !q.keys[n].due.After(now) {
			n++
		}
		due := q.keys[:n:n]
		q.keys = q.keys[n:]
		if len(q.keys) == 0 {
			q.keys = nil // let a burst's array go
		}
		var next time.Duration
		if len(q.keys) > 0 {
			next = q.keys[0].due.Sub(now)
		}
		q.mu.Unlock()
		for _, lk := range due {
			r.w.kickUrgent(lk.k)
		}
		if next > 0 {
			if !clock.Sleep(r.clk, next, r.stop) {
				return
			}
			continue
		}
		select {
		case <-r.stop:
			return
		case <-q.wake:
		}
	}
}
