package engine

import (
	"encoding/json"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/workflow"
)

// The duty holder's upkeep on each tick: scheduled runs, lost fires, old ended runs.

// pruneEnded drops, at most once a minute, the ended runs beyond KeepRuns of the workflows a run of which
// ended since (reading each run the engine does not follow: a PENDING one just made is kept).
func (d *duty) pruneEnded() {
	now := d.e.clk.Now()
	if len(d.endedIn) == 0 || now.Sub(d.prunedAt) < time.Minute {
		return
	}
	d.prunedAt = now
	for wf := range d.endedIn {
		ids, err := d.e.reg.RunIDs(wf)
		if err != nil || len(ids) <= d.e.cfg.KeepRuns {
			continue
		}
		var ended []string
		for _, id := range ids {
			if d.runs[runKey(wf, id)] != nil {
				continue
			}
			if r, _, err := d.read(wf, id); err == nil && r.State.Ended() {
				ended = append(ended, id)
			}
		}
		d.prune(wf, ended)
	}
	clear(d.endedIn)
}

// prune drops the oldest ended runs of a workflow beyond KeepRuns (ids sort by creation).
func (d *duty) prune(wf string, ended []string) {
	for len(ended) > d.e.cfg.KeepRuns {
		if err := d.e.reg.DropRun(d.fence, wf, ended[0]); err != nil {
			return
		}
		ended = ended[1:]
	}
}

// sweep fails the running nodes whose fire shows neither a ledger nor a waiting trigger for LostGrace: the
// fire never started (its instances vanished before picking up the trigger) or every item was refused.
func (d *duty) sweep() {
	d.handOn()
	now := d.e.clk.Now()
	var lost []string
	for fk, k := range d.fires {
		lr := d.runs[k]
		if lr == nil {
			delete(d.fires, fk)
			continue
		}
		var n workflow.NodeRun
		for _, x := range lr.run.Nodes {
			if x.State == workflow.NodeRunning && x.Job+"/"+x.Fire == fk {
				n = x
			}
		}
		if n.Fire == "" || now.Sub(n.FiredAt) < d.e.cfg.LostGrace/2 {
			continue
		}
		if open, err := d.e.reg.FireOpen(n.Job, n.Fire); err != nil || open || d.triggerWaits(n) {
			delete(d.lost, fk)
			continue
		}
		if first, ok := d.lost[fk]; !ok {
			d.lost[fk] = now
		} else if now.Sub(first) >= d.e.cfg.LostGrace/2 {
			lost = append(lost, fk)
		}
	}
	if len(lost) == 0 {
		return
	}
	// a fire closed meanwhile posted its end with the close: read the inbox first
	if names, err := d.e.reg.InboxNames(); err == nil {
		d.inbox(names)
	}
	for _, fk := range lost {
		k, ok := d.fires[fk]
		if !ok {
			continue
		}
		lr := d.runs[k]
		for _, n := range lr.run.Nodes {
			if n.State == workflow.NodeRunning && n.Job+"/"+n.Fire == fk {
				d.step(lr.run.Workflow, lr.run.ID, workflow.Event{Kind: workflow.EventNodeEnded, Node: n.Name, Fire: n.Fire,
					Error: "the node's fire never started (no instance picked up its trigger) or its end was lost"})
			}
		}
	}
}

// triggerWaits reports whether a trigger of the node's fire still waits for an online instance.
func (d *duty) triggerWaits(n workflow.NodeRun) bool {
	snap := d.e.reg.Job(n.Job)
	if snap == nil {
		return false
	}
	for _, inst := range snap.Available() {
		if ok, err := d.e.reg.TriggerWaiting(n.Job, inst); err != nil || ok {
			return true
		}
	}
	return false
}

// schedule makes the scheduled runs that are due (fenced: only the duty holder makes them).
func (d *duty) schedule() {
	now := d.e.clk.Now()
	for name, w := range d.defs {
		if w.Cron == "" || w.Disabled {
			delete(d.due, name)
			continue
		}
		if d.refreshDue(name, w, now) {
			continue
		}
		next := d.due[name]
		if now.Before(next) {
			continue
		}
		if run, why := d.calendarsLet(w, next); !run {
			d.skipDue(w, next, now, why)
			delete(d.due, name)
			continue
		}
		id := ejserver.NewExecutionID()
		r := workflow.NewRun(w, id, workflow.TriggerSchedule, next, now, nil)
		data, _ := json.Marshal(r)
		msg, _ := json.Marshal(workflow.Message{Kind: workflow.MsgStart, Workflow: name, Run: id})
		if err := d.e.reg.CreateRun(d.fence, name, id, data, msg); err != nil {
			d.e.log.Warn("could not make a scheduled workflow run", "workflow", name, "err", err)
			continue
		}
		delete(d.due, name) // the next due time is computed from now on the next tick
	}
}
