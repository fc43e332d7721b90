package sharding

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/parallel"
)

// A job whose cluster changed (an instance left or joined it, its leader changed) is judged by its leader
// (flagAll) and, when its sharding must change, resharded at once by a direct commit: no necessary flag
// first, no processing node, no read of its running items. The commit carries the leader's guard and fences
// every existing item against a run (CommitSharding), so a job with an item running is refused as a whole and
// only then flagged, for the eager loop or its next fire to reshard once the item ends, as ElasticJob's leader
// does. A peer that leaves thousands of jobs made each cost a flag, a half-second debounce, a read of its
// running items, the processing node and the commit, four round trips, while the fires of those jobs waited;
// the direct commit is one, shared with the other jobs' commits in the registry's multis.

// A resharding that is not a fire's commits only while no fire of the job is being decided (Firing): a commit
// between the hand-off of a fire and its items' begins could move an item after the peer gaining it had
// decided its items of the fire and before the peer losing it began it (its begin, fenced by the owner's
// version, then fails), and neither would run it. Near a fire the job is flagged instead, and the fire
// reshards it (its peers wait for that, and the resharding gives the items only to instances that hold it).

// errFiring: a fire of the job is near, or one held for its last resharding may not have begun its items
// yet; the resharding is left to the fire.
var errFiring = errors.New("a fire of the job is near")

// commitSettle is how long after a resharding of a job a resharding that is not a fire's waits: a fire held
// for the first (its scheduled time passed while its peers waited) decides its items once it is committed and
// begins them a round trip later, which a loaded ZooKeeper made 5 s; a second commit in between moved an item
// the fire's peer had decided on, and neither ran it (a restart at 30,000 jobs: the new leader's fire
// resharded a job, its reconcile flagged it, and the flag's resharding 4 s later gave the item to the
// restarted peer).
const commitSettle = 10 * time.Second

// nearAFire reports whether a resharding that is not a fire's must wait: a fire of the job is near (Firing),
// or this peer saw the job's owners change within CommitSettle (snap.OwnersChangedAt: its own commit, applied
// to its cache as it is made, or another leader's, read; the registry and the coordinator share a peer's clock).
func (c *Coordinator) nearAFire(snap *cluster.JobSnapshot) bool {
	if c.cfg.Firing != nil && c.cfg.Firing(snap.Name) {
		return true
	}
	return c.cfg.CommitSettle > 0 && !snap.OwnersChangedAt.IsZero() && c.clk.Since(snap.OwnersChangedAt) < c.cfg.CommitSettle
}

// reshardMode is how a resharding treats running items.
type reshardMode int

const (
	// reshardWait waits until no item runs (a fire's resharding: Reshard).
	reshardWait reshardMode = iota
	// reshardEager reads the running items and leaves a job with one running flagged for its next fire.
	reshardEager
	// reshardDirect reads nothing and creates no processing node: the commit's fence refuses if an item runs.
	reshardDirect
	// reshardFire is a fire's first attempt (Reshard): as reshardDirect, and not put off for being near a fire
	// (it is that fire's); when the fence refuses, the fire's resharding waits for the running items.
	reshardFire
)

// directWait bounds a direct resharding: a commit through the batcher, which a saturated ZooKeeper may hold.
const directWait = 30 * time.Second

// settlePause is how long the flag loop waits before it looks again at jobs an instance left whose sharding
// nodes were still being read (a leader's own commit is read back through its watch events).
const settlePause = 200 * time.Millisecond

// flagWorkers bounds the jobs judged and resharded or flagged at once: their commits and creates share the
// registry's multis.
const flagWorkers = 64

// flagAll judges the queued jobs (flag: queued by queueFlag or queueRemoved, only[job] for the latter; checks:
// queued by queueCheck, assessed with the live peers) and reshards those that need it (reshardOrFlag), many at
// once. Each job is judged just before, from a snapshot taken then: judged seconds earlier, a job its fire
// resharded meanwhile (an owner gone) was flagged again, and the fire, which reshards once, waited for the
// second resharding behind thousands of others. A job resharded here at that moment is left to that
// resharding (it looks again at instances that changed while it computed). A job that could be neither
// resharded nor flagged is queued again (ok false); unsettled lists the jobs only an instance left whose
// sharding nodes were being read: judged from those, an own commit not read back yet looked like an owner
// still gone.
func (c *Coordinator) flagAll(flag []string, only map[string]bool, checks []string, peers []cluster.Identity) (unsettled []string, ok bool) {
	var failed atomic.Bool
	var mu sync.Mutex
	_ = parallel.For(len(flag)+len(checks), flagWorkers, func(i int) error {
		check := i >= len(flag)
		var job string
		if check {
			job = checks[i-len(flag)]
		} else {
			job = flag[i]
		}
		snap := c.reg.Job(job)
		if snap == nil || snap.Necessary || !c.reg.IsLeader(job) || c.reshardInFlight(job) {
			return nil
		}
		var v Verdict
		switch {
		case check:
			v = c.assess(snap, peers)
		case only[job] && !snap.ItemsSettled:
			mu.Lock()
			unsettled = append(unsettled, job)
			mu.Unlock()
			return nil
		default:
			v = c.flagWanted(snap, only[job])
		}
		switch v {
		case Rebalance:
			c.queueRebalance(job)
		case Reshard:
			judge := func(s *cluster.JobSnapshot) bool { return c.flagWanted(s, only[job]) == Reshard }
			if check {
				judge = func(s *cluster.JobSnapshot) bool { return c.assess(s, peers) == Reshard }
			}
			if !c.reshardOrFlag(job, judge) {
				failed.Store(true)
			}
		}
		return nil
	})
	return unsettled, !failed.Load()
}

// reshardOrFlag reshards job by a direct commit, or, when that cannot be done now (an item runs, a fire of
// the job is near, the commit failed), sets leader/sharding/necessary: the eager loop or the job's next fire
// reshards it then. ok is false when the job could be neither resharded nor flagged; it is queued again.
// judge says whether a snapshot of the job still needs a resharding (flagOnce).
func (c *Coordinator) reshardOrFlag(job string, judge func(*cluster.JobSnapshot) bool) (ok bool) {
	c.urgent.Add(1) // the rebalance queue waits for these, not for the judging of jobs that need none
	defer c.urgent.Add(-1)
	if c.reshardDirectly(job) {
		return true
	}
	ctx, cancel := context.WithTimeout(c.base, directWait)
	defer cancel()
	err := c.flagOnce(ctx, job, judge)
	if err != nil && !errors.Is(err, errFlagged) {
		c.log.Warn("could not flag resharding", "job", job, "err", err)
		c.queueFlag(job)
		return false
	}
	return true
}

// errFlagged: the job was flagged, not resharded (flagOnce); a fire's resharding that shared the call runs
// its own.
var errFlagged = errors.New("flagged for resharding")

// putOff reports whether a resharding attempt was put off by design: an item runs (the commit's fence refused,
// errItemsRunning), a fire of the job is near (errFiring), or the job was flagged instead (errFlagged).
func putOff(err error) bool {
	return errors.Is(err, errItemsRunning) || errors.Is(err, errFiring) || errors.Is(err, errFlagged)
}

// flagOnce sets job's flag as the job's single flight (single): no resharding of it runs here meanwhile, and it
// is judged again first (judge, on a snapshot taken then), so that a resharding a fire made since the job
// was refused a direct one (near that fire) is not followed by a flag it no longer needs. Set while a fire's
// resharding ran, a flag could land after that resharding had built its commit without the flag's removal,
// and every peer's next fire waited 30 s for another. A fire's resharding that shares this call runs its own
// afterwards (errFlagged), which removes the flag.
func (c *Coordinator) flagOnce(ctx context.Context, job string, judge func(*cluster.JobSnapshot) bool) error {
	return c.single(ctx, job, func() error {
		snap := c.reg.Job(job)
		if snap == nil || snap.Necessary || !snap.IsLeader() || !judge(snap) {
			return nil
		}
		created, err := c.reg.SetNecessary(job)
		if err != nil {
			return err
		}
		if created {
			c.log.Info("resharding flagged: the cluster changed", "job", job)
		}
		return errFlagged
	})
}

// reshardDirectly reshards job by a direct commit (reshardDirect). It reports whether that is all the job
// needs: resharded, or not led here (any more); false when an item runs or the commit failed.
func (c *Coordinator) reshardDirectly(job string) bool {
	ctx, cancel := context.WithTimeout(c.base, directWait)
	err := c.reshardOnce(ctx, job, reshardDirect)
	cancel()
	switch {
	case err == nil, errors.Is(err, cluster.ErrNotLeader):
		return true
	case !putOff(err):
		c.log.Info("direct resharding failed: flagged instead", "job", job, "err", err)
	}
	return false
}

// reshardInFlight reports whether a resharding of job runs here now.
func (c *Coordinator) reshardInFlight(job string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight[job] != nil
}
