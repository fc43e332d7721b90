package failover

import (
	"context"
	"errors"
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

// Registry is what failover needs from the ZooKeeper registry (cluster.Registry satisfies it).
type Registry interface {
	Job(name string) *cluster.JobSnapshot
	IsLeader(job string) bool
	Lease() bool
	OnEvent(fn func(cluster.Event))
	// RunningItemsOf reads the running nodes of items 0..counts[job]-1 of each job, many to a request.
	RunningItemsOf(counts map[string]int) (map[string]map[int]cluster.Running, error)
	AddFailoverItems(job string, items []int) error
	ClearFailoverItems(job string, n int) error
	ClaimFailover(job string, item int) (cluster.Running, int32, error)
	ReadRunning(job string, item int) (cluster.Running, int32, bool, error)
	// InstanceOnline reads from ZooKeeper whether an instance is on a job now (the snapshot may lag).
	InstanceOnline(job, id string) (bool, error)
	// EndStaleRunning deletes the running node at version and records the run as the item's last (LOST).
	EndStaleRunning(job string, item int, version int32, run cluster.Running, now time.Time) error
}

// LostRecorder records an execution a vanished instance left running that nobody will run again (Lost
// satisfies it).
type LostRecorder interface {
	Record(job string, item, total int, run cluster.Running) error
}

// Runner re-runs a claimed item (dispatch.Executor satisfies it).
type Runner interface {
	RunFailover(job string, item int, run cluster.Running, runningVersion int32)
}

// Observer counts failovers for metrics.
type Observer interface {
	FailedOver(job string, items int)
}

type nopObserver struct{}

func (nopObserver) FailedOver(string, int) {}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Registry Registry
	Runner   Runner
	Clock    clock.Clock
	Logger   *slog.Logger
	Observer Observer
	// Lost, if set, records the executions that vanished instances left running in jobs whose failover is
	// off, before their running nodes are cleared.
	Lost LostRecorder
}

// Manager detects orphaned items (as a job's leader) and claims failover items (as any peer).
type Manager struct {
	cfg ManagerConfig
	reg Registry
	log *slog.Logger
	clk clock.Clock

	mu      sync.Mutex
	detect  map[string]bool // jobs whose running items the leader must scan
	claim   map[string]bool // jobs with failover items to claim
	clear   map[string]bool // jobs whose failover was switched off
	wake    chan struct{}
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	started bool
}

// NewManager returns a manager; Start subscribes it to the registry.
func NewManager(cfg ManagerConfig) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	return &Manager{cfg: cfg, reg: cfg.Registry, log: cfg.Logger, clk: cfg.Clock,
		detect: map[string]bool{}, claim: map[string]bool{}, clear: map[string]bool{},
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Start subscribes to registry events and starts the manager's loop.
func (m *Manager) Start(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return nil
	}
	m.started = true
	m.reg.OnEvent(m.onEvent)
	m.wg.Add(1)
	go m.loop()
	return nil
}

// Stop ends the loop and waits for it. Safe twice and before Start.
func (m *Manager) Stop() {
	m.once.Do(func() { close(m.stop) })
	m.wg.Wait()
}

// onEvent runs on registry workers: it only queues work. It takes the job's snapshot only for the kinds it
// acts on: a change invalidates the cached snapshot, so taking one per event rebuilt it (every item of the
// job) per event, and a peer that reads a 2,000-item job's items one event at a time built 2,000 snapshots
// of 2,000 items.
func (m *Manager) onEvent(ev cluster.Event) {
	switch ev.Kind {
	case cluster.InstancesChanged:
		if len(ev.Removed) == 0 {
			return
		}
	case cluster.LeaderChanged, cluster.FailoverItemsChanged, cluster.JobAdded, cluster.JobUpdated:
	default:
		return
	}
	snap := m.reg.Job(ev.Job)
	if snap == nil {
		return
	}
	switch ev.Kind {
	case cluster.InstancesChanged:
		if len(ev.Removed) > 0 && watched(snap) {
			m.queue(m.detect, ev.Job)
		}
	case cluster.LeaderChanged:
		// a new leader looks for orphans the old one (perhaps dead with the others) left
		if snap.IsLeader() && watched(snap) {
			m.queue(m.detect, ev.Job)
		}
	case cluster.FailoverItemsChanged, cluster.JobAdded:
		if len(snap.FailoverItems) > 0 && snap.Config.Failover {
			m.queue(m.claim, ev.Job)
		}
	case cluster.JobUpdated:
		if ev.PrevConfig != nil && ev.PrevConfig.Failover && !snap.Config.Failover {
			m.queue(m.clear, ev.Job)
		}
	}
}

func (m *Manager) queue(set map[string]bool, job string) {
	m.mu.Lock()
	set[job] = true
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) take(set map[string]bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	jobs := slices.Sorted(maps.Keys(set))
	clear(set)
	return jobs
}

func (m *Manager) loop() {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		case <-m.wake:
		}
		retry := m.each(m.clear, m.clearJob, "could not clear failover state")
		retry = m.detectAll() || retry
		retry = m.each(m.claim, m.claimJob, "could not claim failover items") || retry
		if retry && !clock.Sleep(m.clk, 500*time.Millisecond, m.stop) {
			return
		}
	}
}

// workers bounds the jobs (and a job's items) handled at once. Detecting and claiming cost a few ZooKeeper
// round trips each; go-zookeeper pipelines concurrent requests on its one connection and the registry merges
// concurrent claims into one multi, so when a peer that held items of a thousand jobs dies, its orphans are
// re-POSTed after a few round trips instead of a few round trips per job, one job after another.
const workers = 32

// each runs fn for the jobs queued in set, up to workers at once, and returns once all are done. A job that
// fails is queued again; each reports whether any did.
func (m *Manager) each(set map[string]bool, fn func(job string) error, msg string) bool {
	var failed atomic.Bool
	jobs := m.take(set)
	_ = parallel.For(len(jobs), workers, func(i int) error {
		if err := fn(jobs[i]); err != nil {
			m.log.Warn(msg, "job", jobs[i], "err", err)
			m.queue(set, jobs[i])
			failed.Store(true)
		}
		return nil // the other jobs go on
	})
	return failed.Load()
}

// watched reports whether a job's running nodes outlive their instance: failover jobs' and monitored jobs'.
func watched(snap *cluster.JobSnapshot) bool {
	return snap.Config.Failover || snap.Config.MonitorExecution
}

// detectChunk bounds the jobs whose running nodes are read together (in multiReads of a few hundred reads
// each, sent at once).
const detectChunk = 4096

// detectAll looks for orphaned items in the jobs queued in m.detect that this peer leads (detectIn), their
// running nodes read together (RunningItemsOf): a stopped peer leaves every job of the cluster with an
// instance removed, and read one get per item, 32 at a time, its 100,000 jobs' running nodes kept each
// survivor sending ~300 gets a second to ZooKeeper for minutes while the survivors' writes queued behind them
// (docs/benchmarks.md, run 28). A job that fails is queued again; it reports whether any did.
func (m *Manager) detectAll() bool {
	var chunks []map[string]int // each job's item count, detectChunk jobs to a chunk
	jobs := m.take(m.detect)
	for k, job := range jobs {
		if snap := m.reg.Job(job); snap != nil && watched(snap) && m.reg.IsLeader(job) {
			if len(chunks) == 0 || len(chunks[len(chunks)-1]) == detectChunk {
				// sized for the jobs left, not for a whole chunk: a wake for one new leadership (a peer's
				// thousands of them while it registers or a peer leaves, one wake each) made a map for 4,096
				// jobs (~218 KB), 5.5 % of a 100,000-job peer's allocation from its start, most of it while
				// it registered (BenchmarkDetectOneJob)
				chunks = append(chunks, make(map[string]int, min(detectChunk, len(jobs)-k)))
			}
			chunks[len(chunks)-1][job] = max(snap.Config.ShardingTotalCount, len(snap.Items))
		}
	}
	var failed atomic.Bool
	for _, chunk := range chunks {
		running, err := m.reg.RunningItemsOf(chunk)
		if err != nil {
			m.log.Warn("could not look for orphaned items", "jobs", len(chunk), "err", err)
			for job := range chunk {
				m.queue(m.detect, job)
			}
			failed.Store(true)
			continue
		}
		withRuns := slices.Collect(maps.Keys(running)) // only the jobs with a running node
		_ = parallel.For(len(withRuns), workers, func(i int) error {
			job := withRuns[i]
			if err := m.detectIn(job, running[job]); err != nil {
				m.log.Warn("could not look for orphaned items", "job", job, "err", err)
				m.queue(m.detect, job)
				failed.Store(true)
			}
			return nil
		})
	}
	return failed.Load()
}

// detectIn (leader only) queues every item of job whose running node (running, as read) names an instance
// that is not online; in a job whose failover is off, it records each such execution as lost and clears its
// running node instead.
func (m *Manager) detectIn(job string, running map[int]cluster.Running) error {
	snap := m.reg.Job(job)
	if snap == nil || !watched(snap) || !m.reg.IsLeader(job) {
		return nil
	}
	var orphans []int
	gone := m.goneFrom(snap)
	for i, run := range running {
		// an accepted item (async) is not failed over: its work lives at the receiver and its lease decides
		if run.InstanceID == "" || run.Async || slices.Contains(snap.FailoverItems, i) {
			continue
		}
		lost, err := gone(run.InstanceID)
		if err != nil {
			return err
		}
		if lost {
			orphans = append(orphans, i)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	slices.Sort(orphans)
	if !snap.Config.Failover {
		return m.reap(snap, orphans, gone)
	}
	if err := m.reg.AddFailoverItems(job, orphans); err != nil {
		if errors.Is(err, cluster.ErrNotLeader) {
			return nil
		}
		return err
	}
	m.log.Info("items of a vanished instance queued for failover", "job", job, "items", orphans)
	return nil
}

// goneFrom returns a test of whether an instance has left a job: it is not in the snapshot and ZooKeeper
// confirms that its node is not there. The snapshot alone would take an instance that registered since its
// last read (every peer but the creator, on a job just created) for gone, and fail over or record as lost
// items that run where they should. Answers are kept for the one look.
func (m *Manager) goneFrom(snap *cluster.JobSnapshot) func(id string) (bool, error) {
	seen := map[string]bool{}
	return func(id string) (bool, error) {
		if snap.Online(id) {
			return false, nil
		}
		if g, ok := seen[id]; ok {
			return g, nil
		}
		online, err := m.reg.InstanceOnline(snap.Name, id)
		if err != nil {
			return false, err
		}
		seen[id] = !online
		return !online, nil
	}
}

// reap ends the orphans of a job whose failover is off: each execution is recorded as lost (ended, outcome
// unknown), then its running node is cleared (version-checked, so a node rewritten meanwhile is kept), so
// that the history does not show it RUNNING for ever and the job's resharding does not wait for it. gone is
// the look's test (goneFrom): an instance ZooKeeper was asked about is not asked again.
func (m *Manager) reap(snap *cluster.JobSnapshot, items []int, gone func(id string) (bool, error)) error {
	var errs []error
	for _, item := range items {
		run, version, ok, err := m.reg.ReadRunning(snap.Name, item)
		if err != nil || !ok || run.Async {
			errs = append(errs, err)
			continue
		}
		if lost, err := gone(run.InstanceID); err != nil || !lost {
			errs = append(errs, err)
			continue
		}
		if m.cfg.Lost != nil {
			if err := m.cfg.Lost.Record(snap.Name, item, snap.Config.ShardingTotalCount, run); err != nil {
				// keep the node: the next look tries again
				m.log.Warn("could not record a lost execution; its running node is kept", "job", snap.Name, "item", item,
					"execution_id", run.ExecutionID, "err", err)
				errs = append(errs, err)
				continue
			}
		}
		if err := m.reg.EndStaleRunning(snap.Name, item, version, run, m.clk.Now()); err != nil {
			errs = append(errs, err)
			continue
		}
		m.log.Info("running item of a vanished instance ended (failover is off)", "job", snap.Name, "item", item,
			"execution_id", run.ExecutionID, "instance", run.InstanceID)
	}
	return errors.Join(errs...)
}

// claimJob claims the job's failover items (concurrently, each in its own transaction) and hands each to
// the runner. Items queued meanwhile change leader/failover/items, whose event queues the job again.
func (m *Manager) claimJob(job string) error {
	snap := m.reg.Job(job)
	if snap == nil || !snap.Config.Failover || len(snap.FailoverItems) == 0 {
		return nil
	}
	if !snap.Registered || snap.ServerDisabled(snap.MyIP) || snap.Config.Disabled || !m.reg.Lease() {
		return nil // not eligible: another peer takes them
	}
	items := snap.FailoverItems
	errs := make([]error, len(items))
	_ = parallel.For(len(items), workers, func(k int) error {
		item := items[k]
		run, version, err := m.reg.ClaimFailover(job, item)
		if errors.Is(err, cluster.ErrNothingToClaim) {
			return nil
		}
		if err != nil {
			errs[k] = err
			return nil // the other items go on
		}
		m.cfg.Observer.FailedOver(job, 1)
		m.log.Info("took over an item of a vanished instance", "job", job, "item", item,
			"execution_id", run.ExecutionID, "from", run.InstanceID)
		m.cfg.Runner.RunFailover(job, item, run, version)
		return nil
	})
	return errors.Join(errs...)
}

// clearJob removes pending failover state of a job whose failover was switched off.
func (m *Manager) clearJob(job string) error {
	snap := m.reg.Job(job)
	if snap == nil || snap.Config.Failover || !m.reg.IsLeader(job) {
		return nil
	}
	return m.reg.ClearFailoverItems(job, max(snap.Config.ShardingTotalCount, len(snap.Items)))
}
