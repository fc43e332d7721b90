package dispatch

import (
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// The executor's two ways of running what a fire alone would miss: the fires nobody ran while the whole cluster
// was down (replayMissedFires), and a manual trigger's items owned by instances that registered after it.

// missedFires implements replayMissedFires: on this peer's first scheduled fire of the job, each of its
// items whose last recorded run (from any peer) is older than the previous scheduled time missed fires
// nobody ran (the whole cluster was down). It returns, per such item, the latest missed time.
func (e *Executor) missedFires(snap *cluster.JobSnapshot, req fireRequest, items []int) map[int]time.Time {
	if req.source != ejserver.SourceNormal || e.cfg.ScheduleOf == nil {
		return nil
	}
	e.mu.Lock()
	first := !e.replayed[req.job]
	e.replayed[req.job] = true
	e.mu.Unlock()
	if !first || !snap.Config.ReplayMissedFires {
		return nil
	}
	sched := e.cfg.ScheduleOf(req.job)
	if sched == nil {
		return nil
	}
	out := map[int]time.Time{}
	for _, item := range items {
		last, ok, err := e.reg.LastCompleted(req.job, item)
		if err != nil || !ok {
			continue // never ran: nothing was missed
		}
		var latest time.Time
		for t := sched.Next(last.ScheduledAt); !t.IsZero() && t.Before(req.scheduledAt); t = sched.Next(t) {
			latest = t
		}
		if !latest.IsZero() {
			out[item] = latest
			e.log.Info("fires were missed while the cluster was down: one catch-up follows", "job", req.job, "item", item,
				"last_run", last.ScheduledAt, "latest_missed", latest)
		}
	}
	return out
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
