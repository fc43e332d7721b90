package dispatch

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/workflow"
)

// Follower follows, item by item, the fires of the jobs that have alert rules or once-per-fire hooks
// (alert.Service satisfies it). A job it does not follow costs nothing: the executor asks Follows once per
// fire and calls nothing else for it. Methods other than FireStarted return at once.
type Follower interface {
	// Follows reports whether a job's fires are followed.
	Follows(cfg *ejserver.JobConfig) bool
	// FireStarted: this peer is about to run items of a fire; it records them cluster-wide before returning,
	// consuming the fire's trigger claim if it has one: an error (cluster.ErrTriggerTaken) only when that
	// claim failed, and then the items must not run here.
	FireStarted(f Fire, items []int) error
	// ItemLeft: an item's first request left at `at`.
	ItemLeft(f Fire, item int, executionID string, at time.Time)
	// ItemEnded: an item of the fire ended on this peer, or did not run (end.Outcome says which).
	ItemEnded(f Fire, end ItemEnd)
	// FireSkipped: this peer's part of a fire was skipped (noInstance: the job has no live instance at all).
	FireSkipped(f Fire, reason string, noInstance bool)
	// FailedOver: this peer re-runs an item of a vanished peer.
	FailedOver(f Fire, item int, executionID, from string)
}

// Fire identifies one fire of a job across the cluster.
type Fire struct {
	Job string
	// Key is the same on every peer for one fire: the scheduled time in milliseconds, suffixed for a manual
	// trigger (its id) or a run of its own (a catch-up: its execution id).
	Key         string
	ScheduledAt time.Time
	Source      ejserver.Source
	// Expected is how many items the fire has (not disabled), as this peer sees the job.
	Expected int
	// Joined: a failover run that joins the fire its item began in (the vanished peer recorded its start).
	Joined bool
	// Claim is the trigger node a workflow node's fire consumes with its start record (triggerclaim.go).
	Claim *cluster.TriggerClaim
}

// The outcomes of ItemEnd.
const (
	OutcomeSucceeded = "SUCCEEDED"
	OutcomeFailed    = "FAILED"
	OutcomeNotRun    = "NOT_RUN"   // the item did not run (not this peer's any more, shutting down, running elsewhere)
	OutcomeMisfire   = "MISFIRE"   // still running from an earlier fire: a catch-up follows (misfire on)
	OutcomeSkipped   = "SKIPPED"   // still running from an earlier fire, misfire off
	OutcomeExpired   = "EXPIRED"   // an accepted item's lease ran out
	OutcomeCancelled = "CANCELLED" // an accepted item was cancelled
)

// ItemEnd is how an item of a fire ended.
type ItemEnd struct {
	Item        int
	ExecutionID string
	Instance    string
	Source      ejserver.Source
	Outcome     string
	Status      int
	Error       string
	Started     time.Time
	Duration    time.Duration
	// Output is a workflow node's item output (workflow.ItemOutput of its response).
	Output json.RawMessage
}

// FireKey returns the key of a fire: the same on every peer that runs items of it.
func FireKey(scheduledAt time.Time, suffix string) string {
	k := strconv.FormatInt(scheduledAt.UnixMilli(), 10)
	if suffix != "" {
		k += "-" + suffix
	}
	return k
}

// expectedItems counts the items of a job that are not disabled.
func expectedItems(snap *cluster.JobSnapshot) int {
	n := 0
	for i := range snap.Config.ShardingTotalCount {
		if !snap.Item(i).Disabled {
			n++
		}
	}
	return n
}

// followFire starts following a fire this peer runs items of, if its job is followed; an error when the fire's
// trigger claim was handed on meanwhile (the items must not run).
func (e *Executor) followFire(snap *cluster.JobSnapshot, req fireRequest, items []int) (*Fire, error) {
	if !e.follows(snap, req.workflow) {
		return nil, nil
	}
	f := Fire{Job: req.job, ScheduledAt: req.scheduledAt, Source: req.source, Expected: expectedItems(snap), Claim: req.claim}
	switch {
	case req.source == ejserver.SourceNormal:
		f.Key = FireKey(req.scheduledAt, "")
	case req.trigger != nil && req.trigger.ID != "" && len(req.trigger.Instances) > 0:
		// every instance the trigger went to runs it: one fire, keyed by the trigger
		f.Key, f.ScheduledAt = FireKey(req.trigger.RequestedAt, "t"+req.trigger.ID), req.trigger.RequestedAt
		if req.trigger.Items != nil {
			f.Expected = len(req.trigger.Items)
		}
	default:
		// a catch-up, or an operator's trigger node for this instance alone: a fire of this peer's items
		f.Key, f.Expected = FireKey(req.scheduledAt, "p"+req.taskID), len(items)
	}
	if err := e.cfg.Follower.FireStarted(f, items); err != nil {
		return nil, err
	}
	return &f, nil
}

// followSingle follows a run that no fire() started (a catch-up after its item's run, a queued trigger):
// a fire of one item of its own.
func (e *Executor) followSingle(snap *cluster.JobSnapshot, req fireRequest, item int, executionID string) *Fire {
	if !e.follows(snap, req.workflow) {
		return nil
	}
	f := Fire{Job: req.job, Key: FireKey(req.scheduledAt, "c"+executionID), ScheduledAt: req.scheduledAt,
		Source: req.source, Expected: 1}
	_ = e.cfg.Follower.FireStarted(f, []int{item}) // no claim: it always records
	return &f
}

// followFailover follows a failover run: it joins the fire its item began in (named by its running node, or
// the scheduled fire of its time), whose start the vanished peer recorded; a run of an older peer's manual
// or catch-up item that named no fire is a fire of its own.
func (e *Executor) followFailover(snap *cluster.JobSnapshot, item int, run cluster.Running) *Fire {
	if !e.follows(snap, run.Workflow) {
		return nil
	}
	var f *Fire
	switch {
	case run.Fire != "": // the run recorded its fire
		f = &Fire{Job: snap.Name, Key: run.Fire, ScheduledAt: run.ScheduledAt, Source: ejserver.SourceFailover,
			Expected: expectedItems(snap), Joined: true}
	case run.Source == ejserver.SourceNormal:
		f = &Fire{Job: snap.Name, Key: FireKey(run.ScheduledAt, ""), ScheduledAt: run.ScheduledAt,
			Source: ejserver.SourceFailover, Expected: expectedItems(snap), Joined: true}
	default:
		f = &Fire{Job: snap.Name, Key: FireKey(run.ScheduledAt, "c"+run.ExecutionID), ScheduledAt: run.ScheduledAt,
			Source: ejserver.SourceFailover, Expected: 1}
		_ = e.cfg.Follower.FireStarted(*f, []int{item}) // no claim: it always records
	}
	e.cfg.Follower.FailedOver(*f, item, run.ExecutionID, run.InstanceID)
	return f
}

// follows reports whether a fire is followed: its job's alert rules or hooks want it, or it is a workflow
// node's (its end is the node's end, which the engine hears from the fire's ledger).
func (e *Executor) follows(snap *cluster.JobSnapshot, wf json.RawMessage) bool {
	return e.cfg.Follower != nil && (len(wf) > 0 || e.cfg.Follower.Follows(snap.Config))
}

// followNotRun tells the follower that an item of a followed fire did not run.
func (e *Executor) followNotRun(req fireRequest, item int, outcome string) {
	if req.follow != nil {
		e.cfg.Follower.ItemEnded(*req.follow, ItemEnd{Item: item, Instance: e.me.InstanceID, Source: req.source, Outcome: outcome})
	}
}

// followLeft tells the follower that an item's first request left.
func (e *Executor) followLeft(req fireRequest, item int, executionID string, at time.Time) {
	if req.follow != nil {
		e.cfg.Follower.ItemLeft(*req.follow, item, executionID, at)
	}
}

// followEnded tells the follower how an item that ran here ended.
func (e *Executor) followEnded(req fireRequest, rec ejserver.Execution) {
	if req.follow == nil {
		return
	}
	end := ItemEnd{Item: rec.ShardingItem, ExecutionID: rec.ID, Instance: e.me.InstanceID, Source: req.source,
		Outcome: OutcomeFailed, Status: rec.StatusCode, Error: rec.FailureCause, Started: rec.StartedAt,
		Duration: rec.CompletedAt.Sub(rec.StartedAt)}
	if rec.Success {
		end.Outcome, end.Error = OutcomeSucceeded, ""
	}
	if len(req.workflow) > 0 {
		end.Output = workflow.ItemOutput(rec.ResponseExcerpt)
	}
	e.cfg.Follower.ItemEnded(*req.follow, end)
}

// followSkipped tells the follower that this peer skipped its items of a fire (a disabled job is no news, nor
// a peer that had no items to skip), or that the job has no live instance at all.
func (e *Executor) followSkipped(req fireRequest, reason string) {
	if e.cfg.Follower == nil {
		return
	}
	snap := e.reg.Job(req.job)
	if snap == nil || snap.ConfigErr != nil || snap.Config.Disabled || !e.cfg.Follower.Follows(snap.Config) {
		return
	}
	noInstance := len(snap.Available()) == 0
	if !noInstance && len(snap.MyItems()) == 0 {
		return // nothing of the fire was this peer's (a disabled server after its resharding): nothing skipped
	}
	f := Fire{Job: req.job, Key: FireKey(req.scheduledAt, ""), ScheduledAt: req.scheduledAt, Source: req.source,
		Expected: expectedItems(snap)}
	e.cfg.Follower.FireSkipped(f, reason, noInstance)
}
