package sharding

import (
	"time"

	"github.com/ejserver/ejserver/internal/schedule"
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

// Holding is how long the executors hold a job's fires for its sharding (schedule.ShardingWait), as a
// resharding at a held fire needs it to tell which instances hold that fire and when the others can be given
// items (Earliest, Until). Lead and Wait are the executors' FireLead and ReshardWait.
type Holding struct {
	Lead, Wait time.Duration
	// Misfire: the job takes late fires, and a fire is held until its next fire's hand-off (within
	// schedule.MaxShardingWait) when that is later than Wait.
	Misfire bool
	// Last is the job's last fire handed off on this peer (zero: none yet); Next its schedule (the first fire
	// after a time; nil: not known here). Both peers' schedulers hand a job's fires off at the same times.
	Last time.Time
	Next func(time.Time) time.Time
	// Known is false when nothing tells how the executors hold the job's fires beyond Wait (a coordinator
	// without CoordinatorConfig.Fires): the holds are taken to last Wait.
	Known bool
}

// long reports whether a fire may be held longer than Wait (a job that takes late fires, its schedule known).
func (h Holding) long() bool { return h.Misfire && h.Known }

// Earliest is the earliest fire another peer can still hold at now: one handed off less than Wait ago, or, for
// a job whose fires are held until the next hand-off (long), the last one handed off, if MaxShardingWait has
// not passed since (no fire handed off here yet: any handed off within MaxShardingWait). An instance that
// holds it holds every later one too (Holders).
func (h Holding) Earliest(now time.Time) time.Time {
	early := now.Add(h.Lead - h.Wait)
	switch {
	case !h.long():
		return early
	case h.Last.IsZero():
		return minTime(early, now.Add(h.Lead-schedule.MaxShardingWait))
	case h.Last.Add(schedule.MaxShardingWait - h.Lead).After(now):
		return minTime(early, h.Last)
	}
	return early
}

// Until is when no fire an instance registered at is missing can still be held: it may miss the fires
// scheduled before at + Lead + HoldMargin (HoldCutoff), and such a fire is held at most Wait from its hand-off
// (a Lead before its time) or, for a long hold, until the hand-off of the first fire after it, which is no
// later than the first fire the instance holds (n: at or after at + Lead + HoldMargin), within
// MaxShardingWait of the hand-off of the last one it misses. n's own time is taken, not its hand-off: a Lead of
// margin, as a hold begins when its peer gets to it, at its hand-off or later.
func (h Holding) Until(at time.Time) time.Time {
	until := at.Add(HoldMargin + h.Wait)
	if !h.long() {
		return until
	}
	longest := at.Add(HoldMargin + schedule.MaxShardingWait)
	if h.Next != nil {
		n := h.Next(at.Add(h.Lead + HoldMargin - time.Nanosecond))
		if n.IsZero() {
			return until // no fire after the missing ones: none of them is held past Wait
		}
		longest = minTime(longest, n)
		if !h.Last.IsZero() && !h.Next(h.Last).Before(n) {
			// no fire between the last one handed off and n: the missing ones are no later than it, and held
			// at most MaxShardingWait from its hand-off (an hourly job's last fire, long ago, holds nothing)
			longest = minTime(longest, h.Last.Add(schedule.MaxShardingWait-h.Lead))
		}
	}
	return maxTime(until, longest)
}

// RecheckAt is when the instances Holders left out can be given items without a held fire missing them: the
// latest of their Until. An instance missing from registered counts as registered at the fire.
func RecheckAt(later []Instance, registered map[string]time.Time, fire time.Time, h Holding) time.Time {
	var due time.Time
	for _, in := range later {
		at, ok := registered[in.ID]
		if !ok {
			at = fire
		}
		due = maxTime(due, h.Until(at))
	}
	return due
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
