package sharding

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/parallel"
)

// Registry is what the coordinator needs from the ZooKeeper registry (cluster.Registry satisfies it).
type Registry interface {
	Job(name string) *cluster.JobSnapshot
	// Led: the jobs this peer leads, with their reconcileIntervalMinutes, servers and instances, read without
	// their snapshots.
	Led() []cluster.LedJob
	IsLeader(job string) bool
	OnEvent(fn func(cluster.Event))
	SetNecessary(job string) (bool, error)
	BeginResharding(job string) error
	CommitSharding(job string, owners []string, unfenced map[int]bool) error
	RunningItems(job string, n int) (map[int]cluster.Running, error)
	WaitGone(ctx context.Context, paths []string) error
	DeleteServer(job, ip string) error
	Paths() cluster.Paths
	LivePeers() ([]cluster.Identity, bool)
	InstancesRegistered(job string, ids []string) (map[string]time.Time, error)
	// InstancesJoinedBefore: every instance now on job joined it before cutoff, as the registry saw them join.
	InstancesJoinedBefore(job string, cutoff time.Time) bool
}

// Observer counts reshardings for metrics.
type Observer interface {
	Resharded(job string, items int, took time.Duration)
}

type nopObserver struct{}

func (nopObserver) Resharded(string, int, time.Duration) {}

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	Registry Registry
	Clock    clock.Clock
	Logger   *slog.Logger
	Observer Observer
	// ServerGC: a servers/{ip} node that is ENABLED (or empty) and has had no online instance for this long is
	// removed by the job's leader at reconcile (default 1 h; 0 keeps them forever). DISABLED nodes are kept:
	// they record an operator's decision.
	ServerGC time.Duration
	// ReconcileTick is how often the reconcile loop looks at the jobs this peer leads (default 1 min); each
	// job is reconciled every reconcileIntervalMinutes.
	ReconcileTick time.Duration
	// Firing, if set, reports whether a fire of the job may be deciding or beginning its items on some peer
	// now (dispatch.Scheduler.Firing): a resharding not made by a fire waits until it is not (direct.go).
	Firing func(job string) bool
	// QuietAt, if set, tells when the job is next not Firing, and whether it ever is (dispatch.Scheduler.QuietAt):
	// a rebalance put off by a fire waits for that moment rather than flagging the job (rebalance.go).
	QuietAt func(job string) (time.Time, bool)
	// Due, if set, tells when a job's fires next need its sharding (dispatch.Scheduler.Due): the jobs
	// judged or resharded together go earliest first (zero: last), not in the order of their names.
	Due func(job string) time.Time
	// CommitSettle is how long after the job's owners last changed (as this peer saw them) a resharding that
	// is not a fire's waits (default commitSettle; negative: not at all).
	CommitSettle time.Duration
	// FireLead and ReshardWait are the executors' (dispatch.ExecutorConfig: the hand-off's lead, and a fire's
	// wait for its sharding, default 30 s); Fires (dispatch.Scheduler.Fires), if set, the job's last fire handed
	// off here and its schedule (nil: not scheduled here). A resharding at a held fire reads from them which fires
	// can still be held (Holding; without Fires every hold is taken to last ReshardWait).
	FireLead    time.Duration
	ReshardWait time.Duration
	Fires       func(job string) (last time.Time, next func(time.Time) time.Time)
}

// Coordinator is the leader's side of elastic sharding: it flags resharding when the cluster changes, runs
// ElasticJob's resharding protocol at the next fire, and reconciles (ElasticJob's self-repair).
type Coordinator struct {
	cfg CoordinatorConfig
	reg Registry
	log *slog.Logger
	clk clock.Clock

	flags chan string // jobs whose necessary flag the leader must set
	eager chan struct{}
	mu    sync.Mutex
	// queued holds the jobs whose necessary flag the leader must set; true: only an instance left them, and
	// a sharding that is right already is left alone (queueRemoved)
	queued map[string]bool
	// checked holds the jobs whose sharding the leader looks at (Assess) before flagging resharding: a
	// leader change, an instance that joined, a peer that left.
	checked map[string]bool
	// toReshard holds the jobs this peer leads whose necessary flag is set: they are resharded as soon as no
	// item runs, instead of waiting for their next fire (which then finds the assignment ready).
	toReshard map[string]bool
	// inflight single-flights Reshard per job
	inflight map[string]*reshardCall
	// lastReconcile and offlineSince are leader memory; a new leader starts afresh.
	lastReconcile map[string]time.Time
	offlineSince  map[string]time.Time // job + "\x00" + ip
	// holds counts, per job and scheduled time, the fires waiting here for the job's sharding (Hold);
	// rechecks holds when a job whose resharding left instances out is to be looked at again (recheckLater).
	holds    map[string]map[time.Time]int
	rechecks map[string]time.Time
	recheck  chan struct{}
	// rebalance holds the jobs to reshard when no urgent resharding is under way (rebalance.go); rebalancing
	// the ones whose flag that queue set; urgent counts the fires' reshardings and the eager loop's batches.
	rebalance     map[string]bool
	rebalancing   map[string]bool
	rebalanceWake chan struct{}
	urgent        atomic.Int32

	stop chan struct{}
	// base is cancelled when the coordinator stops: the reshardings it starts on its own run within it
	base       context.Context
	cancelBase context.CancelFunc
	wg         sync.WaitGroup
	once       sync.Once
	run        bool
}

type reshardCall struct {
	done chan struct{}
	err  error
	// sharers counts the calls waiting for this one's outcome (under the coordinator's lock)
	sharers int
}

// NewCoordinator returns a coordinator; Start subscribes it to the registry.
func NewCoordinator(cfg CoordinatorConfig) *Coordinator {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.ReconcileTick <= 0 {
		cfg.ReconcileTick = time.Minute
	}
	if cfg.ReshardWait <= 0 {
		cfg.ReshardWait = 30 * time.Second
	}
	if cfg.CommitSettle == 0 {
		cfg.CommitSettle = commitSettle
	}
	base, cancelBase := context.WithCancel(context.Background())
	return &Coordinator{
		base: base, cancelBase: cancelBase,
		cfg: cfg, reg: cfg.Registry, log: cfg.Logger, clk: cfg.Clock,
		flags: make(chan string, 1), eager: make(chan struct{}, 1), queued: map[string]bool{}, checked: map[string]bool{}, toReshard: map[string]bool{},
		inflight:      map[string]*reshardCall{},
		lastReconcile: map[string]time.Time{}, offlineSince: map[string]time.Time{}, stop: make(chan struct{}),
		holds: map[string]map[time.Time]int{}, rechecks: map[string]time.Time{}, recheck: make(chan struct{}, 1),
		rebalance: map[string]bool{}, rebalancing: map[string]bool{}, rebalanceWake: make(chan struct{}, 1),
	}
}

// Start subscribes to registry events and starts the flag and reconcile loops.
func (c *Coordinator) Start(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run {
		return nil
	}
	c.run = true
	c.reg.OnEvent(c.onEvent)
	c.wg.Add(5)
	go c.rebalanceLoop()
	go c.flagLoop()
	go c.reconcileLoop()
	go c.eagerLoop()
	go c.recheckLoop()
	return nil
}

// Stop ends the loops and waits for them. Safe twice and before Start.
func (c *Coordinator) Stop() {
	c.once.Do(func() { close(c.stop); c.cancelBase() })
	c.wg.Wait()
}

// onEvent runs on registry workers: it only queues work.
func (c *Coordinator) onEvent(ev cluster.Event) {
	switch ev.Kind {
	case cluster.InstancesChanged:
		if len(ev.Removed) > 0 {
			c.queueRemoved(ev.Job)
		} else {
			c.queueCheck(ev.Job) // a peer registering on a job sharded at its creation changes nothing
		}
	case cluster.ServersChanged:
		// a server node written by a peer registering is no change; ENABLED <-> DISABLED is, and Assess sees it
		c.queueCheck(ev.Job)
	case cluster.PeersChanged:
		if len(ev.Removed) > 0 { // a peer that left before it registered on a job may own items of it
			led := c.reg.Led() // in one pass, not a lookup by name of every job as a survivor's restart begins
			slices.SortFunc(led, func(a, b cluster.LedJob) int { return cmp.Compare(a.Name, b.Name) })
			for _, l := range led {
				c.queueCheck(l.Name)
			}
		}
	case cluster.LeaderChanged:
		if snap := c.reg.Job(ev.Job); snap != nil && snap.IsLeader() {
			c.queueCheck(ev.Job) // a new leader reshards before its first fire, unless the sharding is right
			c.queueReshard(ev.Job)
		} else if snap != nil && snap.Leader != "" {
			c.wakeIfQueued(ev.Job) // another peer leads it: a job kept queued while its leader was away leaves
		}
	case cluster.NecessaryChanged, cluster.JobAdded:
		if snap := c.reg.Job(ev.Job); snap != nil && snap.Necessary && snap.IsLeader() && !c.isRebalancing(ev.Job) {
			c.queueReshard(ev.Job)
		}
	case cluster.JobUpdated:
		snap := c.reg.Job(ev.Job)
		if snap == nil || ev.PrevConfig == nil {
			return
		}
		if ev.PrevConfig.ShardingTotalCount != snap.Config.ShardingTotalCount ||
			ev.PrevConfig.JobShardingStrategyType != snap.Config.JobShardingStrategyType {
			c.queueFlag(ev.Job)
		}
	}
}

func (c *Coordinator) queueFlag(job string) {
	c.mu.Lock()
	c.queued[job] = false
	c.mu.Unlock()
	c.wake(job)
}

// wake tells the flag loop that job is queued.
func (c *Coordinator) wake(job string) {
	select {
	case c.flags <- job:
	default:
	}
}

// queueRemoved queues a job an instance left: it is flagged unless its sharding is already what the strategy
// gives the instances that remain (flagWanted), as when a fire found the instance gone and its leader
// resharded at once (dispatch's ensureSharded) before this event was handled.
func (c *Coordinator) queueRemoved(job string) {
	c.markRemoved(job)
	c.wake(job)
}

// markRemoved queues jobs an instance left (queueRemoved), without waking the loop; a job queued to be flagged
// anyway stays so.
func (c *Coordinator) markRemoved(jobs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, job := range jobs {
		if _, ok := c.queued[job]; !ok {
			c.queued[job] = true
		}
	}
}

// wakeIfQueued wakes the flag loop when job is queued.
func (c *Coordinator) wakeIfQueued(job string) {
	c.mu.Lock()
	_, ok := c.queued[job]
	c.mu.Unlock()
	if ok {
		c.wake(job)
	}
}

// isRebalancing reports whether the rebalance queue is resharding job (it set the job's flag itself).
func (c *Coordinator) isRebalancing(job string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rebalancing[job]
}

func (c *Coordinator) queueCheck(job string) {
	c.mu.Lock()
	c.checked[job] = true
	c.mu.Unlock()
	c.wake(job)
}

func (c *Coordinator) queueReshard(job string) { c.queueOn(c.toReshard, c.eager, job) }

// queueOn adds job to set (a map of the coordinator's, under its lock) and wakes the loop behind ch.
func (c *Coordinator) queueOn(set map[string]bool, ch chan struct{}, job string) {
	c.mu.Lock()
	set[job] = true
	c.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

// eagerDebounce lets a burst of changes (peers registering one after another) settle into one resharding.
const eagerDebounce = 500 * time.Millisecond

// eagerWorkers bounds the jobs resharded at once: a resharding is three round trips (its running items read,
// processing created, the commit), the last two batched with the others'.
const eagerWorkers = 64

// takeQueued waits for ch, lets a burst settle (eagerDebounce) and takes the jobs queued in set. An urgent
// take counts in urgent before the jobs leave set, so urgentBusy never sees them in neither; the caller
// takes it back off once they are done. ok is false when the coordinator stops.
func (c *Coordinator) takeQueued(ch chan struct{}, set map[string]bool, urgent bool) (jobs []string, ok bool) {
	select {
	case <-c.stop:
		return nil, false
	case <-ch:
	}
	if !clock.Sleep(c.clk, eagerDebounce, c.stop) {
		return nil, false
	}
	if urgent {
		c.urgent.Add(1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	jobs = slices.Sorted(maps.Keys(set))
	clear(set)
	return jobs, true
}

// eagerLoop reshards the jobs this peer leads as soon as they need it and no item of theirs runs, so fires
// don't wait for a resharding. A job whose items run is left to its next fire, which waits for them.
func (c *Coordinator) eagerLoop() {
	defer c.wg.Done()
	for {
		jobs, ok := c.takeQueued(c.eager, c.toReshard, true)
		if !ok {
			return
		}
		c.byDue(jobs)
		_ = parallel.For(len(jobs), eagerWorkers, func(i int) error {
			c.eagerReshard(jobs[i])
			return nil
		})
		c.urgent.Add(-1)
	}
}

// byDue orders jobs by when their fires next need their sharding (Due), earliest first, then by name; jobs
// with no due time go last. A stopped peer leaves thousands of jobs to reshard at the pace ZooKeeper takes
// their commits: in name order, a job whose fire came first could wait for its resharding behind the
// rest and miss it.
func (c *Coordinator) byDue(jobs []string) {
	if c.cfg.Due == nil || len(jobs) < 2 {
		slices.Sort(jobs)
		return
	}
	due := make(map[string]time.Time, len(jobs))
	for _, job := range jobs {
		due[job] = c.cfg.Due(job)
	}
	slices.SortFunc(jobs, func(a, b string) int { return cmp.Or(cluster.CompareDue(due[a], due[b]), cmp.Compare(a, b)) })
}

func (c *Coordinator) eagerReshard(job string) {
	snap := c.reg.Job(job)
	if snap == nil || !snap.Necessary || !c.reg.IsLeader(job) {
		return
	}
	c.reshardNow(job)
}

// reshardNow reshards job unless items of it run or a fire of it is near (errFiring): the job then stays
// flagged, and its next fire reshards it once they end, as ElasticJob's leader does.
func (c *Coordinator) reshardNow(job string) {
	ctx, cancel := context.WithTimeout(c.base, 30*time.Second)
	defer cancel()
	err := c.reshardOnce(ctx, job, reshardEager)
	switch {
	case err == nil, putOff(err), errors.Is(err, cluster.ErrNotLeader):
	default:
		c.log.Info("resharding deferred to the next fire", "job", job, "err", err)
	}
}

// flagLoop sets leader/sharding/necessary for the jobs this peer leads whose cluster changed.
func (c *Coordinator) flagLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.flags:
		}
		unsettled, ok := c.judgeQueued()
		if !ok && !clock.Sleep(c.clk, time.Second, c.stop) {
			return
		}
		if len(unsettled) > 0 {
			// judged again once their sharding nodes are read: the loop looks at them after a pause
			c.markRemoved(unsettled...)
			if !clock.Sleep(c.clk, settlePause, c.stop) {
				return
			}
			c.wake("")
		}
	}
}

// judgeQueued judges the jobs queued for the flag loop (flagAll) and returns those to judge again once their
// sharding nodes are read (unsettled); ok is false when a job could be neither resharded nor flagged.
func (c *Coordinator) judgeQueued() (unsettled []string, ok bool) {
	// the sets are taken whole and made anew: a check is looked up in the queued set rather than in a
	// list of it (that was a scan per checked job: quadratic when a registration queues thousands of
	// both), and a set that once held a registration's thousands of jobs is not cloned or swept at
	// every wake afterwards (a Go map keeps its peak's buckets; cloning one copies them)
	c.mu.Lock()
	assessable, checked := c.queued, c.checked
	c.queued, c.checked = map[string]bool{}, map[string]bool{}
	c.mu.Unlock()
	var leaderless, flag []string
	for job, only := range assessable {
		if !c.reg.IsLeader(job) || (only && c.recheckPending(job)) {
			// an instance that left a job resharded at a held fire: that resharding was over the instances
			// that remained (a fire finds an owner that left since gone and reshards), and the ones it left
			// out are looked at when the recheck is due
			if only && c.leaderAway(job) {
				leaderless = append(leaderless, job)
			}
			continue
		}
		flag = append(flag, job)
	}
	var checks []string
	for job := range checked {
		if _, queued := assessable[job]; !queued && c.reg.IsLeader(job) && !c.recheckPending(job) {
			checks = append(checks, job) // a job resharded at a held fire is looked at when its recheck is due
		}
	}
	var peers []cluster.Identity
	if len(checks) > 0 {
		peers, _ = c.reg.LivePeers()
	}
	c.byDue(flag)
	c.byDue(checks)
	unsettled, ok = c.flagAll(flag, assessable, checks, peers)
	// a job an instance left while its leader was away (see leaderAway) stays queued, without waking the
	// loop, for the peer that becomes the leader: an operator's removal of a live peer's instance is not a
	// peer still registering, which a new leader's own check would take it for; its LeaderChanged wakes
	// the loop, and another peer's leadership drops the job there
	c.markRemoved(leaderless...)
	return unsettled, ok
}

// leaderAway reports whether job has no leader now, or one whose instance has left the job (an operator
// removed the leader's own instance node: it steps down).
func (c *Coordinator) leaderAway(job string) bool {
	snap := c.reg.Job(job)
	return snap != nil && (snap.Leader == "" || !snap.Online(snap.Leader))
}

// flagWanted says whether a queued job is to be flagged for resharding (Reshard): always, unless only an
// instance left it (assessable) and its settled sharding is what the strategy gives its available instances
// (Keep: a second resharding would write the same owners), or every owner is still available (Rebalance: the
// instance that left owned nothing). A live peer not registered on the job counts for nothing here (no
// Coming): an operator's removal of a live peer's instance must move its items.
func (c *Coordinator) flagWanted(snap *cluster.JobSnapshot, assessable bool) Verdict {
	if !assessable || !snap.ItemsSettled {
		return Reshard
	}
	return c.assess(snap, nil) // never Coming: no peer counts as coming here
}

// assess looks at a job's committed sharding (Assess) with the job's available instances and the live peers
// that have not registered on it yet.
func (c *Coordinator) assess(snap *cluster.JobSnapshot, peers []cluster.Identity) Verdict {
	strategy, err := StrategyFor(snap.Config.JobShardingStrategyType)
	if err != nil {
		return Reshard // the resharding reports it
	}
	a := Assessment{Job: snap.Name, Strategy: strategy, Owners: make([]string, snap.Config.ShardingTotalCount)}
	for i := range a.Owners {
		if it := snap.Item(i); it.Exists {
			a.Owners[i] = it.Owner
		}
	}
	for id, ip := range snap.Instances {
		if !snap.ServerDisabled(ip) {
			a.Available = append(a.Available, Instance{ID: id, ServerIP: ip})
		}
	}
	for _, p := range peers {
		if !snap.Online(p.InstanceID) && !snap.ServerDisabled(p.ServerIP) {
			a.Coming = append(a.Coming, Instance{ID: p.InstanceID, ServerIP: p.ServerIP})
		}
	}
	return Assess(a)
}

// errItemsRunning: an eager resharding found items running and left the job to its next fire.
var errItemsRunning = errors.New("items are running")

// reshardOnce runs the protocol once per job at a time: a call while another runs waits for it and shares
// its outcome. Except in reshardWait, it returns errItemsRunning instead of waiting for running items.
func (c *Coordinator) reshardOnce(ctx context.Context, job string, m reshardMode) error {
	return c.single(ctx, job, func() error { return c.reshard(ctx, job, m) })
}

// single runs fn for job unless a call for job runs already, whose outcome it then shares: the job's
// reshardings, and the setting of its flag (flagOnce), run one at a time.
func (c *Coordinator) single(ctx context.Context, job string, fn func() error) error {
	c.mu.Lock()
	if call := c.inflight[job]; call != nil {
		call.sharers++
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	call := &reshardCall{done: make(chan struct{})}
	c.inflight[job] = call
	c.mu.Unlock()
	call.err = fn()
	c.mu.Lock()
	delete(c.inflight, job)
	c.mu.Unlock()
	close(call.done)
	return call.err
}

// Reshard reshards job as its leader at a fire: first by a direct commit (reshardFire: no read of the running
// items, no processing node; the commit's fence refuses if an item runs), and when an item runs by
// ElasticJob's resharding protocol: wait until no item runs, create the ephemeral processing node, compute
// the assignment and commit it with necessary's deletion. Concurrent calls for one job share one run.
//
// A fire's resharding is on its fire's path, and its peers' (they wait for it): at a stop of one peer of three
// at 100,000 jobs, the survivors resharded ~18,000 jobs each at their fires, and with a read of the running
// items, the processing node's create and the commit, each one after the other behind ~20,000 writes
// queued for ZooKeeper, a resharding took 10-23 s and ~4,000 fires waited their 30 s (docs/benchmarks.md,
// run 32). A direct commit is one write.
func (c *Coordinator) Reshard(ctx context.Context, job string) error {
	c.urgent.Add(1)
	defer c.urgent.Add(-1)
	err := c.reshardOnce(ctx, job, reshardFire)
	if putOff(err) && !errors.Is(err, errItemsRunning) && ctx.Err() == nil {
		// it shared an eager or direct attempt, which does not commit near a fire (this one is that fire's), or
		// the job's flagging: its own direct commit then. Going straight to the waiting protocol below made the
		// fire's resharding three steps whenever a departure's flagging was still returning as the fire came.
		err = c.reshardOnce(ctx, job, reshardFire)
	}
	for putOff(err) && ctx.Err() == nil {
		// an item runs (its fence refused), or it shared another attempt again: run its own, waiting for the
		// running items
		err = c.reshardOnce(ctx, job, reshardWait)
	}
	return err
}

func (c *Coordinator) reshard(ctx context.Context, job string, m reshardMode) error {
	start := c.clk.Now()
	if !c.reg.IsLeader(job) {
		return cluster.ErrNotLeader
	}
	for {
		snap, async, err := c.idle(ctx, job, m)
		if err != nil {
			return err
		}
		total := snap.Config.ShardingTotalCount
		var candidates []Instance
		for id, ip := range snap.Instances {
			if !snap.ServerDisabled(ip) {
				candidates = append(candidates, Instance{ID: id, ServerIP: ip})
			}
		}
		if len(candidates) == 0 {
			return fmt.Errorf("no available instance: every server of the job is disabled or offline")
		}
		candidates, later := c.holders(job, candidates, ownerGone(snap), snap.Config.Misfire)
		Sort(candidates)
		strategy, err := StrategyFor(snap.Config.JobShardingStrategyType)
		if err != nil {
			return err
		}
		owners := Owners(strategy(candidates, job, total), total)
		if (m == reshardEager || m == reshardDirect) && c.nearAFire(snap) {
			return errFiring
		}
		if m == reshardWait || m == reshardEager {
			if err := c.reg.BeginResharding(job); err != nil {
				return fmt.Errorf("create processing: %w", err)
			}
		}
		err = c.reg.CommitSharding(job, owners, async)
		if errors.Is(err, cluster.ErrItemRunning) {
			// an item began between the look for running items and the commit (its peer read the old
			// sharding), or runs (a direct resharding does not look): the commit's fence refused, so wait for
			// that run as for any other, then commit again
			if m != reshardWait {
				return errItemsRunning
			}
			c.log.Info("resharding met an item that began meanwhile: waits for it", "job", job, "err", err)
			if !clock.Sleep(c.clk, fenceRetryPause, ctx.Done()) { // the item may not be readable as running yet
				return fmt.Errorf("items still running: %w", ctx.Err())
			}
			continue
		}
		if err != nil {
			return err
		}
		took := c.clk.Since(start)
		c.cfg.Observer.Resharded(job, total, took)
		c.log.Info("resharded", "job", job, "items", total, "instances", len(candidates), "took_ms", took.Milliseconds())
		// an instance that joined or left while we computed must not be forgotten (one left out for a held
		// fire is looked at again when recheckLater says)
		if now := c.reg.Job(job); now != nil && !sameInstances(now, slices.Concat(candidates, later)) {
			c.queueCheck(job) // flagged if an owner left, rebalanced if only an instance joined
		}
		return nil
	}
}

// fenceRetryPause spaces the commits that met an item begun meanwhile, should the look for running items not
// see it yet.
const fenceRetryPause = 20 * time.Millisecond

// idle waits until no item of job runs, as ElasticJob's leader does before resharding (a job that has no
// item yet can have nothing running), and returns the job then and the items whose running node belongs to
// an accepted (async) item: those are not waited for (their work is at the receiver, their end may come to
// any peer, and their lease may last for hours). Except in reshardWait it returns errItemsRunning instead of
// waiting; a direct resharding does not look (the commit's fence refuses if an item runs).
func (c *Coordinator) idle(ctx context.Context, job string, m reshardMode) (*cluster.JobSnapshot, map[int]bool, error) {
	snap := c.reg.Job(job)
	if snap == nil {
		return nil, nil, fmt.Errorf("job %q is gone", job)
	}
	if !hasItems(snap) || m == reshardDirect || m == reshardFire {
		return snap, nil, nil
	}
	running, err := c.reg.RunningItems(job, max(snap.Config.ShardingTotalCount, len(snap.Items)))
	if err != nil {
		return nil, nil, err
	}
	async := map[int]bool{}
	var paths []string
	for i, r := range running {
		if r.Async {
			async[i] = true
			continue
		}
		paths = append(paths, c.reg.Paths().ItemNode(job, i, cluster.NodeRunning))
	}
	if len(paths) == 0 {
		return snap, async, nil
	}
	if m != reshardWait {
		return nil, nil, errItemsRunning
	}
	c.log.Info("resharding waits for running items", "job", job, "running", len(paths))
	if err := c.reg.WaitGone(ctx, paths); err != nil {
		return nil, nil, fmt.Errorf("items still running: %w", err)
	}
	return c.idle(ctx, job, m)
}

// ownerGone reports whether an item of the job has an owner that is not one of its instances now.
func ownerGone(snap *cluster.JobSnapshot) bool {
	for _, it := range snap.Items {
		if it.Exists && it.Owner != "" && !snap.Online(it.Owner) {
			return true
		}
	}
	return false
}

func hasItems(snap *cluster.JobSnapshot) bool {
	for _, it := range snap.Items {
		if it.Exists {
			return true
		}
	}
	return false
}

func sameInstances(snap *cluster.JobSnapshot, used []Instance) bool {
	var avail []string
	for id, ip := range snap.Instances {
		if !snap.ServerDisabled(ip) {
			avail = append(avail, id)
		}
	}
	if len(avail) != len(used) {
		return false
	}
	for _, in := range used {
		if !slices.Contains(avail, in.ID) {
			return false
		}
	}
	return true
}

// reconcileLoop is ElasticJob's self-repair, done by one loop for every job this peer leads: every
// reconcileIntervalMinutes a job whose item belongs to an offline instance is resharded (flagged when an item
// of it runs: direct.go), and servers/{ip} nodes of IPs that have been offline for ServerGC are removed.
func (c *Coordinator) reconcileLoop() {
	defer c.wg.Done()
	for {
		if !clock.Sleep(c.clk, c.cfg.ReconcileTick, c.stop) {
			return
		}
		c.ReconcileOnce()
	}
}

// ReconcileOnce runs one reconcile pass over the jobs this peer leads. A job's snapshot is taken only when its
// reconcile is due (every reconcileIntervalMinutes): the servers' collection needs its servers and instances
// alone (Led), and a snapshot of every led job at every tick was made again for each (they go cold
// between fires): 3.0-3.4 % of a 100,000-job peer's allocation, in one burst a minute (docs/benchmarks.md).
func (c *Coordinator) ReconcileOnce() {
	now := c.clk.Now()
	for _, led := range c.reg.Led() {
		job := led.Name
		interval := time.Duration(led.IntervalMinutes) * time.Minute
		c.mu.Lock()
		last := c.lastReconcile[job]
		due := interval > 0 && now.Sub(last) >= interval
		if due {
			c.lastReconcile[job] = now
		}
		c.mu.Unlock()
		if due {
			if snap := c.reg.Job(job); snap != nil && !snap.Necessary && c.ownerOffline(snap) {
				// judged again when the flag loop gets to it (its fire may have resharded it by then): queued to be
				// flagged whatever it looked like then, a job whose fire was near was flagged right after that
				// fire's own resharding, and its peers' fires waited for a resharding only its next fire made
				c.log.Info("reconcile: an item belongs to an offline instance; the job is looked at again", "job", job)
				c.queueCheck(job)
			}
		}
		c.collectServers(job, led.Servers, led.Instances, now)
	}
}

func (c *Coordinator) ownerOffline(snap *cluster.JobSnapshot) bool {
	for i := range snap.Config.ShardingTotalCount {
		it := snap.Item(i)
		if !it.Exists || it.Owner == "" || !snap.Online(it.Owner) {
			return true
		}
	}
	return false
}

// collectServers removes a job's servers/{ip} nodes whose IP has had no online instance for ServerGC
// (servers and instances: the job's, as Led gives them).
func (c *Coordinator) collectServers(job string, servers, instances map[string]string, now time.Time) {
	if c.cfg.ServerGC <= 0 {
		return
	}
	for ip, state := range servers {
		kept := state == cluster.ServerDisabled
		for _, at := range instances {
			if kept {
				break
			}
			kept = at == ip
		}
		if kept {
			c.mu.Lock()
			if len(c.offlineSince) > 0 { // mostly empty: no key built
				delete(c.offlineSince, job+"\x00"+ip)
			}
			c.mu.Unlock()
			continue
		}
		key := job + "\x00" + ip
		c.mu.Lock()
		since, seen := c.offlineSince[key]
		if !seen {
			c.offlineSince[key] = now
		}
		c.mu.Unlock()
		if seen && now.Sub(since) >= c.cfg.ServerGC {
			if err := c.reg.DeleteServer(job, ip); err != nil {
				c.log.Warn("could not remove an offline server node", "job", job, "ip", ip, "err", err)
				continue
			}
			c.mu.Lock()
			delete(c.offlineSince, key)
			c.mu.Unlock()
			c.log.Info("removed the node of a server offline for longer than the server GC age", "job", job, "ip", ip, "offline_since", since)
		}
	}
}
