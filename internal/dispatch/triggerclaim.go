package dispatch

import (
	"sync"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// A manual trigger is a node trigger/{instanceId} per instance. A plain one is deleted as it is read, as
// ElasticJob does: a peer lost before it runs the items loses the trigger with it. A workflow node's fire
// must not lose items that way (its run would fail with items "LOST: no peer started it"), so its trigger is
// read without deleting it (a claim) and deleted in the transaction that records the fire's start in its
// ledger (Follower.FireStarted). A peer lost in between leaves the trigger waiting, which the workflow
// engine hands on to the items' owners once the peer is seen gone; a peer that finds its claim handed on
// when it records its start runs nothing. A claimed trigger the fire did not consume (the fire was skipped,
// or no item was this peer's) is deleted when the fire returns.

// triggerGuard runs one trigger of a job at a time on this peer: a trigger node read but not yet consumed
// is still there when its job is refreshed again, which must not run it twice. A trigger asked for while
// one runs is looked for again when it returns.
type triggerGuard struct {
	mu   sync.Mutex
	busy map[string]bool // job -> asked again while running
}

// enter reports whether job's trigger may run now; if not, the running one looks again when it leaves.
func (g *triggerGuard) enter(job string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if again, running := g.busy[job]; running {
		if !again {
			g.busy[job] = true
		}
		return false
	}
	if g.busy == nil {
		g.busy = map[string]bool{}
	}
	g.busy[job] = false
	return true
}

// leave ends a run of job's trigger; again reports that it was asked for meanwhile (the run continues).
func (g *triggerGuard) leave(job string) (again bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy[job] {
		g.busy[job] = false
		return true
	}
	delete(g.busy, job)
	return false
}

// Trigger picks up this peer's trigger/{instanceId} node of job, if any, and runs the job once (MANUAL, or
// WORKFLOW for a workflow node's fire).
func (e *Executor) Trigger(job string) {
	if !e.triggers.enter(job) {
		return
	}
	e.spawn(func() {
		for {
			e.runTrigger(job)
			if !e.triggers.leave(job) {
				return
			}
		}
	})
}

// runTrigger runs the trigger node of job waiting for this peer, if there is one.
func (e *Executor) runTrigger(job string) {
	req, claim, ok, err := e.reg.PeekTrigger(job)
	if err != nil {
		e.log.Warn("could not read a manual trigger", "job", job, "err", err)
		return
	}
	if !ok {
		return
	}
	if !claimable(req) || e.cfg.Follower == nil {
		if gone, err := e.reg.DropTrigger(job, claim); err != nil || gone {
			if err != nil {
				e.log.Warn("could not take a manual trigger", "job", job, "err", err)
			}
			return
		}
		claim = nil
	}
	if e.cfg.TriggerRead != nil {
		e.cfg.TriggerRead(job, req)
	}
	if claim != nil {
		defer func() {
			if _, err := e.reg.DropTrigger(job, claim); err != nil {
				e.log.Warn("could not delete a workflow trigger this peer ran", "job", job, "err", err)
			}
		}()
	}
	if req.Misfire {
		// the catch-up of items whose accepted run ended after fires found them running
		e.log.Info("misfire catch-up after an accepted item ended", "job", job, "items", req.Items)
		e.fire(fireRequest{job: job, scheduledAt: e.clk.Now(), source: ejserver.SourceMisfire, items: req.Items})
		return
	}
	source := ejserver.SourceManual
	if len(req.Workflow) > 0 {
		source = ejserver.SourceWorkflow // a workflow node's fire (its body carries the run)
	}
	e.log.Info("manual trigger", "job", job, "trigger", req.ID, "items", req.Items, "source", source)
	e.fire(fireRequest{job: job, scheduledAt: e.clk.Now(), source: source, param: req.JobParameter, items: req.Items,
		trigger: &req, claim: claim, workflow: req.Workflow})
}

// claimable reports whether a trigger is consumed with its fire's start record rather than as it is read: a
// workflow node's fire, which is followed in a ledger keyed by the trigger (followFire) and whose waiting
// trigger the engine hands on when its instance vanishes.
func claimable(req cluster.TriggerRequest) bool {
	return len(req.Workflow) > 0 && req.ID != "" && len(req.Instances) > 0 && !req.Misfire
}
