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

// dropRan drops the items whose fire at req.scheduledAt ran, by their completed node (ranFire; strict: when
// in doubt, it ran).
func (e *Executor) dropRan(req fireRequest, items []int, strict bool) []int {
	return slices.DeleteFunc(items, func(item int) bool {
		last, ok, err := e.reg.LastCompleted(req.job, item)
		if !ranFire(last, ok, err, req.scheduledAt, strict) {
			return false
		}
		e.log.Info("item already ran this fire on its previous owner: not run again", "job", req.job, "item", item,
			"instance", last.InstanceID, "execution_id", last.ExecutionID, "err", err)
		return true
	})
}

// ranFire decides from an item's completed node (last; ok: it exists; err: it could not be read) whether its
// fire scheduled at ran: the node's latest fire (LastFire: a catch-up of an older fire that ended after it
// does not hide it) is at or after it. A held fire's check (strict false) runs the item when the node does not
// tell: a run ended as LOST (its peer vanished mid-run) is no sign the fire ran, nor is an on-request run
// that records no latest fire, nor a failed read. A gained item's check (strict true) takes those for run:
// a LOST run's request may have left, and without failover a run is at most once; a manual run may have
// followed this very fire; a read that failed tells nothing.
func ranFire(last cluster.Completed, ok bool, err error, at time.Time, strict bool) bool {
	switch {
	case err != nil:
		return strict
	case !ok:
		return false
	case last.State == cluster.CompletedLost && !strict:
		return false
	case last.Source.OnRequest() && last.LastFire().IsZero():
		return strict
	}
	return !last.LastFire().Before(at)
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
