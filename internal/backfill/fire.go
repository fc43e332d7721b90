package backfill

import (
	"context"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/webhook"
)

// commitWait bounds how long an item's end waits for its history record to commit.
const commitWait = 5 * time.Second

// sentFire is a fire whose requests have all ended; its items' history records may still be committing.
type sentFire struct {
	out     FireOutcome
	commits sync.WaitGroup // one per item sent: its end record committed (or commitWait passed)
}

// fire sends every enabled item of the backfill's fire at at, at most Pacing.MaxInFlight at once, each
// request paced (pace), and returns once every request has ended; the items' history records may still be
// committing (sentFire.commits). complete is false when it stopped before every item had ended (ctx
// cancelled, the ZooKeeper session in doubt): the fire is then not done, and whoever runs the backfill next
// sends it again. Either way the caller waits for the commits before it is done with the fire.
func (r *Runner) fire(ctx context.Context, b Backfill, at time.Time, pc *paceClock) (sf *sentFire, complete bool) {
	sf = &sentFire{out: FireOutcome{At: at}}
	snap, ok := r.enabledJob(ctx, b.Job)
	if !ok {
		return sf, false
	}
	cfg := snap.Config
	params, _ := ejserver.ParseShardingItemParameters(cfg.ShardingItemParameters, cfg.ShardingTotalCount)
	var items []int
	for i := range cfg.ShardingTotalCount {
		if !snap.Item(i).Disabled {
			items = append(items, i)
		}
	}
	me := r.cfg.Store.Me()
	taskID := ejserver.TaskID(b.Job, items, false, me.InstanceID)
	slots := make(chan struct{}, r.cfg.Pacing.MaxInFlight)
	var (
		mu     sync.Mutex
		sends  sync.WaitGroup
		failed int
		sent   int
	)
	defer sends.Wait()
	pc.startFire()
	idle := r.idleItems(b, items)
	for _, item := range items {
		// an item idle at the fire's start goes; one the job was running (or whose node could not be read)
		// waits for the policy. The job's own fires create their running nodes ahead of their requests
		// (prepared fires, up to half a second ahead), so a run about to start shows in the read.
		if !idle[item] {
			switch r.yield(ctx, b, item) {
			case yieldStop:
				return sf, false
			case yieldSkip:
				sf.out.Skipped++
				continue
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return sf, false
		}
		if !r.pace(ctx, pc) || !r.cfg.Store.Lease() {
			<-slots
			return sf, false
		}
		sends.Add(1)
		sf.commits.Add(1)
		go func() {
			defer sf.commits.Done()
			r.send(ctx, snap, b, at, item, params[item], taskID, me, func(ok bool) {
				mu.Lock()
				sent++
				if !ok {
					failed++
				}
				mu.Unlock()
				<-slots
				sends.Done()
			})
		}()
	}
	sends.Wait()
	if ctx.Err() != nil {
		return sf, false
	}
	sf.out.Items, sf.out.Failed = sent, failed
	return sf, true
}

// enabledJob returns the job's snapshot once the job is enabled (a disabled job's backfill waits, as its
// schedule does); false if the job is gone or ctx ended.
func (r *Runner) enabledJob(ctx context.Context, job string) (*cluster.JobSnapshot, bool) {
	for {
		snap := r.cfg.Store.Job(job)
		if snap != nil && snap.ConfigErr != nil {
			return nil, false
		}
		if snap != nil && !snap.Config.Disabled {
			return snap, true
		}
		if snap == nil {
			if _, _, err := r.cfg.Store.GetJob(job); err != nil {
				return nil, false // deleted (or ZooKeeper unreachable): the run stops
			}
		}
		if !clock.Sleep(r.clk, r.cfg.Retry, ctx.Done()) {
			return nil, false
		}
	}
}

// idleItems reads the running nodes of the fire's items at once (one round trip rather than one per item)
// and returns those the job is not running now; under ALLOW none is read (yield runs every item).
func (r *Runner) idleItems(b Backfill, items []int) map[int]bool {
	idle := make(map[int]bool, len(items))
	if b.OverlapPolicy == OverlapAllow {
		return idle
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, item := range items {
		wg.Go(func() {
			if _, _, running, err := r.cfg.Store.ReadRunning(b.Job, item); err == nil && !running {
				mu.Lock()
				idle[item] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return idle
}

type yieldOutcome int

const (
	yieldRun yieldOutcome = iota
	yieldSkip
	yieldStop
)

// yield applies the backfill's overlap policy to one item: ALLOW runs it at once; while the job's own run
// of the item is in flight (its running node exists), SKIP leaves it out and BUFFER_ONE waits for the run
// to end.
func (r *Runner) yield(ctx context.Context, b Backfill, item int) yieldOutcome {
	if b.OverlapPolicy == OverlapAllow {
		return yieldRun
	}
	for {
		_, _, running, err := r.cfg.Store.ReadRunning(b.Job, item)
		switch {
		case err != nil:
			r.log.Warn("could not read whether an item runs", "job", b.Job, "item", item, "err", err)
		case !running:
			return yieldRun
		case b.OverlapPolicy == OverlapSkip:
			return yieldSkip
		}
		if !clock.Sleep(r.clk, r.cfg.Retry, ctx.Done()) {
			return yieldStop
		}
	}
}

// send POSTs one item of the fire and records it in the history: ended(ok) is called once the request has
// ended (ok: the receiver took it), before send waits for the item's end record to commit (commitWait at
// most), so that the backfill's request slot is not held while the history catches up.
func (r *Runner) send(ctx context.Context, snap *cluster.JobSnapshot, b Backfill, at time.Time, item int, param, taskID string,
	me cluster.Identity, ended func(ok bool)) {
	cfg := snap.Config
	id := ExecutionID(b.ID, at, item)
	d := webhook.Delivery{
		Payload: webhook.Payload{
			JobName: b.Job, TaskID: taskID, ExecutionID: id, ShardingItem: item, ShardingParameter: param,
			ShardingTotalCount: cfg.ShardingTotalCount, JobParameter: cfg.JobParameter, Source: string(ejserver.SourceBackfill),
			ScheduledAt: at, InstanceID: me.InstanceID,
		},
		Webhook: cfg.Webhook, Retry: cfg.Retry, MaxConcurrentPerJob: cfg.MaxConcurrentRequests,
		Streaming: cfg.JobType == ejserver.JobTypeDataflow && cfg.StreamingProcess,
	}
	prep := r.cfg.Sender.Prepare(d)
	started := r.clk.Now()
	rec := ejserver.Execution{
		ID: id, JobName: b.Job, TaskID: taskID, ShardingItem: item, ShardingTotalCount: cfg.ShardingTotalCount,
		Source: ejserver.SourceBackfill, InstanceID: me.InstanceID, IP: me.ServerIP, Hostname: me.Hostname,
		ScheduledAt: at, StartedAt: started,
	}
	r.cfg.Recorder.Enqueue(rec)
	res := r.cfg.Sender.Send(ctx, prep)
	done := r.clk.Now()
	ended(res.Success)
	rec.CompletedAt, rec.Success, rec.StatusCode, rec.Attempts = done, res.Success, res.StatusCode, res.Attempts
	rec.DurationMs, rec.FailureCause, rec.ResponseExcerpt, rec.Permanent = done.Sub(started).Milliseconds(), res.FailureCause,
		res.ResponseExcerpt, res.Permanent
	if !res.Success {
		r.log.Warn("backfill item failed", "job", b.Job, "item", item, "execution_id", id, "http_status", res.StatusCode,
			"cause", res.FailureCause)
	}
	cctx, cancel := context.WithTimeout(context.Background(), commitWait)
	defer cancel()
	if err := r.cfg.Recorder.EnqueueCommitted(cctx, rec); err != nil {
		r.log.Warn("backfill item's end not committed to the history", "job", b.Job, "item", item, "execution_id", id, "err", err)
	}
}
