package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// EventKind names a change the registry reports to its listeners.
type EventKind int

// The registry events.
const (
	JobAdded             EventKind = iota + 1 // a job's config was loaded (also after a session renewal); Created: it is new
	JobUpdated                                // its config changed; Event.PrevConfig holds the old one
	JobRemoved                                // its config is gone: stop firing at once
	InstancesChanged                          // Event.Added / Event.Removed instance ids
	ServersChanged                            // a servers/{ip} node changed; Event.IP names it
	LeaderChanged                             // leader/election/instance changed; Event.Leader
	NecessaryChanged                          // leader/sharding/necessary appeared or went
	ItemsChanged                              // an item's owner, disabled or failover node changed
	FailoverItemsChanged                      // leader/failover/items changed
	TriggerRequested                          // trigger/{me} exists: run once now (see TakeTrigger)
	PeersChanged                              // a peer joined or left the namespace (Job ""): Event.Added / Event.Removed ids
)

// Event is one change of one job. Listeners run on the registry's workers and must not block.
type Event struct {
	Kind       EventKind
	Job        string
	PrevConfig *ejserver.JobConfig
	Added      []string
	Removed    []string
	IP         string
	Leader     string
	// JobUpdated: the new config, the config node's versions before and after, and its creation zxid (which
	// tells one life of the node from the next). JobAdded: the config and its czxid. JobRemoved: the config
	// as last loaded (PrevConfig) and its czxid (0 when it was never loaded). ServersChanged: the versions
	// and czxid of the servers/{ip} node (PrevVersion -1 when this peer had not read it, or read another life).
	Config               *ejserver.JobConfig
	PrevVersion, Version int32
	Czxid                int64
	// ServersChanged: the node's data before and after ("" when absent).
	PrevState, State string
	// Created (JobAdded): the job appeared while this peer watched the namespace, or its config came back
	// after being deleted: a creation, not a load at start-up or after a session renewal.
	Created bool
	// ThroughAPI (JobAdded): the load read the API's creation mark of this life of the config, made in the
	// creating transaction: the job was created through the API (false: not, or not known).
	ThroughAPI bool
}

// nodeVersion is a node's life (czxid) and data version as last read.
type nodeVersion struct {
	czxid   int64
	version int32
}

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	Namespace string
	Identity  Identity
	Logger    *slog.Logger
	Clock     clock.Clock
	// Workers read watched nodes concurrently (default 32).
	Workers int
	// OneShotWatches watches each node of a job that the peer reads (one-shot watches, re-armed by every
	// read) instead of one recursive watch on the namespace (jobwatch.go); the registry falls back to it by itself
	// on a ZooKeeper before 3.6.
	OneShotWatches bool
	// Due, if set, tells when a job's fires next need its sharding (dispatch.Scheduler.Due): the campaigns
	// waiting for a sender go earliest first, not in the order they were kicked (zero: last).
	Due func(job string) time.Time
}

// Registry is this peer's view of every job in the namespace, kept fresh by watches, plus the writes the
// other packages need. It registers the peer on each job (servers/{ip}, instances/{id}), campaigns for each
// job's leadership, and re-does both after a session expiry.
type Registry struct {
	s   *Session
	p   Paths
	me  Identity
	log *slog.Logger
	clk clock.Clock
	b   *batcher
	w   *refresher
	// later holds the campaigns put off for a job's preferred candidate, campaigns the jobs whose campaign's
	// create is on its way (election.go)
	later     laterQueue
	campaigns campaignSet

	mu   sync.RWMutex
	jobs map[string]*jobEntry
	// entries is what every entry points to: the count of the entries that name this peer as their leader
	// (leadcount.go) and the list of those that hold a snapshot or config (configbody.go)
	entries entryShared

	lmu       sync.Mutex
	listeners []func(Event)

	peers livePeers // the namespace's live peers (livepeers.go)
	// leaving: Leave removed this peer's node: it is not written again (livepeers.go)
	leaving atomic.Bool

	firesMade sync.Map // job -> struct{}: its fire ledger folder exists (fires.go)

	waitMu  sync.Mutex
	waiters map[string][]chan struct{} // WaitGone's one-shot watches, by path
	chw     channelWatch               // the notification channels' watches
	bfw     channelWatch               // the backfills' watches
	calw    channelWatch               // the calendars' watches (calendars.go)

	// oneShotWatches: RegistryConfig.OneShotWatches; noAddWatch: ZooKeeper answered addWatch Unimplemented.
	oneShotWatches bool
	noAddWatch     atomic.Bool
	// noMultiRead: ZooKeeper answered multiRead Unimplemented (bulkload.go).
	noMultiRead atomic.Bool
	// echo tells this peer's own writes of items' owners when their events come back (echoes.go)
	echo echoes
	// watchedIn is the session whose recursive watch covers the namespace (jobwatch.go), or 0.
	watchedIn atomic.Int64
	// resyncedAt is when the registry last armed its watch or resynchronised after a reconnection (unix ns,
	// its clock): instances that joined jobs before then may not have been seen joining (joins.go).
	resyncedAt atomic.Int64
	// shared holds the jobs' instances and servers maps, shared between jobs of equal content (intern.go).
	shared stringMaps
	// bodies holds the jobs' configs without their names, shared between jobs of one shape (configbody.go).
	bodies configBodies
	// reported holds the events of deletions applied from their watch events, for the listeners (deletions.go).
	reported reports

	clockOffset atomic.Int64 // local minus ZooKeeper, in ns
	clockKnown  atomic.Bool

	stopOnce sync.Once
	// listed: the namespace has been listed once; jobs found later were created while this peer watched.
	listed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// jobEntry holds one job's mutable state; snap caches the published snapshot until the next change.
// entryShared is what a registry's entries share, behind one pointer (jobEntry.sh) so that an entry keeps
// its size class.
type entryShared struct {
	leads leadCount
	warm  warmEntries
}

type jobEntry struct {
	name string
	// refreshMu serialises the refreshes of the job's job-level nodes (see Registry.refresh).
	refreshMu sync.Mutex

	mu      sync.Mutex
	st      jobState
	snap    *JobSnapshot
	gen     uint64
	pending int32
	// pendingItems counts the queued or running refreshes that decide which items a fire runs (decidesItems).
	pendingItems int32
	// changed is closed at the job's next change; made only when someone waits for one (Wait), so a job
	// nobody waits on holds no channel and a change allocates none.
	changed chan struct{}
	// sh is what the registry's entries share; counted: this entry is in its leadership count; detached: the
	// entry left the registry's map (a load still running on it must not count it again).
	sh       *entryShared
	counted  bool
	detached bool
	// touched: the snapshot or config was read since the last sweep (sweepCold); warm: the entry is in
	// sh.warm, the list the sweep visits (it holds, or held since that sweep, a snapshot or named config)
	touched bool
	warm    bool
	// direct counts the changes applied from their events (deletions.go): a read that began before its
	// count changed may be stale.
	direct directCounts
}

// jobState's fields are ordered so that a job's entry fits a 288-byte size class (every peer holds one per
// job): the int32s paired, the flags together at the end.
type jobState struct {
	// body is the job's config without its name, shared with the jobs of the same shape (configBodies);
	// cfg, made from it by configLocked while the job is read and dropped when it turns cold (sweepCold), is
	// shared with the snapshots and events. Both are replaced on a change, never written.
	body       *ejserver.JobConfig
	cfg        *ejserver.JobConfig
	cfgVersion int32
	// leaderOwner and leaderVersion describe leader/election/instance when this peer holds it: the session
	// that created it and its data version, so leader writes are guarded without reading the node first.
	leaderVersion int32
	leaderOwner   int64
	cfgCzxid      int64
	cfgMtime      int64 // the config node's last write (ZooKeeper's mtime, in ms)
	cfgErr        error
	instances     map[string]string
	servers       map[string]string
	// serverVers are the servers/{ip} nodes' versions as last read (the audit trail counts missed ones).
	serverVers serverVersions
	leader     string
	// ownersChangedAt is when this peer last saw an item's owner change (its clock; zero: not since it
	// loaded the job).
	ownersChangedAt time.Time
	// instancesJoined is when this peer last saw an instance join the job (unix ns, its clock; 0: never):
	// its first load, an addition, a created event (joins.go).
	instancesJoined int64
	failover        []int
	items           itemTable

	hasConfig bool
	loaded    bool
	// appeared: the job was listed after the namespace's first listing (created while this peer watched).
	appeared bool
	// processing: this peer created leader/sharding/processing and has not committed yet.
	processing bool
	necessary  bool
	// leaderSeen: the recursive watch reported the leader node created and no read has said whose it is yet
	// (a campaign for the job would be refused: it sends none).
	leaderSeen bool
	// registered: our instance node exists in this session; pendingRegister: it existed under another
	// session (a fast restart with the same id) and we register once it goes; removedByOperator: it
	// disappeared while we held the session, so an operator removed it and we stay off the job.
	registered        bool
	pendingRegister   bool
	removedByOperator bool
}

// NewRegistry returns a registry over session s. Start loads the namespace.
func NewRegistry(s *Session, cfg RegistryConfig) (*Registry, error) {
	if err := ValidNamespace(cfg.Namespace); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	r := &Registry{
		s: s, p: NewPaths(cfg.Namespace), me: cfg.Identity, log: cfg.Logger, clk: cfg.Clock,
		jobs: make(map[string]*jobEntry), stop: make(chan struct{}), waiters: make(map[string][]chan struct{}),
		oneShotWatches: cfg.OneShotWatches,
	}
	r.entries.leads.me = cfg.Identity.InstanceID
	r.w = newRefresher(cfg.Workers, r.refresh, r.log, r.clk, r.stop)
	r.later.wake, r.later.delay = make(chan struct{}, 1), campaignDelay
	r.campaigns.max, r.campaigns.due = campaignsInFlight, cfg.Due
	r.campaigns.create = r.createLeaders
	r.w.pending, r.w.urgent, r.w.front = r.pendingDelta, urgent, front
	r.w.batches[laneItems] = batchLane{of: r.readBatched(true), run: r.refreshBatched, max: readBatch}
	r.w.batches[laneReads] = batchLane{of: r.readBatched(false), run: r.refreshBatched, max: readBatch}
	r.w.batches[laneLoads] = batchLane{of: func(k refreshKey) bool { return k.kind == kindLoad }, run: r.loadJobs, max: loadBatch}
	r.w.batches[laneWanted] = batchLane{of: func(refreshKey) bool { return false }, run: r.loadJobs, max: loadBatch}
	r.w.loadingOf = startsWith
	return r, nil
}

// Paths returns the registry's path builder.
func (r *Registry) Paths() Paths { return r.p }

// Me is this peer's identity.
func (r *Registry) Me() Identity { return r.me }

// Session returns the underlying session.
func (r *Registry) Session() *Session { return r.s }

// OnEvent adds a listener. Listeners run on registry workers, concurrently for different jobs, and must
// return quickly.
func (r *Registry) OnEvent(fn func(Event)) {
	r.lmu.Lock()
	defer r.lmu.Unlock()
	r.listeners = append(r.listeners, fn)
}

func (r *Registry) emit(evs []Event) {
	if len(evs) == 0 {
		return
	}
	r.lmu.Lock()
	ls := r.listeners
	r.lmu.Unlock()
	for _, ev := range evs {
		for _, fn := range ls {
			fn(ev)
		}
	}
}

// Start creates the namespace if needed, registers this peer, loads every job and starts watching.
func (r *Registry) Start(ctx context.Context) error {
	for _, pth := range []string{r.p.Root(), r.p.Peers(), r.p.Leases(), r.p.EndedLeases()} {
		if err := r.s.ensurePath(pth); err != nil {
			return fmt.Errorf("prepare namespace: %w", err)
		}
	}
	if err := r.registerPeer(); err != nil {
		return err
	}
	r.b = newBatcher(r.s)
	r.s.setWatchHandler(r.onWatch)
	r.s.setInlineHandler(r.onItemStateEvent)
	r.s.setCovered(r.covered)
	r.s.OnEvent(r.onSession)
	r.w.start()
	r.wg.Add(3)
	go r.clockProbe()
	go r.sweepLoop()
	go r.laterLoop()
	r.w.kick(refreshKey{kind: kindPeers})
	r.w.kick(refreshKey{kind: kindJobs})
	// Wait until the first listing and every job found in it is loaded, so a fresh peer fires its jobs
	// from the first scheduled time (startsWith): not for the refreshes that follow (registrations, the
	// other peers' answers to them), which on a busy cluster are never all done at once.
	deadline := r.clk.NewTimer(2 * r.s.Timeout())
	defer deadline.Stop()
	for {
		if r.w.loaded() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C():
			r.log.Warn("registry still loading jobs in the background")
			return nil
		case <-r.w.loadedCh():
		}
	}
}

// Stop ends the watches and the workers. It does not close the session: closing it removes this peer's
// ephemeral nodes (instances, leadership) so the others reshard and fail over at once.
func (r *Registry) Stop() {
	r.stopOnce.Do(func() {
		close(r.stop)
		r.w.wait()
		r.wg.Wait()
		if r.b != nil {
			r.b.close()
		}
	})
}

func (r *Registry) registerPeer() error {
	if r.leaving.Load() {
		return nil
	}
	data, _ := json.Marshal(r.me)
	err := r.s.create(r.p.Peer(r.me.InstanceID), data, zk.FlagEphemeral)
	if errors.Is(err, zk.ErrNodeExists) {
		_, st, gerr := r.s.get(r.p.Peer(r.me.InstanceID))
		if gerr == nil && st.EphemeralOwner != r.s.ID() {
			r.log.Warn("another session holds this peer's instance id; is a second ejserver running with --instance-id "+
				r.me.InstanceID+"? It will be taken over when that session ends", "instance", r.me.InstanceID)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("register peer %s: %w", r.me.InstanceID, err)
	}
	return nil
}

// onSession reacts to session changes: after a renewal every ephemeral node and watch is gone, so the peer
// registers again and reloads everything.
func (r *Registry) onSession(ev SessionEvent) {
	if ev == SessionWatchesRestored {
		r.resyncJobs() // what the recursive watches did not replay
		return
	}
	if ev != SessionRenewed {
		return
	}
	r.chw.fire() // the channel watches went with the session: the cache reads them again
	r.bfw.fire()
	r.calw.fire()
	r.mu.RLock()
	for _, e := range r.jobs {
		e.mu.Lock()
		e.st.registered, e.st.removedByOperator, e.st.pendingRegister = false, false, false
		e.mu.Unlock()
	}
	r.mu.RUnlock()
	r.w.kick(refreshKey{kind: kindPeer})
	r.w.kick(refreshKey{kind: kindPeers})
	r.w.kick(refreshKey{kind: kindJobs})
	r.mu.RLock()
	for name := range r.jobs {
		r.w.kick(refreshKey{kind: kindLoad, job: name})
	}
	r.mu.RUnlock()
}

// Jobs lists the names of loaded jobs, sorted.
func (r *Registry) Jobs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.jobs))
	for name, e := range r.jobs {
		e.mu.Lock()
		ok := e.st.loaded && e.st.hasConfig
		e.mu.Unlock()
		if ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Job returns the current snapshot of a loaded job, or nil.
func (r *Registry) Job(name string) *JobSnapshot {
	r.mu.RLock()
	e := r.jobs[name]
	r.mu.RUnlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.snapshotOfLocked(e)
}

// A LedJob is what the sharding's reconcile loop reads of a job this peer leads at every tick, without the
// snapshot and named config a job cold between its fires is made again for (sweepCold; ~33,000 of them each
// minute on a leader of 100,000 jobs): its reconcileIntervalMinutes and its servers and instances (maps shared
// with its snapshots, never written).
type LedJob struct {
	Name               string
	IntervalMinutes    int
	Servers, Instances map[string]string
}

// Led returns every loaded job this peer leads (as IsLeader says), in no order: none while its session is
// not sound enough to act on them. It is one pass over the entries, where the reconcile loop listed every
// job's name, sorted them, and looked each up twice by its name: at 100,000 jobs a burst of ~0.15 s of CPU a
// minute on each peer, 1.7-2.6 % of the peers' profiles (docs/benchmarks.md, "A fire's job found through its
// scheduler entry").
func (r *Registry) Led() []LedJob {
	if !r.s.Lease() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]LedJob, 0, max(r.entries.leads.n.Load(), 0)) // the count as a hint: make panics below 0
	for _, e := range r.jobs {
		e.mu.Lock()
		if e.leadsLocked() && e.st.body != nil {
			out = append(out, LedJob{Name: e.name, IntervalMinutes: e.st.body.ReconcileIntervalMinutes,
				Servers: e.st.servers, Instances: e.st.instances})
		}
		e.mu.Unlock()
	}
	return out
}

// Wait blocks until the job's snapshot satisfies cond or ctx ends. A job still loading on this peer is waited
// for; a job that does not exist, or was deleted, is ENOTFOUND. While the job is not loaded or its items'
// nodes are being read, its queued load runs before the other jobs' (expediteLoad).
func (r *Registry) Wait(ctx context.Context, name string, cond func(*JobSnapshot) bool) (*JobSnapshot, error) {
	for {
		r.mu.RLock()
		e := r.jobs[name]
		r.mu.RUnlock()
		if e == nil {
			return nil, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
		}
		e.mu.Lock()
		var snap *JobSnapshot
		gone := e.st.loaded && !e.st.hasConfig
		if e.st.loaded && e.st.hasConfig {
			snap = e.snapshotLocked(r.me)
		}
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		ch := e.changed
		e.mu.Unlock()
		if gone {
			return nil, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
		}
		if snap != nil && cond(snap) {
			return snap, nil
		}
		if snap == nil || !snap.ItemsSettled {
			r.expediteLoad(name)
		}
		select {
		case <-ctx.Done():
			return snap, ctx.Err()
		case <-ch:
		}
	}
}

func (e *jobEntry) snapshotLocked(me Identity) *JobSnapshot {
	if e.snap != nil && e.snap.Settled == (e.pending == 0) && e.snap.ItemsSettled == (e.pendingItems == 0) {
		e.touchLocked()
		return e.snap
	}
	st := &e.st
	items := make([]ItemState, st.items.end())
	for i := range items {
		items[i].OwnerVersion = -1
	}
	for i, it := range st.items.all() {
		items[i] = *it
	}
	e.snap = &JobSnapshot{
		Name: e.name, Config: e.configLocked(), ConfigVersion: st.cfgVersion, ConfigChanged: time.UnixMilli(st.cfgMtime), ConfigErr: st.cfgErr,
		Instances: st.instances, Servers: st.servers, Leader: st.leader, Necessary: st.necessary, OwnersChangedAt: st.ownersChangedAt,
		FailoverItems: st.failover, Items: items, Me: me.InstanceID, MyIP: me.ServerIP,
		Registered: st.registered, Registering: !st.registered && !st.removedByOperator, Settled: e.pending == 0, ItemsSettled: e.pendingItems == 0, Generation: e.gen,
		entry: e,
	}
	return e.snap
}

// changedLocked invalidates the snapshot and wakes waiters.
func (e *jobEntry) changedLocked() {
	e.snap = nil
	e.gen++
	e.recountLocked()
	if e.changed != nil { // made by the first waiter (Wait) since the last change
		close(e.changed)
		e.changed = nil
	}
}

func (r *Registry) entry(name string) *jobEntry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.jobs[name]
}

// ensureEntry returns the job's entry, creating it (unloaded) if needed.
func (r *Registry) ensureEntry(name string) *jobEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.jobs[name]
	if e == nil {
		e = &jobEntry{name: name, sh: &r.entries}
		r.jobs[name] = e
	}
	return e
}

// Notice makes the registry load a job now instead of waiting for the namespace watch (used right after this
// peer created it, so its own API sees it at once).
func (r *Registry) Notice(name string) {
	r.ensureEntry(name)
	r.w.kick(refreshKey{kind: kindLoad, job: name})
}

// ClockOffset returns how far this peer's clock is ahead of ZooKeeper's, and whether it was measured.
func (r *Registry) ClockOffset() (time.Duration, bool) {
	return time.Duration(r.clockOffset.Load()), r.clockKnown.Load()
}

// clockProbe measures the clock difference with ZooKeeper every 30 s: it writes the meta clock node and
// compares the node's mtime (ZooKeeper's clock) with the middle of the round trip.
func (r *Registry) clockProbe() {
	defer r.wg.Done()
	if err := r.s.ensurePath(r.p.Clock()); err != nil {
		r.log.Warn("cannot create the clock node", "err", err)
	}
	for {
		t0 := r.clk.Now()
		st, err := r.s.set(r.p.Clock(), nil, -1)
		t1 := r.clk.Now()
		if err == nil {
			mid := t0.Add(t1.Sub(t0) / 2)
			zkNow := time.UnixMilli(st.Mtime)
			r.clockOffset.Store(int64(mid.Sub(zkNow)))
			r.clockKnown.Store(true)
		}
		if !clock.Sleep(r.clk, 30*time.Second, r.stop) {
			return
		}
	}
}

func isTransient(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrClosing)
}
