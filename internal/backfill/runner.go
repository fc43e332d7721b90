package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/cronexpr"
	"github.com/ejserver/ejserver/internal/webhook"
)

// Store is what the runner needs from the ZooKeeper registry (cluster.Registry satisfies it).
type Store interface {
	BackfillNodes(watch bool) ([]cluster.BackfillNode, map[string]bool, <-chan struct{}, error)
	ClaimBackfill(job, id string, data []byte, version int32) (int32, error)
	WriteBackfill(job, id string, data []byte, version int32) (int32, error)
	ReadBackfill(job, id string) (cluster.BackfillNode, error)
	ReleaseBackfill(id string) error
	DeleteBackfill(job, id string, version int32) error
	ReadRunning(job string, item int) (cluster.Running, int32, bool, error)
	Job(name string) *cluster.JobSnapshot
	GetJob(job string) (ejserver.JobConfig, int32, error)
	Lease() bool
	Me() cluster.Identity
}

// Sender delivers one item to its webhook (webhook.Sender satisfies it).
type Sender interface {
	Prepare(d webhook.Delivery) *webhook.Prepared
	Send(ctx context.Context, p *webhook.Prepared) webhook.Result
}

// Recorder keeps execution history (history.Writer satisfies it).
type Recorder interface {
	Enqueue(e ejserver.Execution) bool
	EnqueueCommitted(ctx context.Context, e ejserver.Execution) error
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	Store    Store
	Sender   Sender
	Recorder Recorder
	Pacing   Pacing
	// Busy, if set, says how long this peer expects to stay busy sending scheduled fires when the busy
	// moments extend guard around each burst (the executor's Activity.Busy); requests yield to it
	// (Pacing.Guard, Pacing.MaxHold).
	Busy func(guard time.Duration) time.Duration
	// Allow, if set, narrows a job's cron fires (its calendars and endAt) in a backfill's range.
	Allow  func(job string) func(time.Time) bool
	Clock  clock.Clock
	Logger *slog.Logger
	// Retry is how long the runner waits before reading ZooKeeper again after an error (default 1 s), and how
	// often a BUFFER_ONE item looks again whether the job's own run of it has ended.
	Retry time.Duration
	// Retention is how long an ended backfill's node stays (default DefaultRetention); a deleted job's go at
	// once. PruneEvery is how often the runner looks for ones to prune when nothing changes (default 1 min).
	Retention  time.Duration
	PruneEvery time.Duration
}

// Runner runs the backfills of the namespace: it claims each running backfill that no live peer owns and
// runs its fires one after the other, each fire's items at once within the pacing's bound, recording the
// fire done in the backfill's node (fenced by its version) before the next starts.
type Runner struct {
	cfg RunnerConfig
	log *slog.Logger
	clk clock.Clock

	mu     sync.Mutex
	active map[string]context.CancelFunc // backfill id -> stops its run
	wg     sync.WaitGroup
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// NewRunner returns a runner; Start starts it.
func NewRunner(cfg RunnerConfig) *Runner {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.PruneEvery <= 0 {
		cfg.PruneEvery = time.Minute
	}
	cfg.Pacing = cfg.Pacing.Defaults()
	return &Runner{cfg: cfg, log: cfg.Logger, clk: cfg.Clock, active: map[string]context.CancelFunc{},
		stop: make(chan struct{})}
}

// Start starts watching the backfills.
func (r *Runner) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return nil
	}
	r.done = make(chan struct{})
	go r.loop()
	return nil
}

// Stop stops every run (their owner nodes are released, so another peer continues them) and returns once
// they have ended. Safe twice and before Start.
func (r *Runner) Stop() {
	r.once.Do(func() { close(r.stop) })
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done != nil {
		<-done
	}
}

// Active reports how many backfills this peer runs now.
func (r *Runner) Active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

func (r *Runner) loop() {
	defer close(r.done)
	defer r.wg.Wait()
	defer r.cancelAll()
	for {
		changed, err := r.scan()
		if err != nil {
			r.log.Warn("could not read the backfills", "err", err)
			if !clock.Sleep(r.clk, r.cfg.Retry, r.stop) {
				return
			}
			continue
		}
		t := r.clk.NewTimer(r.cfg.PruneEvery)
		select {
		case <-changed:
		case <-t.C():
		case <-r.stop:
			t.Stop()
			return
		}
		t.Stop()
	}
}

func (r *Runner) cancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cancel := range r.active {
		cancel()
	}
}

// scan reads the backfills: it stops the runs of those that ended (an operator cancelled them) and claims
// the running ones nobody owns.
func (r *Runner) scan() (<-chan struct{}, error) {
	nodes, owned, changed, err := r.cfg.Store.BackfillNodes(true)
	if err != nil {
		return nil, err
	}
	bs := make([]Backfill, len(nodes))
	for i, n := range nodes {
		if err := json.Unmarshal(n.Data, &bs[i]); err != nil {
			r.log.Warn("backfill node is not readable", "job", n.Job, "backfill", n.ID, "err", err)
			bs[i] = Backfill{Job: n.Job, ID: n.ID, State: StateFailed} // pruned only with its job
		}
		bs[i].Job, bs[i].ID = n.Job, n.ID
	}
	pruned := r.prune(nodes, bs)
	for i, n := range nodes {
		b := bs[i]
		r.mu.Lock()
		cancel, running := r.active[n.ID]
		r.mu.Unlock()
		switch {
		case pruned[n.ID]:
			if running {
				cancel() // its job is gone
			}
		case running && b.State.Ended():
			cancel()
		case running || b.State.Ended() || owned[n.ID] || !r.cfg.Store.Lease():
		default:
			r.claim(n, b)
		}
	}
	return changed, nil
}

// prune deletes the nodes of the backfills Prune picks (each at the version read, so a node that changed
// since stays for the next look, and peers pruning at once do not undo each other) and returns their ids.
func (r *Runner) prune(nodes []cluster.BackfillNode, bs []Backfill) map[string]bool {
	goneJobs := map[string]bool{}
	gone := func(job string) bool {
		g, seen := goneJobs[job]
		if !seen {
			// the cache first: a job this peer holds exists; one it does not hold is read from ZooKeeper
			if r.cfg.Store.Job(job) == nil {
				_, _, err := r.cfg.Store.GetJob(job)
				g = ejserver.IsNotFound(err)
			}
			goneJobs[job] = g
		}
		return g
	}
	out := map[string]bool{}
	version := make(map[string]int32, len(nodes))
	for _, n := range nodes {
		version[n.ID] = n.Version
	}
	for _, b := range Prune(bs, r.clk.Now(), r.cfg.Retention, gone) {
		if err := r.cfg.Store.DeleteBackfill(b.Job, b.ID, version[b.ID]); err != nil {
			r.log.Warn("could not prune a backfill", "job", b.Job, "backfill", b.ID, "err", err)
			continue
		}
		out[b.ID] = true
		reason := "ended more than the retention ago"
		if gone(b.Job) {
			reason = "its job was deleted"
		}
		r.log.Info("backfill pruned: "+reason, "job", b.Job, "backfill", b.ID, "state", string(b.State), "ended_at", b.EndedAt)
	}
	return out
}

func (r *Runner) claim(n cluster.BackfillNode, b Backfill) {
	me := r.cfg.Store.Me().InstanceID
	claimed, err := b.Claim(me)
	if err != nil {
		return
	}
	data, err := json.Marshal(claimed)
	if err != nil {
		return
	}
	version, err := r.cfg.Store.ClaimBackfill(n.Job, n.ID, data, n.Version)
	if errors.Is(err, cluster.ErrBackfillOwned) || errors.Is(err, cluster.ErrBackfillChanged) || errors.Is(err, cluster.ErrNoBackfill) {
		return // another peer was first, or it changed: the next scan looks again
	}
	if err != nil {
		r.log.Warn("could not claim a backfill", "job", n.Job, "backfill", n.ID, "err", err)
		return
	}
	if claimed.Claims > 1 {
		r.log.Info("continuing a backfill its owner left", "job", n.Job, "backfill", n.ID, "done", claimed.Done, "total", claimed.Total)
	} else {
		r.log.Info("running a backfill", "job", n.Job, "backfill", n.ID, "total", claimed.Total)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.mu.Lock()
	r.active[n.ID] = cancel
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.active, n.ID)
			r.mu.Unlock()
			cancel()
			if err := r.cfg.Store.ReleaseBackfill(n.ID); err != nil {
				r.log.Warn("could not release a backfill", "job", n.Job, "backfill", n.ID, "err", err)
			}
		}()
		r.run(ctx, &owned{b: claimed, version: version})
	}()
}

// owned is a backfill this peer runs and its node's version as this peer last wrote it; mu orders the run's
// writes (a fire started) and its settler's (a fire done).
type owned struct {
	mu      sync.Mutex
	b       Backfill
	version int32
}

// write records o.b at the version this peer holds (o.mu held); false if the backfill is no longer this
// peer's to write.
func (r *Runner) write(o *owned) bool {
	data, err := json.Marshal(o.b)
	if err != nil {
		return false
	}
	v, err := r.cfg.Store.WriteBackfill(o.b.Job, o.b.ID, data, o.version)
	if err != nil {
		if errors.Is(err, cluster.ErrBackfillChanged) || errors.Is(err, cluster.ErrNoBackfill) {
			r.log.Info("backfill changed under its owner (cancelled, or claimed by another peer): stopping", "job", o.b.Job,
				"backfill", o.b.ID)
		} else {
			r.log.Warn("could not record a backfill's progress: stopping; another peer continues it", "job", o.b.Job,
				"backfill", o.b.ID, "err", err)
		}
		return false
	}
	o.version = v
	return true
}

// update applies move to the backfill and records it; false if it is no longer this peer's to write. A
// move that ends the backfill is logged.
func (o *owned) update(r *Runner, move func(Backfill) Backfill) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	was := o.b.State
	if was.Ended() {
		return true // every move leaves an ended backfill as it is
	}
	o.b = move(o.b)
	if !r.write(o) {
		return false
	}
	if b := o.b; !was.Ended() && b.State.Ended() {
		r.log.Info("backfill "+strings.ToLower(string(b.State)), "job", b.Job, "backfill", b.ID, "fires", b.Done, "items", b.Items,
			"failed", b.Failed, "reason", b.Reason)
	}
	return true
}

// advance records the fire of out done.
func (o *owned) advance(r *Runner, out FireOutcome) bool {
	return o.update(r, func(b Backfill) Backfill { return b.Advance(out, r.clk.Now()) })
}

// run sends the backfill's fires after its cursor one after the other until the range ends, ctx is
// cancelled or the node is no longer this peer's; its settler records them done in order once their history
// records have committed (pipeline.go).
func (r *Runner) run(ctx context.Context, o *owned) {
	base := o.b // its job, id and policy; the settler owns the progress from here on
	rng, err := r.rangeOf(base)
	if err != nil {
		o.update(r, func(b Backfill) Backfill { return b.Fail(err.Error(), r.clk.Now()) })
		r.log.Warn("backfill failed", "job", base.Job, "backfill", base.ID, "err", err)
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := r.startSettler(o, cancel)
	cursor, sent := base.Cursor, base.Done
	var pc paceClock
	for {
		next, ok := rng.Next(cursor)
		if !ok || sent >= base.Total {
			if st.close() {
				o.update(r, func(b Backfill) Backfill { return b.Exhausted(r.clk.Now()) }) // no move once the last fire ended it
			}
			return
		}
		if !st.acquire(sctx) {
			st.close()
			return
		}
		if !o.update(r, func(b Backfill) Backfill { return b.Start(next) }) {
			st.release()
			cancel()
			st.close()
			return
		}
		sf, complete := r.fire(sctx, base, next, &pc)
		if !complete {
			sf.commits.Wait()
			st.release()
			if st.close() && ctx.Err() == nil {
				if _, _, err := r.cfg.Store.GetJob(base.Job); ejserver.IsNotFound(err) {
					o.update(r, func(b Backfill) Backfill { return b.Fail(fmt.Sprintf("job %q was deleted", base.Job), r.clk.Now()) })
				}
			}
			return // stopped mid-fire: the next owner sends it again with the same webhook-ids
		}
		st.add(sf)
		cursor, sent = next, sent+1
	}
}

// rangeOf returns the backfill's range under its job's current schedule.
func (r *Runner) rangeOf(b Backfill) (Range, error) {
	cfg, _, err := r.cfg.Store.GetJob(b.Job) // read now: this peer's cache may not hold a job created a moment ago
	if err != nil {
		return Range{}, err
	}
	sched, err := ScheduleOf(cfg)
	if err != nil {
		return Range{}, err
	}
	var allow func(time.Time) bool
	if r.cfg.Allow != nil {
		allow = r.cfg.Allow(b.Job)
	}
	return b.Range(sched, allow), nil
}

// ScheduleOf parses a job's cron in its time zone; a job without a cron has no fires to backfill.
func ScheduleOf(cfg ejserver.JobConfig) (Schedule, error) {
	if cfg.Cron == "" {
		return nil, ejserver.Errorf(ejserver.ECONFLICT, "job %q has no cron: a one-off job has no past fires", cfg.JobName)
	}
	loc, err := cronexpr.LoadLocation(cfg.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("time zone of job %q: %w", cfg.JobName, err)
	}
	s, err := cronexpr.Parse(cfg.Cron, loc)
	if err != nil {
		return nil, fmt.Errorf("cron of job %q: %w", cfg.JobName, err)
	}
	return s, nil
}
