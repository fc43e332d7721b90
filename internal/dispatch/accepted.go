package dispatch

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/async"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/tracing"
	"github.com/ejserver/ejserver/internal/webhook"
)

// accepted hands an item whose receiver answered 202 to its lease: from now on the lease decides when it
// ends (a completion to any peer, or an expiry the lease watcher handles), not this peer or its life. The
// lease keeps the item's span context (span), the parent of its callbacks' spans.
func (e *Executor) accepted(snap *cluster.JobSnapshot, req fireRequest, item int, rec ejserver.Execution,
	res webhook.Result, param string, runningVersion int32, deadline time.Time, span trace.SpanContext) {
	cfg := snap.Config
	l := lease.Lease{
		ExecutionID: rec.ID, JobName: req.job, ShardingItem: item, ShardingTotalCount: cfg.ShardingTotalCount,
		TaskID: req.taskID, Source: string(req.source), ScheduledAt: req.scheduledAt, JobParameter: param,
		InstanceID: e.me.InstanceID, IP: e.me.ServerIP, Hostname: e.me.Hostname,
		Iteration: res.Iteration, Attempt: res.Attempt, Deadline: deadline, TraceParent: tracing.TraceParent(span),
	}
	if req.follow != nil {
		l.Fire = req.follow.Key // whichever peer hears the lease end tells the fire's ledger
	}
	run := cluster.Running{InstanceID: e.me.InstanceID, ExecutionID: rec.ID, TaskID: req.taskID, Source: req.source,
		ScheduledAt: req.scheduledAt, JobParameter: param, Workflow: req.workflow}
	if req.follow != nil {
		run.Fire = req.follow.Key
	}
	err := e.cfg.Async.Accept(async.AcceptRequest{Lease: l, Started: rec.StartedAt, Policy: cfg.Async,
		StatusCode: res.StatusCode, Run: run, RunningVersion: runningVersion, Monitored: runningVersion >= 0})
	if err != nil {
		// the receiver has the work but nobody could hear its end: say so, and end the item as failed
		e.log.Error("item accepted by its receiver, but its lease could not be recorded: recorded as failed",
			"job", req.job, "item", item, "execution_id", rec.ID, "err", err)
		done := e.clk.Now()
		rec.CompletedAt, rec.StatusCode, rec.Attempts = done, res.StatusCode, res.Attempts
		rec.DurationMs, rec.FailureCause = done.Sub(rec.StartedAt).Milliseconds(), "accepted (202), but its lease could not be recorded: "+err.Error()
		e.taskItemEnded(req.task, item, true, false) // before the record's commit, to join its transaction
		e.recordEnd(rec)
		if runningVersion >= 0 {
			e.endItem(req.job, item, runningVersion, cluster.Completed{ExecutionID: rec.ID, InstanceID: e.me.InstanceID,
				Source: req.source, StatusCode: res.StatusCode, ScheduledAt: req.scheduledAt, FinishedAt: done}, req.source == ejserver.SourceFailover)
		}
		rec.Success = false
		e.followEnded(req, rec)
		return
	}
	e.mu.Lock()
	if r := e.running[itemKey{req.job, item}]; r != nil {
		r.accepted = true
	}
	e.mu.Unlock()
	e.taskItemEnded(req.task, item, true, true)
	// delivered: counted with its lateness like any item; its end is counted when it comes (ejserver_async_*)
	e.cfg.Observer.ItemDone(req.job, req.source, true, rec.StartedAt.Sub(req.scheduledAt), res.Duration)
	e.log.Info("item accepted: its receiver reports the end", "job", req.job, "item", item, "execution_id", rec.ID,
		"attempt", res.Attempt, "lease_seconds", cfg.Async.LeaseSeconds)
}

// followAccepted ends an accepted item's run on this peer: a fire that found it running, or a manual trigger
// queued behind it, becomes the item's misfire node, so that one catch-up runs when its lease ends (on
// whichever peer hears the end). If the lease ended already, the catch-up runs now.
func (e *Executor) followAccepted(snap *cluster.JobSnapshot, job string, item int, r *itemRun, executionID string) bool {
	if r.misfireAt.IsZero() && len(r.triggers) == 0 {
		return false
	}
	if err := e.reg.SetMisfire(job, item); err != nil {
		e.log.Warn("could not record a misfire behind an accepted item", "job", job, "item", item, "err", err)
	}
	if live, err := e.reg.LeaseLive(executionID); err != nil || live {
		if len(r.triggers) > 0 {
			e.log.Info("manual trigger behind an accepted item: one run follows its end", "job", job, "item", item)
		}
		return true
	}
	return false // it ended already: run what waited now
}
