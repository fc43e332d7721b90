package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// begin creates the item's running node, fenced by ownership; it reports whether the item may run.
func (e *Executor) begin(snap *cluster.JobSnapshot, req fireRequest, item int, executionID, param string) bool {
	run := cluster.Running{InstanceID: e.me.InstanceID, ExecutionID: executionID, TaskID: req.taskID,
		Source: req.source, ScheduledAt: req.scheduledAt, JobParameter: param}
	if req.follow != nil {
		run.Fire = req.follow.Key
	}
	version := snap.Item(item).OwnerVersion
	for attempt := 0; attempt < 2; attempt++ {
		err := e.reg.BeginItem(req.job, item, version, run, snap.Config.Failover)
		switch {
		case err == nil:
			return true
		case errors.Is(err, cluster.ErrNotOwner):
			// our view may lag a resharding by a moment: let the registry settle and look again
			ctx, cancel := context.WithTimeout(e.soft, time.Second)
			fresh, werr := e.reg.Wait(ctx, req.job, func(s *cluster.JobSnapshot) bool { return s.Settled })
			cancel()
			if werr != nil || fresh == nil || !fresh.IsMyItem(item) || fresh.Item(item).OwnerVersion == version {
				e.log.Info("item is no longer this peer's: not run", "job", req.job, "item", item)
				return false
			}
			version = fresh.Item(item).OwnerVersion
		case errors.Is(err, cluster.ErrItemRunning):
			cur, v, ok, rerr := e.reg.ReadRunning(req.job, item)
			if rerr != nil {
				e.log.Warn("could not read a running item", "job", req.job, "item", item, "err", rerr)
				return false
			}
			stale := ok && (cur.InstanceID == e.me.InstanceID || !e.online(req.job, cur.InstanceID))
			if ok && cur.Async {
				// accepted work: its lease says whether it still runs, wherever the peer that sent it is
				live, lerr := e.reg.LeaseLive(cur.ExecutionID)
				if lerr != nil {
					e.log.Warn("could not read the lease of a running item", "job", req.job, "item", item, "err", lerr)
					return false
				}
				stale = !live
			}
			if !ok || stale {
				// left by this instance id before (not in flight here), or by a peer that is gone
				if stale {
					e.log.Warn("clearing a stale running node", "job", req.job, "item", item, "instance", cur.InstanceID)
					if err := e.reg.ClearStaleRunning(req.job, item, v); err != nil {
						return false
					}
				}
				continue
			}
			if snap.Config.Misfire && (req.source != ejserver.SourceManual || cur.Async) {
				// a manual trigger behind accepted work is queued as its one catch-up (the work may last hours)
				_ = e.reg.SetMisfire(req.job, item)
			}
			what := "item is running on another instance: not run"
			if cur.Async {
				what = "item's accepted work is running: not run now; one catch-up follows its end"
			}
			e.log.Info(what, "job", req.job, "item", item, "instance", cur.InstanceID, "execution_id", cur.ExecutionID)
			return false
		default:
			e.log.Warn("could not record the item as running: not run", "job", req.job, "item", item, "err", err)
			return false
		}
	}
	return false
}

func (e *Executor) online(job, instance string) bool {
	snap := e.reg.Job(job)
	return snap != nil && snap.Online(instance)
}
