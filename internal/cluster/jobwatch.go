package cluster

import (
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// One watch per job (issue 21). Each peer keeps a persistent recursive watch (ZooKeeper 3.6+'s addWatch,
// spoken by the fork in internal/third_party/zk) on every job's root, armed before the job's first read in a
// session. It reports every node created, deleted or written below the root, and stays armed, so the job's
// reads take no watch of their own: a peer holds one watch per job where it held 8 + servers + 3 per item
// one-shot watches (14 for a one-item job on three hosts), and go-zookeeper's channel per one-shot watch
// with it. keyFor routes each event to the refresh that re-reads the node (a child created or deleted to its
// folder's refresh); the events of the nodes no refresh reads (running, completed, the leader's latches)
// are dropped there, at the cost of their delivery.
//
// ZooKeeper does not replay, for a persistent watch re-sent after a reconnection, what changed while the
// peer was away (one-shot watches are replayed against the last zxid seen), so after a reconnection
// within the session every job is read again, once ZooKeeper has acknowledged the re-sent watches
// (SessionWatchesRestored: a read sent earlier could precede them and miss a change made in between). A server without addWatch (before 3.6) answers
// ErrUnimplemented: the registry then falls back to one-shot watches for good.

// armJob arms the job's recursive watch for the current session, unless it is armed or the registry
// watches node by node. Call it before reading the job.
func (r *Registry) armJob(e *jobEntry) error {
	if r.oneShotWatches || r.noAddWatch.Load() {
		return nil
	}
	id := r.s.ID()
	if id == 0 || e.watchedIn.Load() == id {
		return nil
	}
	err := r.s.addRecursiveWatch(r.p.Job(e.name))
	if errors.Is(err, zk.ErrUnimplemented) {
		if !r.noAddWatch.Swap(true) {
			r.log.Warn("ZooKeeper does not speak addWatch (3.6+): watching every job's nodes one by one")
		}
		return nil
	}
	if err != nil {
		return err
	}
	e.watchedIn.Store(id)
	return nil
}

// disarmJob removes the recursive watch of a job that went away (it would outlive the job's nodes until the
// session ends).
func (r *Registry) disarmJob(e *jobEntry) {
	if e.watchedIn.Swap(0) != r.s.ID() {
		return
	}
	if err := r.s.removeWatches(r.p.Job(e.name)); err != nil && !errors.Is(err, zk.ErrNoWatcher) {
		r.log.Debug("could not remove a deleted job's watch", "job", e.name, "err", err)
	}
}

// covered reports whether a recursive watch of the current session covers pth, so a read of it needs no
// watch of its own.
func (r *Registry) covered(pth string) bool {
	job := r.p.JobOf(pth)
	if job == "" || pth == r.p.Job(job) {
		return false
	}
	e := r.entry(job)
	if e == nil {
		return false
	}
	id := e.watchedIn.Load()
	return id != 0 && id == r.s.ID()
}

// resyncJobs reads every job again once the recursive watches are restored after a reconnection within
// the session, for the changes they did not replay.
func (r *Registry) resyncJobs() {
	var names []string
	r.mu.RLock()
	for name, e := range r.jobs {
		if e.watchedIn.Load() != 0 {
			names = append(names, name)
		}
	}
	r.mu.RUnlock()
	for _, name := range names {
		r.w.kick(refreshKey{kind: kindLoad, job: name})
	}
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
