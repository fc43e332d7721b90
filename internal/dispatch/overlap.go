package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
	"github.com/ejserver/ejserver/internal/webhook"
)

// The executor's side of a job's overlapPolicy (internal/schedule decides): what a fire does with an item
// still running from an earlier fire, and the jitter of a fire's send time.
//
// How ALLOW is recorded: ElasticJob's one running node per item stays the fence of the execution that holds
// it. A fire that finds the item running runs beside it, as an execution with its own id (its webhook-id)
// that creates no running node and writes no completed node: it is in the history (start and end, like any
// item), but not in ZooKeeper, so a failover never re-runs it (a peer that dies during it loses it, and its
// history row stays without an end) and a resharding does not wait for it. On this peer it is not in
// Executor.running (the fenced run's entry), only in the drain's wait group, so the fenced run's end and
// catch-ups are untouched.

// cancelCause is the cause an attempt ended by a later fire's CANCEL_PREVIOUS records.
const cancelCause = "cancelled: a later fire of the job runs instead (overlapPolicy CANCEL_PREVIOUS)"

// cancelError is the cause of an item's context when something ends it as cancelled: a later fire's
// CANCEL_PREVIOUS (errCancelledByFire), or its workflow run's cancel (CancelFire). Its text is the
// execution's failure cause.
type cancelError struct{ cause string }

func (c *cancelError) Error() string { return c.cause }

// errCancelledByFire is the cause of an item's context when CANCEL_PREVIOUS ends it.
var errCancelledByFire = &cancelError{cancelCause}

// CancelledState is the State of an execution that a later fire's CANCEL_PREVIOUS ended, as for an
// accepted item whose lease was cancelled.
const CancelledState = "CANCELLED"

// LeaseCanceller ends an accepted execution's lease as cancelled (async.Manager satisfies it); the executor
// uses it when its Async does.
type LeaseCanceller interface {
	CancelLease(executionID, cause string) error
}

// onBusy handles a fire of an item still running on this peer (r), as its job's overlap policy says. It is
// called with e.mu held and releases it.
func (e *Executor) onBusy(snap *cluster.JobSnapshot, req fireRequest, item int, r *itemRun) {
	action := schedule.OnBusy(snap.Config.Overlap(), req.source.OnRequest())
	if action != schedule.RunAlongside {
		defer e.taskItemEnded(req.task, item, false, false)
	}
	switch action {
	case schedule.Queue:
		queued := req
		queued.task = nil // it runs later as a task of its own
		r.triggers = append(r.triggers, queued)
		e.mu.Unlock()
		e.log.Info("manual trigger queued behind the running item", "job", req.job, "item", item)
	case schedule.Buffer:
		first := r.misfireAt.IsZero()
		if req.scheduledAt.After(r.misfireAt) { // fires may be handled out of order: keep the latest
			r.misfireAt = req.scheduledAt
		}
		e.jobStatus(req.job).Misfires++
		e.mu.Unlock()
		e.cfg.Observer.Misfired(req.job)
		e.followNotRun(req, item, OutcomeMisfire)
		if first {
			if err := e.reg.SetMisfire(req.job, item); err != nil {
				e.log.Warn("could not record a misfire", "job", req.job, "item", item, "err", err)
			}
		}
		e.log.Info("item still running: misfire recorded, one catch-up will follow", "job", req.job, "item", item)
	case schedule.SkipFire:
		e.jobStatus(req.job).SkippedRuns++
		e.mu.Unlock()
		e.cfg.Observer.Skipped(req.job, "item still running (overlapPolicy SKIP)")
		e.followNotRun(req, item, OutcomeSkipped)
		e.log.Info("item still running and overlapPolicy is SKIP: fire skipped", "job", req.job, "item", item)
	case schedule.RunAlongside:
		req.overlap = true
		e.wg.Add(1)
		e.mu.Unlock()
		e.log.Info("item still running and overlapPolicy is ALLOW: a second execution runs beside it", "job", req.job, "item", item)
		e.launch(snap, req, item)
	case schedule.CancelThenRun:
		next := req
		next.task = nil
		// the fire runs as soon as the cancelled attempt has recorded its end (finishItem), before any trigger
		r.triggers = append([]fireRequest{next}, r.triggers...)
		r.misfireAt = time.Time{}
		cancel, accepted, execID := r.cancel, r.accepted, r.executionID
		r.cancelled, r.cause = true, errCancelledByFire
		e.mu.Unlock()
		e.followNotRun(req, item, OutcomeNotRun)
		e.log.Info("item still running and overlapPolicy is CANCEL_PREVIOUS: cancelling it; this fire runs next",
			"job", req.job, "item", item, "execution_id", execID)
		if cancel != nil {
			cancel(errCancelledByFire)
		}
		if accepted {
			e.cancelLease(req.job, item, execID, cancelCause)
		}
	}
}

// cancelLease ends an accepted execution's lease as cancelled (CANCEL_PREVIOUS, a workflow run's cancel); it
// reports whether it did.
func (e *Executor) cancelLease(job string, item int, executionID, cause string) bool {
	c, ok := e.cfg.Async.(LeaseCanceller)
	if !ok || executionID == "" {
		return false
	}
	if err := c.CancelLease(executionID, cause); err != nil {
		e.log.Warn("could not cancel the accepted item's lease", "job", job, "item", item, "execution_id", executionID, "err", err)
		return false
	}
	e.log.Info("accepted item's lease cancelled: its receiver learns it from its next heartbeat", "job", job, "item", item,
		"execution_id", executionID)
	return true
}

// itemContext is itemSpan's context, cancellable by a later fire's CANCEL_PREVIOUS or its workflow run's
// cancel while the item is this peer's fenced run; cancelled returns the cause if that happened. stop
// releases the context.
func (e *Executor) itemContext(req fireRequest, item int, executionID string) (ctx context.Context,
	endSpan func(webhook.Result, time.Duration), cancelled func() (string, bool), stop func()) {
	ctx, endSpan = e.itemSpan(req, item, executionID)
	ctx, cancel := context.WithCancelCause(ctx)
	if !req.overlap {
		e.mu.Lock()
		if r := e.running[itemKey{req.job, item}]; r != nil {
			r.cancel, r.executionID = cancel, executionID
			if req.follow != nil {
				r.fire = req.follow.Key
			}
			if r.cancelled {
				cancel(r.cause)
			}
		}
		e.mu.Unlock()
	}
	cancelled = func() (string, bool) {
		var c *cancelError
		if errors.As(context.Cause(ctx), &c) {
			return c.cause, true
		}
		return "", false
	}
	return ctx, endSpan, cancelled, func() { cancel(nil) }
}

// markCancelled records a run that CANCEL_PREVIOUS or its workflow run's cancel ended as cancelled rather
// than failed.
func markCancelled(rec *ejserver.Execution, cause string) {
	rec.Success, rec.State, rec.FailureCause = false, CancelledState, cause
}

// finishRun ends an item's run here: an ALLOW run beside the fenced one leaves the fenced run's entry alone.
func (e *Executor) finishRun(req fireRequest, item int, executionID string) {
	if !req.overlap {
		e.finishItem(req.job, item, executionID)
	}
}

// withJitter sets a fire's jitter (jitterMs): the same for the same job and scheduled time on every peer.
func withJitter(cfg *ejserver.JobConfig, req *fireRequest) {
	if jittered(cfg, *req) {
		req.jitter = schedule.Jitter(req.job, req.scheduledAt, cfg.JitterMs)
	}
}

// jittered tells whether a fire has a jitter: a scheduled fire of a job with jitterMs. A fire on request (a
// manual trigger, a workflow node) is not a scheduled fire: it has none.
func jittered(cfg *ejserver.JobConfig, req fireRequest) bool {
	return cfg.JitterMs > 0 && !req.source.OnRequest()
}

// sendAt is when the fire's requests leave: its scheduled time plus its jitter. Lateness is measured from it.
func (r fireRequest) sendAt() time.Time { return r.scheduledAt.Add(r.jitter) }

// dueAt is the payload's dueAt: set for every jittered fire, its offset 0 included (a receiver of a job with
// jitterMs always finds it), and for no other, so other jobs' bodies are unchanged.
func dueAt(cfg *ejserver.JobConfig, req fireRequest) time.Time {
	if !jittered(cfg, req) {
		return time.Time{}
	}
	return req.sendAt()
}

// What a scheduled fire does with an item whose running node another live execution holds.
const (
	elsewhereWait         = iota // as before: not run here (BUFFER_ONE, SKIP)
	elsewhereRunAlongside        // ALLOW: run beside it without a node
	elsewhereCancelled           // CANCEL_PREVIOUS: its lease was cancelled; try to begin again
)

// busyElsewhere decides, for a scheduled fire, what to do with an item whose running node is held by a
// live execution (cur) not in flight on this peer: an accepted item under its lease anywhere, or an item
// another live peer runs. CANCEL_PREVIOUS reaches the first through its lease (cancelled in ZooKeeper, so
// whichever peer holds it); an item in flight on another live peer is not reached (README).
func (e *Executor) busyElsewhere(snap *cluster.JobSnapshot, req fireRequest, item int, cur cluster.Running) int {
	if req.source != ejserver.SourceNormal {
		return elsewhereWait
	}
	switch snap.Config.Overlap() {
	case schedule.Allow:
		e.log.Info("item running elsewhere and overlapPolicy is ALLOW: a second execution runs beside it", "job", req.job,
			"item", item, "instance", cur.InstanceID, "execution_id", cur.ExecutionID)
		return elsewhereRunAlongside
	case schedule.CancelPrevious:
		if cur.Async && e.cancelLease(req.job, item, cur.ExecutionID, cancelCause) {
			return elsewhereCancelled
		}
		if !cur.Async {
			e.log.Warn("item in flight on another live peer: CANCEL_PREVIOUS cannot reach it; fire not run here", "job", req.job,
				"item", item, "instance", cur.InstanceID, "execution_id", cur.ExecutionID)
		}
	}
	return elsewhereWait
}
