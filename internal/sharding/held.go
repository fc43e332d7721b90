package sharding

import (
	"time"
)

// HoldMargin widens the window in which an instance counts as registered too late to hold a fire: an instance
// node's creation time is the ZooKeeper server's clock, a fire's hand-off time the peer's, and a hand-off runs
// late on a loaded peer.
const HoldMargin = 2 * time.Second

// Holders splits the candidates of a resharding done while a fire scheduled at fire is held (its items' owner
// is gone or leaving, dispatch's ensureSharded) into the instances that hold that fire too and the others.
//
// A peer schedules a job before it registers on it (its instances/{id} node), and it hands a fire off a lead
// before the fire's time. So an instance registered before fire - lead - HoldMargin is a peer that had the job
// scheduled when the fire was handed off: it holds the fire and runs its items once the resharding is
// committed. An instance registered later may not have the fire at all: a restarted peer's new process was not
// running when the fire was handed off. An item the resharding gave it would be run by nobody for that fire.
// The ones that wait (later) get items at a resharding once no such fire can still be held (RecheckAt).
//
// registered holds each instance's registration time; an instance missing from it counts as registered at the
// fire (late). When no candidate is known to hold the fire, every candidate is returned in hold: nobody holds
// it better, and a sharding over them is better than none.
func Holders(candidates []Instance, registered map[string]time.Time, fire time.Time, lead time.Duration) (hold, later []Instance) {
	cutoff := HoldCutoff(fire, lead)
	for _, in := range candidates {
		if at, ok := registered[in.ID]; ok && !at.After(cutoff) {
			hold = append(hold, in)
		} else {
			later = append(later, in)
		}
	}
	if len(hold) == 0 {
		return candidates, nil
	}
	return hold, later
}

// HoldCutoff is the latest registration of an instance that holds a fire scheduled at fire (Holders).
func HoldCutoff(fire time.Time, lead time.Duration) time.Time { return fire.Add(-lead - HoldMargin) }

// RecheckAt is when the instances Holders left out can be given items without a held fire missing them: a fire
// they may lack is scheduled before their registration + lead + HoldMargin, and a peer holds a fire at most
// wait (the executor's ReshardWait) from its hand-off, a lead before its time. So the last such hold ends by
// registration + HoldMargin + wait. An instance missing from registered counts as registered at the fire.
func RecheckAt(later []Instance, registered map[string]time.Time, fire time.Time, wait time.Duration) time.Time {
	var due time.Time
	for _, in := range later {
		at, ok := registered[in.ID]
		if !ok {
			at = fire
		}
		if d := at.Add(HoldMargin + wait); d.After(due) {
			due = d
		}
	}
	return due
}
