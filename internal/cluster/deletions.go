package cluster

import (
	"maps"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Deletions applied as their event comes (issue 21, a peer restarted at 30,000 jobs). When a peer's session
// ends, ZooKeeper deletes its instances/{id} node in every job and its leader/election/instance node in every
// job it led: each survivor receives one event per job (~30,000) and one per lost leadership (~10,000). A
// deletion kicked the folder's listing or the leader's read, queued one by one behind each other, while the
// fires held the stopped peer's items for up to ReshardWait (its instance still listed: "stopping"), and the
// jobs it led waited for their next leader to be read, then campaigned for, behind them all: a restart at
// 30,000 jobs skipped ~2,300 fires per survivor.
//
// Under the namespace's recursive watch a NodeDeleted event is exact (the node is gone, and no later event of
// the path is lost), so the registry applies it to the job's state at once: another instance leaves the
// job's instances, a deleted leader leaves the job leaderless and its campaign runs before the queued
// refreshes. The listeners hear of it as they would of a read (InstancesChanged, LeaderChanged), from the
// refresher's goroutine (kindReport), not the session's. A read that was in flight when the event came may
// hold the node still (its answer preceded the event, its application may follow it): the job's direct
// counts (jobEntry.direct, one for its instances, one for its leader) tell it, and it reads again instead of
// applying a stale answer. One-shot watches (the fallback) are not applied here: the refresh that re-reads
// the node also re-arms its watch.

// The peer's return is applied the same way: its instances/{id} node created in every job is added to the
// job's instances from the event when the live peers' listing already names it (its peer node, written before
// it registers on any job, gives its server IP); otherwise the instances are listed, as before.

// applyFromEvent applies a NodeDeleted event of another instance's node or of a job's leader node, or a
// NodeCreated event of another live peer's instance node, to a loaded job, and reports whether it did (the
// event then needs no refresh).
//
// It runs on the session goroutine for every queued event (the items' running and completed nodes' are not
// queued: itemevents.go), so the path is looked at before anything takes a lock.
func (r *Registry) applyFromEvent(ev zk.Event) bool {
	if ev.Type != zk.EventNodeDeleted && ev.Type != zk.EventNodeCreated {
		return false
	}
	job := r.p.JobOf(ev.Path)
	if job == "" {
		return false
	}
	rest := ev.Path[len(r.p.Root())+1+len(job):] // JobOf found Root()/job at the path's start
	folder, id, _ := cutLast(rest)
	leader := rest == "/leader/election/instance"
	if ev.Type == zk.EventNodeCreated && folder == "/instances" && id != "" {
		return r.instanceCreated(job, id)
	}
	switch {
	case leader && ev.Type != zk.EventNodeDeleted:
		if r.recursiveArmed() {
			if e := r.entry(job); e != nil {
				r.leaderCreated(e)
			}
		}
		return false // read: whose it is
	case !leader && (folder != "/instances" || id == "" || id == r.me.InstanceID):
		return false
	case !r.recursiveArmed():
		return false
	}
	e := r.entry(job)
	switch {
	case e == nil:
		return false
	case leader:
		return r.leaderDeleted(e)
	}
	return r.instanceChanged(e, id, "")
}

// instanceCreated applies the NodeCreated event of instance id's node on job (see applyFromEvent). It is a
// join (this peer's own included), whatever the listing that may fold it in makes of it (a node removed and
// made again): joins.go. Another live peer's node is added when the live peers' listing names the peer (its
// server IP); otherwise the instances are listed.
func (r *Registry) instanceCreated(job, id string) bool {
	if !r.recursiveArmed() {
		return false
	}
	e := r.entry(job)
	if e == nil {
		return false
	}
	e.mu.Lock()
	r.noteJoinLocked(e)
	e.mu.Unlock()
	if id == r.me.InstanceID {
		return false
	}
	ip := r.peerIP(id)
	return ip != "" && r.instanceChanged(e, id, ip)
}

// instanceChanged applies another instance's node to a loaded job's instances: added with server IP ip, or
// removed when ip is "". It reports false when the job is not loaded (its load lists the instances). This
// peer's own node is never applied here: its vanishing is an operator's removal or a lost registration, which
// refreshInstances tells apart.
func (r *Registry) instanceChanged(e *jobEntry, id, ip string) bool {
	e.mu.Lock()
	if !e.st.loaded || !e.st.hasConfig {
		e.mu.Unlock()
		return false
	}
	if _, ok := e.st.instances[id]; ok == (ip != "") {
		e.mu.Unlock()
		return true // already so
	}
	cur := maps.Clone(e.st.instances)
	if ip == "" {
		delete(cur, id)
	} else {
		if cur == nil {
			cur = map[string]string{}
		}
		cur[id] = ip
	}
	r.setInstancesLocked(e, cur)
	e.direct.instances++
	e.changedLocked()
	leaderless := e.st.leader == ""
	e.mu.Unlock()
	r.report(e.name, id, ip != "")
	if leaderless && ip == "" {
		// a stopped leader's node and its instance node go in one transaction, whose events may come leader
		// first: a campaign then put off for the stopped instance (still listed, and preferred) runs now
		r.w.kickUrgent(refreshKey{kind: kindCampaign, job: e.name})
	}
	return true
}

// leaderCreated notes that a job's leader node exists, until the read its event kicks says whose: a campaign
// for the job would be refused, so none is sent. When a peer stops, both survivors campaign for its jobs;
// the one whose campaigns lag (its events queued behind the stopped peer's ~130,000 deletions) sent creates
// for jobs the other had won meanwhile, each refusal one multi more for the creates batched after it, one
// after the other, and its senders were held by refusals while the other won nearly every job alone, ~800 a
// second (docs/benchmarks.md, run 33).
func (r *Registry) leaderCreated(e *jobEntry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st.leader == "" {
		// a read answered before the create, applied after this, finds no node: applyLeader keeps the mark
		// (a deletion since would have cleared it) and this event's read says whose it is. Not a direct
		// count: a job's load in flight would be made stale and read whole again, and at a restart the
		// restarted peer loads 100,000 jobs while the survivors create ~33,000 leader nodes.
		e.st.leaderSeen = true
	}
}

// leaderDeleted leaves a loaded job leaderless and campaigns for it ahead of the queued refreshes.
func (r *Registry) leaderDeleted(e *jobEntry) bool {
	e.mu.Lock()
	if !e.st.loaded || !e.st.hasConfig {
		e.mu.Unlock()
		return false
	}
	prev := e.st.leader
	e.st.leader, e.st.leaderOwner, e.st.leaderVersion, e.st.leaderSeen = "", 0, 0, false
	e.direct.leader++
	if prev != "" {
		e.changedLocked()
	}
	e.mu.Unlock()
	r.w.kickUrgent(refreshKey{kind: kindCampaign, job: e.name})
	if prev != "" {
		r.report(e.name, "", false)
	}
	return true
}

// reports holds, per job, the changes applied on the session goroutine until the refresher's goroutine tells
// the listeners (kindReport): a listener may block, the session's goroutine must not. A job's changes are
// merged while they wait (an instance that left and came back is no change), so a refresher that falls behind
// (a restart at 100,000 jobs) holds one small delta per job, not one event per change.
type reports struct {
	mu    sync.Mutex
	byJob map[string]*reportDelta
	peak  int // byJob's largest size since it was made (a map keeps the groups of its peak)
}

// reportDelta is a job's changes not told yet: instances added and removed, and whether its leader changed
// (leader: the leader then, "" when it was lost).
type reportDelta struct {
	added, removed []string
	leader         string
	leaderChanged  bool
}

// report queues a job's change for the listeners: instance id added (added) or removed, or, with id "", its
// leader lost.
func (r *Registry) report(job, id string, added bool) {
	r.reportWith(job, func(d *reportDelta) { d.merge(id, added) })
}

// reportLeader queues a job's new leader for the listeners (this peer won its campaign: election.go).
func (r *Registry) reportLeader(job, leader string) {
	r.reportWith(job, func(d *reportDelta) { d.leader, d.leaderChanged = leader, true })
}

// reportWith applies change to job's delta not told yet and has the refresher tell it.
func (r *Registry) reportWith(job string, change func(d *reportDelta)) {
	r.reported.mu.Lock()
	if r.reported.byJob == nil {
		r.reported.byJob = map[string]*reportDelta{}
	}
	d := r.reported.byJob[job]
	if d == nil {
		d = &reportDelta{}
		r.reported.byJob[job] = d
		r.reported.peak = max(r.reported.peak, len(r.reported.byJob))
	}
	change(d)
	r.reported.mu.Unlock()
	r.w.kick(refreshKey{kind: kindReport, job: job})
}

// merge adds a change to d: an instance's removal cancels its addition not told yet, and the other way round.
func (d *reportDelta) merge(id string, added bool) {
	if id == "" {
		d.leader, d.leaderChanged = "", true
		return
	}
	from, to := &d.removed, &d.added
	if !added {
		from, to = &d.added, &d.removed
	}
	if k := slices.Index(*from, id); k >= 0 {
		*from = slices.Delete(*from, k, k+1)
		return
	}
	if !slices.Contains(*to, id) {
		*to = append(*to, id)
	}
}

// events are the listeners' events of d, in the order a read would have given them.
func (d *reportDelta) events(job string) []Event {
	var evs []Event
	if len(d.added) > 0 || len(d.removed) > 0 {
		slices.Sort(d.added)
		slices.Sort(d.removed)
		evs = append(evs, Event{Kind: InstancesChanged, Job: job, Added: d.added, Removed: d.removed})
	}
	if d.leaderChanged {
		evs = append(evs, Event{Kind: LeaderChanged, Job: job, Leader: d.leader})
	}
	return evs
}

// emitReported tells the listeners the changes reported for job.
func (r *Registry) emitReported(job string) {
	r.reported.mu.Lock()
	d := r.reported.byJob[job]
	delete(r.reported.byJob, job)
	if len(r.reported.byJob) == 0 && r.reported.peak > stateKeep {
		r.reported.byJob, r.reported.peak = nil, 0 // let a burst's groups go
	}
	r.reported.mu.Unlock()
	if d != nil {
		r.emit(d.events(job))
	}
}

// lockUnlessStale locks e to apply what a refresh of kind k read, unless stale reports (under the lock) that a
// change was applied from its event since the read began: the answer may predate it, so e is left unlocked
// and the refresh runs again.
func (r *Registry) lockUnlessStale(e *jobEntry, k refreshKind, stale func() bool) bool {
	e.mu.Lock()
	if !stale() {
		return true
	}
	e.mu.Unlock()
	r.w.kick(refreshKey{kind: k, job: e.name})
	return false
}

// directCounts count the changes applied to a job from their events, of its instances and of its leader
// (they wrap: a read compares them for equality only).
type directCounts struct {
	instances, leader uint16
}

// directCount is e's counts of changes applied from their events: a read taken before they changed may be
// stale.
func (e *jobEntry) directCount() directCounts {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.direct
}
