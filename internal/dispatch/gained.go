package dispatch

import (
	"context"
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
)

// Each peer decides a fire's items from its own view of the job's sharding, when it hands the fire off or,
// for a fire held for a resharding, once that resharding is read. A resharding committed between two peers'
// decisions moves items between a peer that decided before it (it runs the items it owned then) and one that
// decided after it (it runs the items it owns now): an item moved from the second to the first runs on
// neither. A rolling upgrade did it (TestRollingUpgradeMissesNoFire): a stopping peer's fire was held on one
// survivor and not on the other, which had decided it before it saw the peer leave; the held one decided
// after the resharding, and the item that went from it to the other was not delivered. Two reshardings in a
// row (a lost owner, then a joining peer) can do the same between two held fires read on either side of the
// second, and so does a peer killed just before a fire, while its session still stands.
//
// So a peer remembers the items it owned when it decided a job's last scheduled fire, and when a resharding
// gives it items it did not own then, it runs them for that fire, unless their completed node shows the fire
// ran or does not tell (ranFire, strict) or a running node shows it runs: a commit waits until no item of the
// job runs (its fence), and the new owners' versions fence every begin after it, so what the completed node
// says then is final for every run made under the old owners.

// decidedFire is the last scheduled fire a peer decided for a job (JobStatus.decided): when it was scheduled,
// until when items gained since may still run for it (gainedUntil), and the items this peer owned in the
// sharding it decided with (sharding/{i}/instance, whatever their disabled or failover nodes said). Never
// written in place: a new decision replaces the slice.
type decidedFire struct {
	at, until time.Time
	owned     []int
	// prev is set when this peer did not decide the fire: it scheduled the job after the fire was handed off
	// (unseen.go); prev is the fire before it.
	prev time.Time
}

// owns reports whether this peer owns item i of snap (sharding/{i}/instance), disabled or taken over or not.
func owns(snap *cluster.JobSnapshot, i int) bool {
	it := snap.Items[i]
	return it.Exists && it.Owner == snap.Me
}

// ownedItems lists the items of snap that this peer owns.
func ownedItems(snap *cluster.JobSnapshot) []int {
	var out []int
	for i := range min(len(snap.Items), snap.Config.ShardingTotalCount) {
		if owns(snap, i) {
			out = append(out, i)
		}
	}
	return out
}

// sameOwned reports whether owned lists exactly the items of snap this peer owns (without allocating).
func sameOwned(owned []int, snap *cluster.JobSnapshot) bool {
	n := 0
	for i := range min(len(snap.Items), snap.Config.ShardingTotalCount) {
		if owns(snap, i) {
			if n >= len(owned) || owned[n] != i {
				return false
			}
			n++
		}
	}
	return n == len(owned)
}

// gainedItems lists the items a fire on snap runs here (MyItems) that this peer did not own when it decided
// the fire (owned, sorted).
func gainedItems(owned []int, snap *cluster.JobSnapshot) []int {
	var out []int
	for i := range min(len(snap.Items), snap.Config.ShardingTotalCount) {
		if snap.IsMyItem(i) {
			if _, found := slices.BinarySearch(owned, i); !found {
				out = append(out, i)
			}
		}
	}
	return out
}

// gainedUntil is until when items gained after a fire scheduled at was decided may still run for it: as long
// as a held fire waits for its sharding (shardingWait, from its scheduled time: wait is ExecutorConfig.ReshardWait,
// lead its FireLead, next the job's next fire, zero for none).
func gainedUntil(at, next time.Time, wait, lead time.Duration, misfire bool) time.Time {
	return at.Add(schedule.ShardingWait(wait, lead, at, next, misfire))
}

// decided records the fire this peer just decided for the job with snap. Only a scheduled fire of a job
// that records its items' runs (monitorExecution: the completed nodes) counts.
//
// A change of the job's item nodes read after the fire took snap and before this records it was told to
// ItemsChanged too early to be compared with this fire: so when the job's snapshot is no longer snap (the
// Registry replaces it at every change), this looks for gained items itself. Without it, a restarted peer's
// new process that decided a fire on a snapshot read just before the leader's resharding gave it the stopped
// process's items ran them for nobody: a suspect for the steady-100000 restarts' fires run by no peer (runs
// 10, 12 and 14 in docs/benchmarks.md), though run 17 had 34 such with this look.
func (e *Executor) decided(req fireRequest, snap *cluster.JobSnapshot) {
	if req.source != ejserver.SourceNormal || !snap.Config.MonitorExecution {
		return
	}
	next := e.nextAfter(&req) // the fire after this one (the scheduler has moved on to it)
	e.mu.Lock()
	st := e.jobStatus(req.job)
	if st.decided.at.After(req.scheduledAt) {
		e.mu.Unlock()
		return // a later fire was decided already
	}
	owned := st.decided.owned
	if !sameOwned(owned, snap) {
		owned = ownedItems(snap)
	}
	st.decided = decidedFire{at: req.scheduledAt, until: gainedUntil(req.scheduledAt, next, e.cfg.ReshardWait, e.cfg.FireLead, snap.Config.Misfire), owned: owned}
	e.mu.Unlock()
	if e.job(&req) != snap {
		e.ItemsChanged(req.job)
	}
}

// ItemsChanged is told that an item node of the job changed (cluster.ItemsChanged): if this peer gained items
// since it decided the job's last scheduled fire, and that fire is recent, they run for it unless they ran
// (see above). It does not block: the reads and the runs are the executor's own goroutine's.
func (e *Executor) ItemsChanged(job string) {
	e.mu.Lock()
	st := e.status[job]
	if st == nil || st.decided.at.IsZero() {
		e.mu.Unlock()
		return
	}
	if !e.clk.Now().Before(st.decided.until) {
		st.decided = decidedFire{} // too late for that fire: nothing to remember until the next
		e.mu.Unlock()
		return
	}
	if st.pickingUp {
		st.pickAgain = true // the look under way looks once more when it ends
		e.mu.Unlock()
		return
	}
	d := st.decided
	e.mu.Unlock()
	if snap := e.reg.Job(job); snap == nil || len(gainedItems(d.owned, snap)) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if st.pickingUp { // begun meanwhile by another change
		st.pickAgain = true
		return
	}
	if e.closed {
		return
	}
	st.pickingUp = true
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			e.runGained(job)
			e.mu.Lock()
			again := st.pickAgain && !e.closed
			st.pickingUp, st.pickAgain = again, false
			e.mu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// gainedSettle bounds how long runGained waits for the resharding's other item nodes to be read.
const gainedSettle = 5 * time.Second

// runGained runs, for the job's last decided fire, the items this peer gained since it decided it, once the
// job's item nodes are read, unless they ran that fire (their completed node) or run it (their running node).
func (e *Executor) runGained(job string) {
	ctx, cancel := context.WithTimeout(e.soft, gainedSettle)
	snap, err := e.reg.Wait(ctx, job, func(s *cluster.JobSnapshot) bool { return s.ItemsSettled })
	cancel()
	if err != nil || snap == nil {
		return
	}
	e.mu.Lock()
	d := e.jobStatus(job).decided
	e.mu.Unlock()
	cfg := snap.Config
	if d.at.IsZero() || !e.clk.Now().Before(d.until) || cfg.Disabled || !snap.Registered || snap.ServerDisabled(snap.MyIP) {
		return
	}
	gained := gainedItems(d.owned, snap)
	if len(gained) == 0 {
		return
	}
	req := fireRequest{job: job, scheduledAt: d.at, source: ejserver.SourceNormal}
	var items []int
	if d.prev.IsZero() {
		// a run of that fire ended as LOST (its peer vanished mid-run) is not run again here: its request may
		// have left, and without failover an item's run is at most once (with failover, failover re-runs it)
		items = e.dropRan(req, slices.Clone(gained), true)
	} else if e.settingsRan(snap, d.at) { // its config may have been written since it was scheduled here
		items = e.dropUnseen(req, slices.Clone(gained), d.prev)
	}
	items = slices.DeleteFunc(items, func(item int) bool { return e.busyWith(req, item) })
	e.mu.Lock()
	if st := e.jobStatus(job); st.decided.at.Equal(d.at) {
		// decided now, to run or not: a later change of the job's items does not look at them again
		st.decided.owned = slices.Sorted(slices.Values(slices.Concat(st.decided.owned, gained)))
	}
	e.mu.Unlock()
	if len(items) == 0 {
		return
	}
	e.log.Info("items this peer gained after it decided their fire: run for it", "job", job,
		"scheduled_at", d.at, "items", items, "scheduled_here_after", !d.prev.IsZero())
	// with catchUp all, an item's fires missed before this one run too (its completed node would name this one
	// after it ran: a later fire would not look back past it)
	items, replay := e.missedFires(snap, req, items)
	e.runFire(snap, req, items, replay)
}

// busyWith reports whether item runs here now, or its running node names a run of req's fire or a later one
// (an accepted item's work, which a resharding does not wait for, has no completed node until it ends).
func (e *Executor) busyWith(req fireRequest, item int) bool {
	e.mu.Lock()
	_, busy := e.running[itemKey{req.job, item}]
	e.mu.Unlock()
	if busy {
		return true
	}
	cur, _, ok, err := e.reg.ReadRunning(req.job, item)
	return err != nil || (ok && !cur.ScheduledAt.Before(req.scheduledAt))
}
