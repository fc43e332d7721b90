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

func (m *Manager) setHolder(held bool, tracked int) {
	m.mu.Lock()
	m.holder, m.tracked = held, tracked
	m.mu.Unlock()
	m.cfg.Observer.Running(tracked)
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

// due is one lease the watcher will look at, at its time.
type due struct {
	id string
	at time.Time
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
// on the list. It returns false when the manager stops, true when the duty is lost.
func (m *Manager) watch(fence any) bool {
	known := map[string]time.Time{} // id -> when it is due (re-read then)
	ended := map[string]bool{}      // ids whose lease has ended (kept for Retention)
	var h dueHeap
	var listCh <-chan struct{}
	lastList := time.Time{}
	listNow := true
	for {
		if !m.reg.Lease() {
			return true
		}
		now := m.clk.Now()
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
				if _, ok := known[id]; !ok {
					known[id] = now
					heap.Push(&h, due{id, now}) // read it now
				}
			}
			for id := range known {
				if !seen[id] {
					delete(known, id)
					delete(ended, id)
				}
			}
		}
		for h.Len() > 0 && !h[0].at.After(now) {
			d := heap.Pop(&h).(due)
			if at, ok := known[d.id]; !ok || !at.Equal(d.at) {
				continue // superseded, or gone
			}
			next, over, err := m.look(d.id, now, fence)
			switch {
			case errors.Is(err, cluster.ErrNotWatcher):
				return true
			case errors.Is(err, cluster.ErrNoLease):
				delete(known, d.id)
				delete(ended, d.id)
				continue
			case err != nil:
				m.log.Warn("lease watcher: could not look at a lease", "execution_id", d.id, "err", err)
				next = now.Add(retryPause)
			}
			if over {
				ended[d.id] = true
			}
			known[d.id] = next
			heap.Push(&h, due{d.id, next})
		}
		m.setHolder(true, len(known)-len(ended))
		wait := rescan
		if h.Len() > 0 {
			wait = min(wait, h[0].at.Sub(m.clk.Now()))
		}
		if listNow {
			wait = min(wait, listInterval-m.clk.Now().Sub(lastList))
		}
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

// look reads one lease at now and applies what is due: an expiry (fenced by the duty), a retention that has
// passed (the record goes), or nothing yet. It returns when to look again and whether the lease has ended.
func (m *Manager) look(id string, now time.Time, fence any) (time.Time, bool, error) {
	l, version, err := m.reg.ReadLease(id)
	if err != nil {
		return time.Time{}, false, err
	}
	if l.State.Ended() {
		gone := l.EndedAt.Add(m.cfg.Retention)
		if now.Before(gone) {
			return gone, true, nil
		}
		// the peer that ended it may have died before releasing the running node: make sure it is released
		if snap := m.reg.Job(l.JobName); snap != nil {
			catchUp := snap.Config.Misfire && !snap.Config.Disabled
			if _, err := m.reg.ReleaseRunning(l.JobName, l.ShardingItem, l.ExecutionID, catchUp); err != nil {
				return now.Add(retryPause), true, err
			}
		}
		if err := m.reg.DeleteLease(id, version); err != nil {
			return now.Add(retryPause), true, err
		}
		return time.Time{}, true, cluster.ErrNoLease
	}
	ev := lease.Event{Kind: lease.Tick}
	switch {
	case m.jobGone(l.JobName):
		ev = lease.Event{Kind: lease.Cancel, Cause: "the job was deleted"}
	case now.Before(l.DueAt()):
		return l.DueAt(), false, nil
	}
	d, err := m.apply(id, func() lease.Event { ev.At = m.clk.Now(); return ev }, fence)
	if err != nil {
		return now.Add(retryPause), false, err
	}
	if d.Lease.State.Ended() {
		return d.Lease.EndedAt.Add(m.cfg.Retention), true, nil
	}
	return d.Lease.DueAt(), false, nil
}
