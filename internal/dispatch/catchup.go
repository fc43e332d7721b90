package dispatch

import (
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
)

// The executor's two ways of running what a fire alone would miss: the fires nobody ran while the whole cluster
// was down (replayMissedFires), and a manual trigger's items owned by instances that registered after it.

// missedFires implements catchUp (replayMissedFires is catchUp last). With last, on this peer's first
// scheduled fire of the job, each of its items whose last recorded run (from any peer) is older than the
// previous scheduled time missed fires nobody ran (the whole cluster was down): the latest of them runs once.
// With all, every item this peer did not hold at its previous scheduled fire of the job is looked at (so an
// item gained from a peer that died or froze until its session ended is too), and every missed fire within
// catchUpWindowSeconds runs, oldest first. It returns, per item, the missed times to run.
func (e *Executor) missedFires(snap *cluster.JobSnapshot, req fireRequest, items []int) map[int][]time.Time {
	if req.source != ejserver.SourceNormal || e.cfg.ScheduleOf == nil {
		return nil
	}
	mode := snap.Config.CatchUpMode()
	e.mu.Lock()
	first := !e.replayed[req.job]
	e.replayed[req.job] = true
	look := items
	if mode == schedule.CatchUpAll {
		held := e.held[req.job]
		look = slices.DeleteFunc(slices.Clone(items), func(i int) bool { return slices.Contains(held, i) })
		e.held[req.job] = slices.Clone(items)
	} else {
		delete(e.held, req.job)
	}
	e.mu.Unlock()
	if mode == schedule.CatchUpNone || (mode == schedule.CatchUpLast && !first) || len(look) == 0 {
		return nil
	}
	sched := e.cfg.ScheduleOf(req.job)
	if sched == nil {
		return nil
	}
	window := time.Duration(snap.Config.CatchUpWindowSeconds) * time.Second
	out := map[int][]time.Time{}
	for _, item := range look {
		last, ok, err := e.reg.LastCompleted(req.job, item)
		if err != nil || !ok {
			continue // never ran: nothing was missed
		}
		from := last.ScheduledAt
		if mode == schedule.CatchUpAll {
			// a fire started and not ended (its peer died) is not missed: a failover or the lost recorder has it
			if run, _, ok, err := e.reg.ReadRunning(req.job, item); err == nil && ok && run.ScheduledAt.After(from) {
				from = run.ScheduledAt
			}
		}
		plan := schedule.Missed(sched.Next, from, req.scheduledAt, mode, window)
		if len(plan.Fires) > 0 {
			out[item] = plan.Fires
			e.log.Info("fires were missed while nobody could run them: catch-up follows", "job", req.job, "item", item,
				"catch_up", string(mode), "last_run", last.ScheduledAt, "fires", len(plan.Fires), "dropped", plan.Dropped,
				"oldest", plan.Fires[0])
		}
	}
	return out
}

// queueCatchUp queues an item's missed fires behind its run of this fire: last as its one misfire catch-up,
// all as MISFIRE runs, oldest first, each with its own scheduled time, ahead of queued manual triggers.
func (e *Executor) queueCatchUp(snap *cluster.JobSnapshot, req fireRequest, item int, fires []time.Time) {
	if len(fires) == 0 {
		return
	}
	all := snap.Config.CatchUpMode() == schedule.CatchUpAll
	var catchUps []fireRequest
	for _, at := range fires {
		catchUps = append(catchUps, fireRequest{job: req.job, scheduledAt: at, source: ejserver.SourceMisfire,
			taskID: ejserver.TaskID(req.job, []int{item}, false, e.me.InstanceID)})
	}
	if !all {
		catchUps = catchUps[len(catchUps)-1:]
	}
	e.mu.Lock()
	r := e.running[itemKey{req.job, item}]
	switch {
	case r != nil && !all:
		if r.misfireAt.IsZero() {
			r.misfireAt = fires[len(fires)-1] // one MISFIRE catch-up follows this run
		}
		e.mu.Unlock()
	case r != nil:
		r.triggers = append(catchUps, r.triggers...)
		e.mu.Unlock()
	default:
		// this fire's run ended already (or did not start here): the catch-ups run now, one after another
		e.mu.Unlock()
		e.startFollowUp(snap, catchUps[0], item, catchUps[1:])
	}
}

// handOnTrigger gives a manual trigger to the online instances that own requested items but that the
// trigger did not reach: they registered after the request listed its instances, and a resharding (done for
// this trigger, or by the leader on its own a moment earlier) gave them items. Only the job's leader does
// it, once per trigger it runs, so no instance is triggered twice.
func (e *Executor) handOnTrigger(snap *cluster.JobSnapshot, t cluster.TriggerRequest) {
	if len(t.Instances) == 0 {
		return // an operator's trigger node: meant for one instance only
	}
	var missing []string
	available := snap.Available()
	for i := range snap.Config.ShardingTotalCount {
		it := snap.Item(i)
		if it.Owner == "" || it.Disabled || (t.Items != nil && !slices.Contains(t.Items, i)) ||
			!slices.Contains(available, it.Owner) {
			continue
		}
		if !slices.Contains(t.Instances, it.Owner) && !slices.Contains(missing, it.Owner) {
			missing = append(missing, it.Owner)
		}
	}
	if len(missing) == 0 {
		return
	}
	slices.Sort(missing)
	t.Instances = slices.Concat(t.Instances, missing)
	if err := e.reg.CreateTriggers(snap.Name, missing, t); err != nil {
		e.log.Warn("could not hand the manual trigger to instances that joined after it", "job", snap.Name,
			"trigger", t.ID, "instances", missing, "err", err)
		return
	}
	e.log.Info("manual trigger handed to instances the resharding gave items to", "job", snap.Name, "trigger", t.ID,
		"instances", missing)
}
