package sharding

import (
	"context"
	"errors"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/parallel"
)

// A job whose sharding is valid but not what its strategy gives (Rebalance: an instance joined it, every owner
// still available) is not flagged at once: its fires run on the sharding it has, and the leader reshards it
// from the rebalance queue, a few jobs at a time, while no urgent resharding (an owner gone, a fire waiting)
// is under way, by a direct commit (direct.go: flagged only when an item runs). A peer that joins a cluster of 100,000 jobs makes every job's leader look again; flagged at
// once, every one of those jobs would make its next fire wait for a resharding queued behind the others.

// rebalanceWorkers bounds the jobs the rebalance queue reshards at once, each a direct commit (one round trip,
// shared with the others' in the registry's multis); an urgent resharding waits for none of them (each waits
// for the urgent work to end before it starts). With 8, a peer restarted at 100,000 jobs got its ~33,000 jobs'
// items back over ~3 minutes while the two others carried its load.
const rebalanceWorkers = 64

// urgentPause is how often a rebalance waiting for urgent reshardings looks again.
const urgentPause = 100 * time.Millisecond

// queueRebalance puts job on the rebalance queue.
func (c *Coordinator) queueRebalance(job string) { c.queueOn(c.rebalance, c.rebalanceWake, job) }

// urgentBusy reports whether reshardings that fires wait for are under way or queued: a fire's resharding
// (Reshard), the eager loop's batch, or jobs flagged for it. Jobs the rebalance queue flagged itself do not
// count.
func (c *Coordinator) urgentBusy() bool {
	if c.urgent.Load() > 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for job := range c.toReshard {
		if !c.rebalancing[job] {
			return true
		}
	}
	return false
}

// rebalanceLoop reshards the jobs on the rebalance queue.
func (c *Coordinator) rebalanceLoop() {
	defer c.wg.Done()
	for {
		jobs, ok := c.takeQueued(c.rebalanceWake, c.rebalance, false) // a burst of instances joining settles first
		if !ok {
			return
		}
		_ = parallel.For(len(jobs), rebalanceWorkers, func(i int) error {
			for c.urgentBusy() {
				if !clock.Sleep(c.clk, urgentPause, c.stop) {
					return errStopped
				}
			}
			c.rebalanceOne(jobs[i])
			return nil
		})
	}
}

var errStopped = errors.New("coordinator stopped")

// quietAt is when a job whose fire is near now (Firing) is next not, if it ever is (QuietAt); false when its fire
// is not near or its schedule is not known.
func (c *Coordinator) quietAt(job string) (time.Time, bool) {
	if c.cfg.Firing == nil || c.cfg.QuietAt == nil || !c.cfg.Firing(job) {
		return time.Time{}, false
	}
	return c.cfg.QuietAt(job)
}

// rebalanceOne reshards job if it still wants a rebalance: this peer leads it, no resharding is flagged or
// held back for a recheck, and its sharding is still valid but not the strategy's. A job that now needs more
// (an owner gone) is flagged by the flag loop instead; one whose sharding nodes are being read is looked at
// again later.
func (c *Coordinator) rebalanceOne(job string) {
	snap := c.reg.Job(job)
	if snap == nil || snap.Necessary || !c.reg.IsLeader(job) || c.recheckPending(job) {
		return
	}
	if !snap.ItemsSettled {
		c.queueRebalance(job)
		return
	}
	peers, _ := c.reg.LivePeers()
	switch c.assess(snap, peers) {
	case Rebalance:
	case Reshard:
		c.queueCheck(job)
		return
	default:
		return
	}
	if c.reshardDirectly(job) {
		return
	}
	if at, ok := c.quietAt(job); ok {
		// a fire of the job is near: looked at again once it is past. Flagged now, the flag could land after
		// this peer's own fire had found the sharding ready and before the other peers' fires looked: they
		// waited their 30 s for a resharding that only the next fire made, and skipped the fire (a restart at
		// 100,000 jobs: a rebalance towards the restarted peer flagged 1 s before the fire missed 4 fires,
		// docs/benchmarks.md run 35). The sharding is valid as it is meanwhile.
		c.recheckLater(job, at)
		return
	}
	// an item runs, or a fire of the job is near and it has no quiet moment (a job firing every few seconds):
	// flagged, and resharded once the item ends or by the fire (which waits for it on every peer)
	c.mu.Lock()
	c.rebalancing[job] = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.rebalancing, job)
		c.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(c.base, directWait)
	defer cancel()
	err := c.flagOnce(ctx, job, func(s *cluster.JobSnapshot) bool { return c.assess(s, peers) == Rebalance })
	if err != nil && !errors.Is(err, errFlagged) {
		c.log.Warn("could not flag a rebalance", "job", job, "err", err)
		c.queueCheck(job) // looked at again by the flag loop, which flags it or queues it here
		return
	}
	c.reshardNow(job)
}
