package dispatch

import "github.com/ejserver/ejserver/internal/cluster"

// A fire decided where it is handed off.
//
// Every peer fires every job it is registered on, and most of a peer's fires have no item here: a one-item
// job's item is on one peer of three, so two fires in three of a steady-10k peer only decide (the job's status,
// its steering, the decided record a gained item runs by) and end. Each of them was a goroutine of its own,
// whose start, stack growth and exit cost 2.5-4 µs of CPU against ~0.7 for the decision
// (BenchmarkFireNothingHere). fireHere decides such a fire on the goroutine that hands it off, the
// scheduler's loop, when nothing in the decision can wait; any other fire goes on as before. In a peer, what
// such a fire still costs is mostly the job's snapshot it reads, memory untouched since the job's last fire
// (docs/benchmarks.md, "Fires with nothing to run here").

// fireHere decides a scheduled fire on the caller's goroutine and reports whether it did (false: nothing was
// done but recording the session the fire begins under, and fire is to run it). It does when the fire runs
// nothing here and waits for nothing (decidesAtOnce): the session's lease is sound (no wait for the session),
// and the sharding is ready (decideFire hands a fire whose sharding is not on to a goroutine, as ensureSharded
// may wait for it or reshard).
func (e *Executor) fireHere(req *fireRequest) bool {
	snap := e.job(req)
	if snap == nil {
		return true // as fire: a job this peer does not hold has nothing to fire here
	}
	if !decidesAtOnce(snap, e.cfg.Counters != nil) {
		return false
	}
	e.sessionOf(req)
	if !e.reg.Lease() {
		return false // in doubt: sessionAtHandOff waits for it
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return true // as spawn: no fire starts once the executor is closed
	}
	e.wg.Add(1)
	e.mu.Unlock()
	defer e.wg.Done()
	e.decideFire(*req, snap, true)
	return true
}

// decidesAtOnce reports whether a scheduled fire with snap is decided without a wait and runs nothing on this
// peer: the peer is not about to be registered on the job (awaitRegistration would wait), no remainingFires
// counter is to be counted in ZooKeeper (counters: the executor keeps them; countFire reads and writes it), and
// no item is this peer's (a run's begin, catch-up reads and misfire checks read and write ZooKeeper). A job
// whose config can't be parsed is only skipped.
func decidesAtOnce(snap *cluster.JobSnapshot, counters bool) bool {
	if awaitsRegistration(snap) {
		return false
	}
	if snap.ConfigErr != nil {
		return true
	}
	if counters && snap.Config.RemainingFires > 0 {
		return false
	}
	for i := range snap.Items {
		if snap.IsMyItem(i) {
			return false
		}
	}
	return true
}
