package engine

import (
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/workflow"
)

// Cancelling a run stops its running nodes' items. The step that ends the run CANCELLED posts, in its
// transaction, one fire cancel per node fire it stops (cluster.FireCancel); then the engine deletes the
// fire's triggers no instance took yet. Every peer's Stopper watches the cancels and tells its executor,
// which ends the fire's items in flight there as the job's CANCEL_PREVIOUS overlap policy does: the request
// is aborted, an accepted item's lease is cancelled (its next heartbeat answers 409 execution-cancelled), and
// the item is recorded CANCELLED. The duty holder drops cancels older than cancelKeep.

// cancelRegistry is what the engine needs for cancels (part of Registry).
type cancelRegistry interface {
	FireCancelNames() ([]string, error)
	ReadFireCancel(name string) (cluster.FireCancel, bool, error)
	DropFireCancel(fence any, name string) error
}

// cancelKeep is how long a fire cancel stays: every live peer has seen it long before (a peer that starts
// later has none of the fire's items in flight).
const cancelKeep = 10 * time.Minute

// stoppedFires are the cancels of the node fires that were running before a step and are cancelled after it.
func stoppedFires(before, after workflow.Run, now time.Time) []cluster.FireCancel {
	var out []cluster.FireCancel
	for _, n := range before.Nodes {
		if n.State != workflow.NodeRunning || n.Fire == "" {
			continue
		}
		if a, ok := after.Node(n.Name); ok && a.State == workflow.NodeCancelled {
			out = append(out, cluster.FireCancel{Job: n.Job, Fire: n.Fire, Reason: after.Reason, At: now.UTC()})
		}
	}
	return out
}

// dropTriggers deletes the triggers of stopped fires that no instance took yet (fenced, version-checked: a
// trigger taken meanwhile starts its items, which the cancel stops on that peer).
func (d *duty) dropTriggers(stops []cluster.FireCancel) {
	for _, c := range stops {
		waits, err := d.e.reg.WaitingTriggers(c.Job)
		if err != nil {
			continue
		}
		for _, w := range waits {
			if dispatch.FireKey(w.Request.RequestedAt, "t"+w.Request.ID) == c.Fire {
				_ = d.e.reg.HandOnTrigger(d.fence, c.Job, w, nil)
			}
		}
	}
}

// dropOldCancels deletes the fire cancels older than cancelKeep (at most once a minute).
func (d *duty) dropOldCancels() {
	now := d.e.clk.Now()
	if now.Sub(d.cancelsAt) < time.Minute {
		return
	}
	d.cancelsAt = now
	names, err := d.e.reg.FireCancelNames()
	if err != nil {
		return
	}
	for _, n := range names {
		c, ok, err := d.e.reg.ReadFireCancel(n)
		if err != nil {
			return
		}
		if ok && now.Sub(c.At) < cancelKeep {
			break // the rest are younger
		}
		if err := d.e.reg.DropFireCancel(d.fence, n); err != nil {
			return
		}
	}
}

// StopperRegistry is what a Stopper needs from the registry (cluster.Registry satisfies it).
type StopperRegistry interface {
	WatchFireCancels() (map[string]cluster.FireCancel, <-chan struct{}, error)
}

// FireCanceller ends a fire's items in flight on this peer (dispatch.Executor satisfies it).
type FireCanceller interface {
	CancelFire(job, fire, reason string) int
}

var (
	_ StopperRegistry = (*cluster.Registry)(nil)
	_ FireCanceller   = (*dispatch.Executor)(nil)
)

// Stopper runs on every peer: it tells the executor each fire cancel once.
type Stopper struct {
	reg  StopperRegistry
	exec FireCanceller
	clk  clock.Clock
	log  *slog.Logger
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// NewStopper returns a Stopper; Start it.
func NewStopper(reg StopperRegistry, exec FireCanceller, clk clock.Clock, log *slog.Logger) *Stopper {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Stopper{reg: reg, exec: exec, clk: clk, log: log, stop: make(chan struct{})}
}

// Start watches the fire cancels until Stop.
func (s *Stopper) Start() {
	s.wg.Add(1)
	go s.run()
}

// Stop ends the watch and waits for it; safe twice and before Start.
func (s *Stopper) Stop() {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
}

func (s *Stopper) run() {
	defer s.wg.Done()
	seen := map[string]bool{}
	for {
		cancels, changed, err := s.reg.WatchFireCancels()
		if err != nil {
			s.log.Warn("workflow cancels: could not read them", "err", err)
			if changed == nil && !clock.Sleep(s.clk, retryPause, s.stop) {
				return
			}
		}
		next := make(map[string]bool, len(cancels))
		for name, c := range cancels {
			next[name] = true
			if seen[name] {
				continue
			}
			if n := s.exec.CancelFire(c.Job, c.Fire, c.Reason); n > 0 {
				s.log.Info("workflow run cancelled: its node's items here stopped", "job", c.Job, "fire", c.Fire, "items", n)
			}
		}
		seen = next
		if changed == nil {
			continue
		}
		select {
		case <-s.stop:
			return
		case <-changed:
		}
	}
}
