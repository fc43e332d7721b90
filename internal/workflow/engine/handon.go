package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
)

// A running node's fire is a trigger node per instance that could own its items, written with the run's
// step. An instance that vanished before taking its trigger (a kill -9 of the engine's own peer right after
// the step, say) leaves it waiting forever, and its items would end LOST. The duty holder hands such a
// trigger on: once the job's sharding gave every item to an online instance, the items of the fire that no
// start record of its ledger names go to their new owners as triggers of the same fire (same id, so the
// same ledger), in one transaction that deletes the dead trigger, fenced and checked against its version.
//
// It waits for the rest of the fire first: no other trigger of the fire may still wait for a live instance,
// and the trigger must be found dead with a settled sharding on two ticks in a row, so that a live peer that
// took its trigger has recorded its items' start (it does so as soon as its sharding is settled, before any
// item leaves) before the missing items are counted.

// handOnRegistry is what the hand-on needs from the registry (part of Registry).
type handOnRegistry interface {
	WaitingTriggers(job string) ([]cluster.WaitingTrigger, error)
	FireStartedItems(job, fire string) ([]int, bool, error)
	HandOnTrigger(fence any, job string, from cluster.WaitingTrigger, to map[string]cluster.TriggerRequest) error
}

// handOn hands on the triggers of running nodes' fires that wait for vanished instances.
func (d *duty) handOn() {
	jobs := map[string]bool{}
	for fk := range d.fires {
		job, _, _ := cutFire(fk)
		jobs[job] = true
	}
	seen := map[string]bool{}
	for job := range jobs {
		snap := d.e.reg.Job(job)
		if snap == nil || snap.ConfigErr != nil {
			continue
		}
		waits, err := d.e.reg.WaitingTriggers(job)
		if err != nil {
			continue
		}
		for _, w := range waits {
			fk := job + "/" + dispatch.FireKey(w.Request.RequestedAt, "t"+w.Request.ID)
			if snap.Online(w.Instance) {
				continue
			}
			if _, ok := d.fires[fk]; !ok {
				d.e.log.Debug("workflow node: a vanished instance's trigger is not of a running node's fire", "job", job,
					"fire", fk, "instance", w.Instance)
				continue
			}
			key := fk + "@" + w.Instance
			if why := handOnBlocked(snap, w, waits); why != "" {
				d.e.log.Debug("workflow node: a vanished instance's trigger waits before its hand-on", "job", job,
					"fire", fk, "instance", w.Instance, "reason", why)
				continue
			}
			seen[key] = true
			if !d.orphans[key] {
				continue // the next tick hands it on if it is still so
			}
			d.handOnOne(snap, fk, w)
		}
	}
	d.orphans = seen
}

// handOnBlocked says why a dead instance's trigger cannot be handed on now ("": it can): the job's sharding
// must be settled with every enabled item on an online instance, and no other trigger of the same fire may
// wait for a live one.
func handOnBlocked(snap *cluster.JobSnapshot, w cluster.WaitingTrigger, waits []cluster.WaitingTrigger) string {
	switch {
	case snap.Necessary:
		return "resharding flagged"
	case !snap.Sharded():
		return "not sharded"
	case !snap.Settled:
		return "job's nodes being read"
	}
	for i := range snap.Config.ShardingTotalCount {
		if it := snap.Item(i); !it.Disabled && !snap.Online(it.Owner) {
			return fmt.Sprintf("item %d's owner %q offline", i, it.Owner)
		}
	}
	for _, o := range waits {
		if o.Instance != w.Instance && o.Request.ID == w.Request.ID && snap.Online(o.Instance) {
			return "a live instance's trigger of the fire waits: " + o.Instance
		}
	}
	return ""
}

// handOnOne moves one dead instance's trigger to the owners of the fire's items that did not start.
func (d *duty) handOnOne(snap *cluster.JobSnapshot, fk string, w cluster.WaitingTrigger) {
	_, fire, _ := cutFire(fk)
	started, _, err := d.e.reg.FireStartedItems(snap.Name, fire)
	if err != nil {
		return
	}
	byOwner := map[string][]int{}
	for i := range snap.Config.ShardingTotalCount {
		it := snap.Item(i)
		if it.Disabled || slices.Contains(started, i) || (w.Request.Items != nil && !slices.Contains(w.Request.Items, i)) {
			continue
		}
		byOwner[it.Owner] = append(byOwner[it.Owner], i)
	}
	owners := make([]string, 0, len(byOwner))
	for o := range byOwner {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	to := make(map[string]cluster.TriggerRequest, len(byOwner))
	for o, items := range byOwner {
		req := w.Request
		req.Items, req.Instances = items, owners
		to[o] = req
	}
	err = d.e.reg.HandOnTrigger(d.fence, snap.Name, w, to)
	switch {
	case err == nil:
		d.e.log.Info("workflow node: the trigger of a vanished instance handed on to the items' owners", "job", snap.Name,
			"fire", fire, "instance", w.Instance, "to", owners, "items", byOwner)
	case errors.Is(err, cluster.ErrTriggerPending), errors.Is(err, cluster.ErrRunChanged):
		// a trigger still waits on an owner, or the dead one went: the next tick looks again
	default:
		d.e.log.Warn("workflow node: could not hand on a vanished instance's trigger", "job", snap.Name, "fire", fire, "err", err)
	}
}

// cutFire splits a "job/fire" key.
func cutFire(fk string) (job, fire string, ok bool) { return strings.Cut(fk, "/") }
