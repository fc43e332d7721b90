package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
)

// launch starts a new execution of item, whose entry in e.running its caller made; it takes over one count of
// e.wg that its caller added. When the item records its run (monitorExecution), the running node's create is
// a record on the registry's write batcher, and the item's goroutine starts with its answer: through a
// restart at 100,000 jobs a survivor's items waited seconds for ZooKeeper in their begins, thousands at once,
// each on a goroutine (docs/benchmarks.md). An item whose run starts a workflow's fire of its own
// (followSingle writes to ZooKeeper) begins on its goroutine, as before.
func (e *Executor) launch(snap *cluster.JobSnapshot, req fireRequest, item int) {
	if !snap.Config.MonitorExecution || req.overlap || (req.follow == nil && e.follows(snap, req.workflow)) {
		go func() {
			defer e.wg.Done()
			growStack()
			e.runItem(snap, req, item, "", -2)
		}()
		return
	}
	executionID, param := e.prepareRun(snap, &req, item, "")
	b := e.beginningOf(snap, req, item, executionID, param)
	e.reg.BeginItemThen(req.job, item, b.version, b.run, b.persistent, func(err error) {
		go func() {
			defer e.wg.Done()
			growStack()
			finish := e.runFinish(req, item, executionID)
			if runningVersion, ok := e.begun(snap, &req, item, b, err); ok {
				e.deliver(snap, req, item, executionID, param, runningVersion, finish)
				return
			}
			finish()
		}()
	})
}

// prepareRun readies a run of item: its execution id (a new one unless given), its job parameter, the session
// it begins under, its jitter, and its task and fire when no fire() made them.
func (e *Executor) prepareRun(snap *cluster.JobSnapshot, req *fireRequest, item int, executionID string) (string, string) {
	param := snap.Config.JobParameter
	if req.param != nil {
		param = *req.param
	}
	if executionID == "" {
		executionID = ejserver.NewExecutionID()
	}
	e.sessionOf(req) // a follow-up or failover run begins under the session of now
	withJitter(snap.Config, req)
	if req.task == nil && !req.untraced { // a follow-up or failover run is a task of its own
		req.task = e.newTask(req.taskID, req.job, req.source, []int{item})
	}
	if req.follow == nil && req.source != ejserver.SourceFailover {
		req.follow = e.followSingle(snap, *req, item, executionID)
	}
	return executionID, param
}

// begun finishes an item's begin from its first try's outcome (begin) and returns the running node's version
// the run holds: 0 when it created the node, -1 when it runs beside another execution's (ALLOW: req becomes
// an overlapping run). An item that may not run is ended here as not run.
func (e *Executor) begun(snap *cluster.JobSnapshot, req *fireRequest, item int, b beginning, first error) (int32, bool) {
	ok, alongside := e.begin(snap, *req, item, b, first)
	switch {
	case !ok:
		e.taskItemEnded(req.task, item, false, false)
		e.followNotRun(*req, item, OutcomeNotRun)
		return 0, false
	case alongside:
		req.overlap = true
		return -1, true // ALLOW beside another peer's run: no node of its own
	}
	return 0, true // created by us
}

// beginning is an item's begin: the running node it creates and the owner version it is fenced by.
type beginning struct {
	run        cluster.Running
	version    int32
	persistent bool
}

// beginningOf makes an item's begin from the fire and the job's snapshot.
func (e *Executor) beginningOf(snap *cluster.JobSnapshot, req fireRequest, item int, executionID, param string) beginning {
	run := cluster.Running{InstanceID: e.me.InstanceID, ExecutionID: executionID, TaskID: req.taskID,
		Source: req.source, ScheduledAt: req.scheduledAt, JobParameter: param, Workflow: req.workflow}
	if req.follow != nil {
		run.Fire = req.follow.Key
	}
	// a running node outlives this peer when a failover re-runs the item, or when a survivor records a lost
	// execution (docs/reliability.md)
	return beginning{run: run, version: snap.Item(item).OwnerVersion, persistent: snap.Config.Failover || e.cfg.Lost != nil}
}

// begin decides, from the outcome of its first try (first), whether the item may run: it tries again where
// that can help, fenced by ownership, and reports whether the item runs beside an execution that holds the
// node (overlapPolicy ALLOW: then it holds none).
func (e *Executor) begin(snap *cluster.JobSnapshot, req fireRequest, item int, b beginning, first error) (ok, alongside bool) {
	run, version, executionID := b.run, b.version, b.run.ExecutionID
	for attempt := 0; attempt < beginTries; attempt++ {
		err := first
		if attempt > 0 {
			err = e.reg.BeginItem(req.job, item, version, run, b.persistent)
		}
		switch {
		case err == nil:
			return true, false
		case errors.Is(err, cluster.ErrNotOwner):
			// our view may lag a resharding by a moment: let the registry settle and look again
			ctx, cancel := context.WithTimeout(e.soft, time.Second)
			fresh, werr := e.reg.Wait(ctx, req.job, func(s *cluster.JobSnapshot) bool { return s.ItemsSettled })
			cancel()
			if werr != nil || fresh == nil || !fresh.IsMyItem(item) || fresh.Item(item).OwnerVersion == version {
				e.log.Info("item is no longer this peer's: not run", "job", req.job, "item", item)
				e.unmark(req, item)
				return false, false
			}
			version = fresh.Item(item).OwnerVersion
		case errors.Is(err, cluster.ErrItemRunning):
			cur, v, ok, rerr := e.reg.ReadRunning(req.job, item)
			if rerr != nil {
				e.log.Warn("could not read a running item", "job", req.job, "item", item, "err", rerr)
				e.owe(snap, item, req)
				return false, false
			}
			if ok && cur.ExecutionID == executionID {
				return true, false // an earlier try of this very begin landed, though its answer was lost
			}
			stale := ok && (cur.InstanceID == e.me.InstanceID || !e.online(req.job, cur.InstanceID))
			if ok && cur.Async {
				// accepted work: its lease says whether it still runs, wherever the peer that sent it is
				live, lerr := e.reg.LeaseLive(cur.ExecutionID)
				if lerr != nil {
					e.log.Warn("could not read the lease of a running item", "job", req.job, "item", item, "err", lerr)
					return false, false
				}
				stale = !live
			}
			if !ok || stale {
				// left by this instance id before (not in flight here), or by a peer that is gone
				if stale {
					e.log.Warn("clearing a stale running node", "job", req.job, "item", item, "instance", cur.InstanceID)
					if e.cfg.Lost != nil && !cur.Async {
						if err := e.cfg.Lost.Record(req.job, item, snap.Config.ShardingTotalCount, cur); err != nil {
							e.log.Warn("could not record the stale running node's execution; the node is kept", "job", req.job,
								"item", item, "execution_id", cur.ExecutionID, "err", err)
							return false, false
						}
					}
					end := func() error { return e.reg.EndStaleRunning(req.job, item, v, cur, e.clk.Now()) }
					if cur.Async {
						end = func() error { return e.reg.ClearStaleRunning(req.job, item, v) }
					}
					if err := end(); err != nil {
						return false, false
					}
				}
				continue
			}
			switch e.busyElsewhere(snap, req, item, cur) {
			case elsewhereRunAlongside:
				return true, true
			case elsewhereCancelled:
				continue
			}
			if snap.Config.Misfire && (!req.source.OnRequest() || cur.Async) {
				// a manual trigger behind accepted work is queued as its one catch-up (the work may last hours)
				_ = e.reg.SetMisfire(req.job, item)
			}
			what := "item is running on another instance: not run"
			if cur.Async {
				what = "item's accepted work is running: not run now; one catch-up follows its end"
			}
			e.log.Info(what, "job", req.job, "item", item, "instance", cur.InstanceID, "execution_id", cur.ExecutionID)
			return false, false
		default:
			// the write's outcome is unknown (the connection broke): it may have landed. Try again once the
			// session is back: a landed try shows as this execution's running node.
			if attempt+1 < beginTries && e.awaitLease(beginResumeWait) {
				e.log.Info("could not record the item as running; trying again", "job", req.job, "item", item, "err", err)
				continue
			}
			e.log.Warn("could not record the item as running: not run", "job", req.job, "item", item, "err", err)
			e.owe(snap, item, req)
			e.dropOwnRunning(req.job, item, executionID)
			return false, false
		}
	}
	return false, false
}

// beginTries bounds begin's tries; beginResumeWait is how long a try whose outcome is unknown waits for the
// ZooKeeper session to come back before the next.
const (
	beginTries      = 4
	beginResumeWait = 2 * time.Second
)

// awaitLease waits up to d for this peer's ZooKeeper session to be sound again.
func (e *Executor) awaitLease(d time.Duration) bool {
	for waited := time.Duration(0); ; waited += 100 * time.Millisecond {
		if e.reg.Lease() {
			return true
		}
		if waited >= d || !clock.Sleep(e.clk, 100*time.Millisecond, e.soft.Done()) {
			return false
		}
	}
}

// dropOwnRunning removes the running node of an execution that was not run, if a begin whose answer was lost
// created it: left there, it names a live instance, no failover takes it, and the job's resharding waits for
// it (found by the nemesis soak). It tries for about two minutes, as endItem does.
func (e *Executor) dropOwnRunning(job string, item int, executionID string) {
	backoff := endBackoffMin
	for try := 1; try <= endRetries; try++ {
		cur, v, ok, err := e.reg.ReadRunning(job, item)
		if err == nil {
			if ok && cur.ExecutionID == executionID {
				err = e.reg.ClearStaleRunning(job, item, v)
			}
			if err == nil {
				return
			}
		}
		if !clock.Sleep(e.clk, backoff, e.hard.Done()) {
			return
		}
		backoff = min(2*backoff, endBackoffMax)
	}
	e.log.Error("could not remove the running node of an item that was not run", "job", job, "item", item, "execution_id", executionID)
}

func (e *Executor) online(job, instance string) bool {
	if snap := e.reg.Job(job); snap != nil && snap.Online(instance) {
		return true
	}
	// the snapshot may not list an instance that registered since its last read: ZooKeeper says; when it
	// cannot, the instance is presumed online (its node is kept, and looked at again later)
	ok, err := e.reg.InstanceOnline(job, instance)
	return err != nil || ok
}
