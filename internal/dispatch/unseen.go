package dispatch

import (
	"slices"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
)

// A peer that schedules a job after a fire of it was handed off (a restarted peer's new process loading its
// jobs, a peer started while the cluster runs) decided nothing for that fire, and a resharding can still move
// an item of it here from a peer that decided it and had not begun it: a direct rebalance commits once the
// fire's Firing window has closed, and a loaded peer began its fires 4-40 s after deciding them in the
// steady-100000 restarts. The loser's begin is then fenced out by the new owner's version, and the fire ran on
// no peer (docs/benchmarks.md, runs 19 and 20: 1,051 and 1 fires of items handed from the stopped process to a
// survivor, then to the new process).
//
// So a peer that schedules a job anew counts the job's last fire before then as decided with no item
// (decidedFire.prev set): items a resharding gives it while that fire is recent run for it, as gained items do
// for any decided fire (gained.go), with two more conditions, for this peer cannot know the fire's story:
//   - the job's settings ran the fire: its config was last written before it (its creation, an edit, an
//     enable, a pause come after: nobody had it to run), its calendars, pause and endAt let it run, and it
//     counts no remainingFires (whether that fire was counted is not known here);
//   - the item's completed node shows the fire before it ran and not this one: the job was being run just
//     before, by peers that were up to decide this fire too. Without it, a cluster started again after every
//     peer was down would run the fire that fell in the outage, which only catchUp does.

// Scheduled is told that this peer scheduled the job with sched, which it did not have scheduled before (its
// process started, or the job was created or enabled); snap is the job as scheduled.
func (e *Executor) Scheduled(snap *cluster.JobSnapshot, sched Schedule) {
	if !snap.Config.MonitorExecution {
		return // its runs leave no completed node to tell what ran (decided)
	}
	now := e.clk.Now()
	prev, at := lastFires(sched, now.Add(-schedule.MaxShardingWait), now)
	if prev.IsZero() {
		return
	}
	until := gainedUntil(at, sched.Next(at), e.cfg.ReshardWait, e.cfg.FireLead, snap.Config.Misfire)
	if !now.Before(until) || !e.settingsRan(snap, at) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.jobStatus(snap.Name); st.decided.at.Before(at) {
		st.decided = decidedFire{at: at, until: until, prev: prev}
	}
}

// lastFires returns the last two scheduled times of sched in (since, now]: prev before at (zero when fewer
// than two).
func lastFires(sched Schedule, since, now time.Time) (prev, at time.Time) {
	for t := sched.Next(since); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		prev, at = at, t
	}
	return prev, at
}

// settingsRan reports whether the job's settings ran its fire scheduled at (see above).
func (e *Executor) settingsRan(snap *cluster.JobSnapshot, at time.Time) bool {
	cfg := snap.Config
	if cfg.Disabled || cfg.RemainingFires > 0 || !snap.ConfigChanged.Before(at) {
		return false
	}
	if e.cfg.Steering == nil {
		return true
	}
	r, err := e.cfg.Steering.Rules(cfg)
	return err == nil && r.Decide(at).Run
}

// dropUnseen keeps the items of a fire this peer did not decide whose completed node shows the fire before it
// (prev) ran and not this one (see above): a node that does not tell, as for ranFire strict, or none, keeps none.
func (e *Executor) dropUnseen(req fireRequest, items []int, prev time.Time) []int {
	return slices.DeleteFunc(items, func(item int) bool {
		last, ok, err := e.reg.LastCompleted(req.job, item)
		return ranFire(last, ok, err, req.scheduledAt, true) || last.LastFire().Before(prev)
	})
}
