package cluster

import "time"

// When instances joined a job, as this peer saw it: a resharding done while a fire is held gives items only
// to the instances that hold that fire (sharding.Holders), which it decided from each candidate's instances/{id}
// creation time, one multi-read a resharding. At a restart of 100,000 jobs that was one read for each of the
// stopped peer's ~33,000 jobs as their held fires came, among the ~860 requests a second that kept ZooKeeper
// at its outstanding limit while the survivors' item writes waited (docs/benchmarks.md, twelfth session).
//
// The registry sees every instance node created through the namespace's recursive watch, so it keeps, for each
// job, the last time it saw one appear (jobState.instancesJoined, this peer's clock): a first load counts as
// the join of the instances it found, an addition by an event or a listing as a join, and a created event as
// one even when a listing folds it into nothing new (a node removed and made again). ZooKeeper does not replay
// a recursive watch's events after a reconnection, so a resync counts as a join of every job
// (Registry.resyncedAt). An instance on the job now joined no later than both: when both are before a fire's
// cutoff, every candidate registered before it and no read is needed. What this view cannot see is a join
// whose event has not arrived yet: a node removed and made again (an operator's disable and enable of a live
// peer) is a join from when its created event comes; a resharding decided before that counts the instance as
// registered since its first join, where the creation time read from ZooKeeper would have said "late".

// noteJoinLocked records that an instance joined e's job now (e.mu held).
func (r *Registry) noteJoinLocked(e *jobEntry) { e.st.instancesJoined = r.clk.Now().UnixNano() }

// setInstancesLocked replaces e's instances with cur (interned), noting a join when cur names an instance the
// job's instances did not (e.mu held).
func (r *Registry) setInstancesLocked(e *jobEntry, cur map[string]string) {
	for id := range cur {
		if _, ok := e.st.instances[id]; !ok {
			r.noteJoinLocked(e)
			break
		}
	}
	e.st.instances = r.shared.intern(cur)
}

// noteResync records that the registry resynchronised after a reconnection (or armed a new session's watch):
// what joined meanwhile was not seen.
func (r *Registry) noteResync() { r.resyncedAt.Store(r.clk.Now().UnixNano()) }

// InstancesJoinedBefore reports whether every instance now on job joined it before cutoff (this peer's clock),
// as this peer saw them join: its namespace's recursive watch is armed, the job is loaded, and neither the
// job's last join nor the registry's last resync is after cutoff. False means "not known": read ZooKeeper.
func (r *Registry) InstancesJoinedBefore(job string, cutoff time.Time) bool {
	if !r.recursiveArmed() { // never armed with one-shot watches or a server without addWatch
		return false
	}
	e := r.entry(job)
	if e == nil {
		return false
	}
	e.mu.Lock()
	loaded, joined := e.st.loaded && e.st.hasConfig, e.st.instancesJoined // a loaded job has a join: its first load
	e.mu.Unlock()
	return loaded && max(joined, r.resyncedAt.Load()) <= cutoff.UnixNano()
}
