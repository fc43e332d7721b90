// Package replay re-runs one failed item execution (POST /api/v1/executions/{id}/replay, issue 24): a new
// execution with its own webhook-id, source MANUAL and the original's scheduledAt, linked to the original in
// the history (replayOf). Check is the pure decision; Replayer sends from the peer that took the request.
package replay

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/webhook"
)

// Check says whether orig may be replayed: only an ended, failed execution may (a running one is still
// deciding; a success needs no replay).
func Check(orig ejserver.Execution) error {
	switch {
	case !orig.Done():
		return ejserver.Errorf(ejserver.ECONFLICT, "execution %s has not ended: only a failed execution can be replayed", orig.ID)
	case orig.Success:
		return ejserver.Errorf(ejserver.ECONFLICT, "execution %s succeeded: only a failed execution can be replayed", orig.ID)
	}
	return nil
}

// New returns the replay of orig started at now by instance me.
func New(orig ejserver.Execution, id string, me cluster.Identity, now time.Time) ejserver.Execution {
	return ejserver.Execution{ID: id, JobName: orig.JobName, TaskID: ejserver.TaskID(orig.JobName, []int{orig.ShardingItem}, false, me.InstanceID),
		ShardingItem: orig.ShardingItem, ShardingTotalCount: orig.ShardingTotalCount, Source: ejserver.SourceManual,
		InstanceID: me.InstanceID, IP: me.ServerIP, Hostname: me.Hostname, ScheduledAt: orig.ScheduledAt, StartedAt: now,
		ReplayOf: orig.ID}
}

// Jobs reads a job's config (cluster.Registry satisfies it).
type Jobs interface {
	GetJob(job string) (ejserver.JobConfig, int32, error)
	Me() cluster.Identity
}

// History reads executions (history.Store satisfies it).
type History interface {
	GetExecution(ctx context.Context, id string) (ejserver.Execution, error)
}

// Sender delivers one item (webhook.Sender satisfies it).
type Sender interface {
	Prepare(d webhook.Delivery) *webhook.Prepared
	Send(ctx context.Context, p *webhook.Prepared) webhook.Result
}

// Recorder keeps execution history (history.Writer satisfies it).
type Recorder interface {
	Enqueue(e ejserver.Execution) bool
	EnqueueCommitted(ctx context.Context, e ejserver.Execution) error
}

// Replayer replays executions; Stop waits for the replays in flight.
type Replayer struct {
	jobs   Jobs
	his    History
	sender Sender
	rec    Recorder
	clk    clock.Clock
	log    *slog.Logger

	mu     sync.Mutex
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
}

// NewReplayer returns a Replayer.
func NewReplayer(jobs Jobs, his History, sender Sender, rec Recorder, clk clock.Clock, log *slog.Logger) *Replayer {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Replayer{jobs: jobs, his: his, sender: sender, rec: rec, clk: clk, log: log, ctx: ctx, cancel: cancel}
}

// Stop aborts the replays in flight and waits for them to record their end. Safe twice.
func (r *Replayer) Stop() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// Original reads the execution to replay (for the API's scope check before Replay).
func (r *Replayer) Original(ctx context.Context, id string) (ejserver.Execution, error) {
	if r.his == nil {
		return ejserver.Execution{}, ejserver.Errorf(ejserver.EUNAVAILABLE, "no history store: nothing to replay")
	}
	return r.his.GetExecution(ctx, id)
}

// Replay starts the replay of the failed execution orig and returns its record as started; the request
// leaves in the background.
func (r *Replayer) Replay(orig ejserver.Execution, by string) (ejserver.Execution, error) {
	if err := Check(orig); err != nil {
		return ejserver.Execution{}, err
	}
	cfg, _, err := r.jobs.GetJob(orig.JobName)
	if err != nil {
		return ejserver.Execution{}, err
	}
	if orig.ShardingItem >= cfg.ShardingTotalCount {
		return ejserver.Execution{}, ejserver.Errorf(ejserver.ECONFLICT, "job %q has %d items now: item %d is gone",
			cfg.JobName, cfg.ShardingTotalCount, orig.ShardingItem)
	}
	rec := New(orig, ejserver.NewExecutionID(), r.jobs.Me(), r.clk.Now())
	rec.ShardingTotalCount = cfg.ShardingTotalCount
	params, _ := ejserver.ParseShardingItemParameters(cfg.ShardingItemParameters, cfg.ShardingTotalCount)
	d := webhook.Delivery{
		Payload: webhook.Payload{JobName: rec.JobName, TaskID: rec.TaskID, ExecutionID: rec.ID, ShardingItem: rec.ShardingItem,
			ShardingParameter: params[rec.ShardingItem], ShardingTotalCount: rec.ShardingTotalCount, JobParameter: cfg.JobParameter,
			Source: string(rec.Source), ScheduledAt: rec.ScheduledAt, InstanceID: rec.InstanceID},
		Webhook: cfg.Webhook, Retry: cfg.Retry, MaxConcurrentPerJob: cfg.MaxConcurrentRequests,
		Streaming: cfg.JobType == ejserver.JobTypeDataflow && cfg.StreamingProcess,
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ejserver.Execution{}, ejserver.Errorf(ejserver.EUNAVAILABLE, "this peer is shutting down")
	}
	r.wg.Add(1)
	r.mu.Unlock()
	r.rec.Enqueue(rec)
	r.log.Info("replaying a failed execution", "job", rec.JobName, "item", rec.ShardingItem, "execution_id", rec.ID,
		"replay_of", orig.ID, "by", by)
	go func() {
		defer r.wg.Done()
		res := r.sender.Send(r.ctx, r.sender.Prepare(d))
		end := rec
		done := r.clk.Now()
		end.CompletedAt, end.Success, end.StatusCode, end.Attempts = done, res.Success, res.StatusCode, res.Attempts
		end.DurationMs, end.FailureCause, end.ResponseExcerpt, end.Permanent = done.Sub(rec.StartedAt).Milliseconds(),
			res.FailureCause, res.ResponseExcerpt, res.Permanent
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.rec.EnqueueCommitted(ctx, end); err != nil {
			r.log.Warn("replay's end not committed to the history", "job", rec.JobName, "execution_id", rec.ID, "err", err)
		}
	}()
	return rec, nil
}
