package cluster

import (
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// One watch per peer (issue 21). Every child of /{namespace} is a job (the per-namespace state lives in
// /{namespace}.ejserver, a sibling), so each peer keeps a single persistent recursive watch (ZooKeeper 3.6+'s
// addWatch, spoken by the fork in internal/third_party/zk) on /{namespace}, armed once per session before
// the namespace is listed and before any job is read. It reports every node created, deleted or written in
// every job, and stays armed, so neither the listing nor a job's reads take a watch of their own: a peer
// holds one watch, whatever the number of jobs, and sends no addWatch or removeWatches per job. keyFor
// routes each event to the refresh that re-reads the node (a child created or deleted to its folder's
// refresh; a job's root created or deleted to a read of that job's presence); the events of the nodes no refresh
// reads (the leader's latches) are dropped there, and so are the events of a job this peer has not listed yet:
// its first load, which comes after, reads the node anyway. The items' running and completed nodes, which no
// refresh reads either, are handled as their events arrive and never reach keyFor (itemevents.go).
//
// ZooKeeper does not replay, for a persistent watch re-sent after a reconnection, what changed while the
// peer was away (one-shot watches are replayed against the last zxid seen), so after a reconnection within
// the session the namespace is listed and every job read again, once ZooKeeper has acknowledged the re-sent
// watch (SessionWatchesRestored: a read sent earlier could precede it and miss a change made in between).
// A server without addWatch (before 3.6) answers ErrUnimplemented: the registry then falls back to one-shot
// watches for good.

// armNamespace arms the namespace's recursive watch for the current session, unless it is armed or the
// registry watches node by node. Call it before listing the namespace or reading a job.
func (r *Registry) armNamespace() error {
	if r.oneShotWatches || r.noAddWatch.Load() {
		return nil
	}
	id := r.s.ID()
	if id == 0 || r.watchedIn.Load() == id {
		return nil
	}
	err := r.s.addRecursiveWatch(r.p.Root())
	if errors.Is(err, zk.ErrUnimplemented) {
		if !r.noAddWatch.Swap(true) {
			r.log.Warn("ZooKeeper does not speak addWatch (3.6+): watching every job's nodes one by one")
		}
		return nil
	}
	if err != nil {
		return err
	}
	// a session renewed between ID and AddWatch leaves the old id here: the next call arms again
	r.noteResync()
	r.watchedIn.Store(id)
	return nil
}

// disarmNamespace removes the namespace's recursive watch of a stopped registry (Withdraw), so that ZooKeeper
// sends this session no event of the deletions that follow: each is one notification fewer for ZooKeeper to
// send and for this peer to read.
func (r *Registry) disarmNamespace() error {
	if r.watchedIn.Swap(0) == 0 {
		return nil
	}
	if err := r.s.removeWatches(r.p.Root()); err != nil && !errors.Is(err, zk.ErrNoWatcher) {
		return err
	}
	return nil
}

// covered reports whether the namespace's recursive watch of the current session covers pth (the
// namespace itself, whose children's creations and deletions it reports, or any node below), so a read of
// it needs no watch of its own.
func (r *Registry) covered(pth string) bool {
	if pth != r.p.Root() && r.p.JobOf(pth) == "" {
		return false
	}
	return r.recursiveArmed()
}

// recursiveArmed reports whether the namespace's recursive watch is armed for the current session.
func (r *Registry) recursiveArmed() bool {
	id := r.watchedIn.Load()
	return id != 0 && id == r.s.ID()
}

// resyncJobs lists the namespace and reads every job again once the recursive watch is restored after a
// reconnection within the session, for the changes it did not replay.
func (r *Registry) resyncJobs() {
	if r.watchedIn.Load() == 0 {
		return
	}
	r.noteResync()
	r.w.kick(refreshKey{kind: kindJobs})
	var names []string
	r.mu.RLock()
	for name := range r.jobs {
		names = append(names, name)
	}
	r.mu.RUnlock()
	for _, name := range names {
		r.w.kick(refreshKey{kind: kindLoad, job: name})
	}
}

// routeRecursive decides what an event of the namespace's recursive watch asks for: a job's root created
// or deleted asks for the job's presence to be read (refreshPresence, not a listing of the namespace); any other
// event of a job this peer has not listed is dropped (forward: keyFor's routing applies). Events of one-shot
// watches (children changed, or nodes outside the namespace) are forwarded unchanged.
func routeRecursive(p Paths, ev zk.Event, known func(job string) bool) (presence, forward bool) {
	job := p.JobOf(ev.Path)
	if job == "" {
		return false, true
	}
	if ev.Path == p.Job(job) {
		switch ev.Type {
		case zk.EventNodeCreated, zk.EventNodeDeleted:
			return true, false
		}
		return false, false // the root's data ("HTTP"): nobody reads it
	}
	if ev.Type == zk.EventNodeChildrenChanged {
		return false, true // a one-shot children watch (the fallback) of a node below a job
	}
	return false, known(job)
}

// folderKey maps a child created or deleted under one of a job's watched folders (rest: the path below
// the job's root) to the folder's refresh; a recursive watch reports children, not folder changes.
func folderKey(job, rest string) (refreshKey, bool) {
	folder, child, ok := cutLast(rest)
	if !ok || child == "" {
		return refreshKey{}, false
	}
	switch folder {
	case "/instances":
		return refreshKey{kind: kindInstances, job: job}, true
	case "/leader/failover/items":
		return refreshKey{kind: kindFailoverItems, job: job}, true
	case "/sharding":
		return refreshKey{kind: kindSharding, job: job}, true
	}
	return refreshKey{}, false
}

func cutLast(s string) (string, string, bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}
