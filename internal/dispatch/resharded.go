package dispatch

import (
	"slices"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// notRunYet drops the items whose fire at req.scheduledAt already ran (their completed node says so). A fire
// that waited for a resharding may have been given items whose previous owner ran this very fire before the
// resharding (the leader waits for running items, so that run has ended and recorded itself).
func (e *Executor) notRunYet(req fireRequest, items []int) []int { return e.dropRan(req, items, false) }

// dropRan drops the items whose completed node names a run of req's fire or a later one; a run ended as LOST
// (its peer vanished mid-run, its outcome unknown) counts only with lost.
func (e *Executor) dropRan(req fireRequest, items []int, lost bool) []int {
	return slices.DeleteFunc(items, func(item int) bool {
		last, ok, err := e.reg.LastCompleted(req.job, item)
		// a run ended as LOST is no sign for a held fire that this fire ran: as before it was recorded
		if err != nil || !ok || last.Source.OnRequest() || (!lost && last.State == cluster.CompletedLost) || last.ScheduledAt.Before(req.scheduledAt) {
			return false
		}
		e.log.Info("item already ran this fire on its previous owner: not run again", "job", req.job, "item", item,
			"instance", last.InstanceID, "execution_id", last.ExecutionID)
		return true
	})
}

// reshardedNear says whether this peer saw the job's owners change so close to a fire due at scheduledAt
// that an item's previous owner may have begun this very fire under the old sharding: from the earliest it
// could hand the fire off (FireLead before it, and a margin for the peers' clocks and the watch's delay)
// on. The leader's commit waits for such a run to end (its fence), so the completed node then tells.
func (e *Executor) reshardedNear(snap *cluster.JobSnapshot, scheduledAt time.Time) bool {
	return !snap.OwnersChangedAt.IsZero() && snap.OwnersChangedAt.After(scheduledAt.Add(-e.cfg.FireLead-reshardMargin))
}

// reshardMargin widens reshardedNear's window for the difference between peers' clocks and watch delays.
const reshardMargin = 2 * time.Second
