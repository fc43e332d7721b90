package async

import (
	"container/heap"
	"context"
	"errors"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/lease"
)

// The watcher's pace: it lists the leases at most once per listInterval (a new lease is due no sooner than
// lease.MinLeaseSeconds after its acceptance), and looks again at everything every rescan in case a watch
// was lost with a session.
const (
	listInterval = time.Second
	rescan       = 30 * time.Second
	retryPause   = time.Second
)

// Start starts the lease watcher: this peer stands for the duty and, while it holds it, drives every lease's
// expiry. Stop ends it.
func (m *Manager) Start(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.stopped {
		return nil
	}
	m.started = true
	m.wg.Add(1)
	go m.run()
	return nil
}

// Stop stops the watcher and waits for its re-POSTs; safe twice and before Start.
func (m *Manager) Stop() {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	m.stopped = true
	close(m.stop)
	m.mu.Unlock()
	m.wg.Wait()
}

// Holder reports whether this peer holds the lease watcher duty now.
func (m *Manager) Holder() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holder
}

func (m *Manager) setHolder(held bool, running int) {
	m.mu.Lock()
	m.holder = held
	m.mu.Unlock()
	m.cfg.Observer.Running(running)
}

// run campaigns for the duty and watches while it holds it.
func (m *Manager) run() {
	defer m.wg.Done()
	node := ""
	defer func() { m.reg.ResignWatcher(node) }()
	for {
		var (
			held    bool
			fence   any
			changed <-chan struct{}
			err     error
		)
		if m.reg.Lease() {
			held, node, fence, changed, err = m.reg.WatcherDuty(node)
		}
		switch {
		case err != nil:
			m.log.Warn("lease watcher: could not stand for the duty", "err", err)
			fallthrough
		case !m.reg.Lease():
			if !clock.Sleep(m.clk, retryPause, m.stop) {
				return
			}
		case held:
			m.log.Info("lease watcher duty taken")
			if !m.watch(fence) {
				m.setHolder(false, 0)
				return
			}
			m.setHolder(false, 0)
			m.log.Info("lease watcher duty lost")
		default:
			t := m.clk.NewTimer(rescan)
			select {
			case <-m.stop:
				t.Stop()
				return
			case <-changed:
			case <-t.C():
			}
			t.Stop()
		}
	}
}

// due is one lease the watcher will look at, at its time: a live lease's due time, or when an ended record
// goes.
type due struct {
	id    string
	at    time.Time
	ended bool
}

type dueHeap []due

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// watch drives the leases while this peer holds the duty: one timer for the earliest due lease, one watch
// on the list of live leases. A lease that leaves the list has ended (its record moved to the ended folder):
// its record goes Retention later. It returns false when the manager stops, true when the duty is lost.
func (m *Manager) watch(fence any) bool {
	live := map[string]time.Time{} // id -> when it is due (re-read then)
	gone := map[string]bool{}      // ended records whose deletion is in the heap
	var h dueHeap
	// ended records this peer did not see end (they ended before it took the duty, or between two of its
	// lists) are found by a sweep of the ended folder once per Retention, and go Retention after it: kept a
	// little longer, never read
	var lastSweep time.Time
	sweep := func(now time.Time) bool {
		ids, err := m.reg.EndedLeases()
		if err != nil {
			m.log.Warn("lease watcher: could not list the ended leases", "err", err)
			return false
		}
		for _, id := range ids {
			if !gone[id] {
				gone[id] = true
				m.recordEnded(id) // its peer may have been lost before it recorded the end (ended.go)
				heap.Push(&h, due{id, now.Add(m.cfg.Retention), true})
			}
		}
		lastSweep = now
		return true
	}
	var listCh <-chan struct{}
	lastList := time.Time{}
	listNow := true
	for {
		if !m.reg.Lease() {
			return true
		}
		now := m.clk.Now()
		if (lastSweep.IsZero() || now.Sub(lastSweep) >= m.cfg.Retention) && !sweep(now) {
			return true
		}
		if listNow && now.Sub(lastList) >= listInterval {
			ids, ch, err := m.reg.Leases()
			if err != nil {
				m.log.Warn("lease watcher: could not list the leases", "err", err)
				return true
			}
			listCh, lastList, listNow = ch, now, false
			seen := make(map[string]bool, len(ids))
			for _, id := range ids {
				seen[id] = true
				if _, ok := live[id]; !ok {
					live[id] = now
					heap.Push(&h, due{id: id, at: now}) // read it now
				}
			}
			for id := range live {
				if !seen[id] { // ended: its record goes after the retention
					delete(live, id)
					gone[id] = true
					m.recordEnded(id)
					heap.Push(&h, due{id, now.Add(m.cfg.Retention), true})
				}
			}
		}
		for h.Len() > 0 && !h[0].at.After(now) {
			d := heap.Pop(&h).(due)
			if d.ended {
				if !m.endCommitted(d.id) { // the record holds the end until the history does
					heap.Push(&h, due{d.id, now.Add(min(m.cfg.Retention, time.Minute)), true})
					continue
				}
				if err := m.reg.DeleteEnded(d.id); err != nil {
					m.log.Warn("lease watcher: could not delete an ended lease's record", "execution_id", d.id, "err", err)
					heap.Push(&h, due{d.id, now.Add(retryPause), true})
					continue
				}
				delete(gone, d.id)
				continue
			}
			if at, ok := live[d.id]; !ok || !at.Equal(d.at) {
				continue // superseded, or ended
			}
			next, err := m.look(d.id, now, fence)
			switch {
			case errors.Is(err, cluster.ErrNotWatcher):
				return true
			case err != nil:
				m.log.Warn("lease watcher: could not look at a lease", "execution_id", d.id, "err", err)
				next = now.Add(retryPause)
			case next.IsZero(): // it ended: the list's next change takes it out of live
				continue
			}
			live[d.id] = next
			heap.Push(&h, due{id: d.id, at: next})
		}
		m.setHolder(true, len(live))
		wait := rescan
		if h.Len() > 0 {
			wait = min(wait, h[0].at.Sub(m.clk.Now()))
		}
		if listNow {
			wait = min(wait, listInterval-m.clk.Now().Sub(lastList))
		}
		wait = min(wait, m.cfg.Retention-m.clk.Now().Sub(lastSweep))
		t := m.clk.NewTimer(max(wait, time.Millisecond))
		select {
		case <-m.stop:
			t.Stop()
			return false
		case <-listCh:
			listNow, listCh = true, nil
		case <-t.C():
			if m.clk.Now().Sub(lastList) >= rescan {
				listNow = true
			}
		}
		t.Stop()
	}
}

// look reads one live lease at now and applies what is due: an expiry (fenced by the duty), a cancellation
// if its job is gone, or nothing yet. It returns when to look again (zero: the lease has ended).
func (m *Manager) look(id string, now time.Time, fence any) (time.Time, error) {
	l, _, err := m.reg.ReadLease(id)
	if errors.Is(err, cluster.ErrNoLease) || err == nil && l.State.Ended() {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	ev := lease.Event{Kind: lease.Tick}
	switch {
	case m.jobGone(l.JobName):
		ev = lease.Event{Kind: lease.Cancel, Cause: "the job was deleted"}
	case now.Before(l.DueAt()):
		return l.DueAt(), nil
	}
	d, err := m.apply(id, func() lease.Event { ev.At = m.clk.Now(); return ev }, fence)
	if err != nil {
		return time.Time{}, err
	}
	if d.Lease.State.Ended() {
		return time.Time{}, nil
	}
	return d.Lease.DueAt(), nil
}
