package cluster

import (
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// refreshInstances re-reads a job's instances: who joined, who left, and whether this peer's own node is
// still there.
func (r *Registry) refreshInstances(e *jobEntry) error {
	e.mu.Lock()
	known, direct := e.st.instances, e.direct.instances
	e.mu.Unlock()
	cur, err := r.readInstances(e.name, known)
	if err != nil {
		return err
	}
	_, mine := cur[r.me.InstanceID]
	e.mu.Lock()
	suspect := !mine && e.st.registered
	e.mu.Unlock()
	if suspect {
		// our node is not in the list while we are registered: either an operator removed it, or the list was
		// read before our registration landed (a first load's registration completes on the batcher, beside
		// this read): ZooKeeper says which, and a stale list is read again
		ok, _, err := r.s.exists(r.p.Instance(e.name, r.me.InstanceID))
		if err != nil {
			return err
		}
		if ok {
			r.w.kick(refreshKey{kind: kindInstances, job: e.name})
			return nil
		}
	}
	r.applyInstances(e, cur, direct, suspect)
	return nil
}

// listedInstances maps a listing of a job's instances (names) to their server IPs from what is known without
// a read: known (the job's instances when the listing began) and the live peers. It reports false when an
// instance's node must be read (a process that is not a live peer) or this peer's own node is missing while
// it is registered (refreshInstances tells an operator's removal from a listing that preceded it).
func (r *Registry) listedInstances(e *jobEntry, names []string, known map[string]string) (map[string]string, bool) {
	cur := make(map[string]string, len(names))
	for _, n := range names {
		ip, ok := known[n]
		if !ok {
			if ip = r.peerIP(n); ip == "" {
				return nil, false
			}
		}
		cur[n] = ip
	}
	if _, mine := cur[r.me.InstanceID]; !mine {
		e.mu.Lock()
		registered := e.st.registered
		e.mu.Unlock()
		return cur, !registered
	}
	return cur, true
}

// applyInstances applies a listing of a job's instances read when the job's direct count of instance
// changes was direct. confirmed: the listing lacks this peer's node while it was registered, and ZooKeeper
// confirmed the node is gone (refreshInstances). A listing that lacks it while it was not registered yet,
// applied once its registration has landed, is read again: it is older than the registration, not an
// operator's removal (taken for one, a job was left unrun by its owner for 17 minutes at 100,000 jobs:
// docs/benchmarks.md, run 29).
func (r *Registry) applyInstances(e *jobEntry, cur map[string]string, direct uint16, confirmed bool) {
	_, mine := cur[r.me.InstanceID]
	if !r.lockUnlessStale(e, kindInstances, func() bool { return e.direct.instances != direct }) {
		return
	}
	if !mine && e.st.registered && !confirmed {
		e.mu.Unlock()
		r.w.kick(refreshKey{kind: kindInstances, job: e.name})
		return
	}
	prev := e.st.instances
	var added, removed []string
	for id := range cur {
		if _, ok := prev[id]; !ok {
			added = append(added, id)
		}
	}
	for id := range prev {
		if _, ok := cur[id]; !ok {
			removed = append(removed, id)
		}
	}
	reregister, stepDown := false, false
	switch {
	case mine:
	case e.st.registered && r.s.Healthy():
		// our node vanished while our session lives: an operator removed it; stay off this job, and stop
		// leading it so the peers that still run it get a leader that reshards
		e.st.registered, e.st.removedByOperator = false, true
		stepDown = e.st.leader == r.me.InstanceID
		r.log.Warn("this peer's instance node was removed; it no longer runs the job until it is enabled again or restarts",
			"job", e.name, "instance", r.me.InstanceID)
	case e.st.pendingRegister:
		e.st.pendingRegister = false
		reregister = true
	}
	changed := len(added) > 0 || len(removed) > 0
	if changed {
		r.setInstancesLocked(e, cur)
		e.changedLocked()
	}
	e.mu.Unlock()
	if reregister {
		r.w.kick(refreshKey{kind: kindRegister, job: e.name})
	}
	if stepDown {
		r.abdicate(e.name)
	}
	if changed {
		slices.Sort(added)
		slices.Sort(removed)
		r.emit([]Event{{Kind: InstancesChanged, Job: e.name, Added: added, Removed: removed}})
	}
}

// InstancesRegistered reads when each of ids registered on job: its instances/{id} node's creation time (the
// ZooKeeper server's clock). An instance whose node is not there is left out.
func (r *Registry) InstancesRegistered(job string, ids []string) (map[string]time.Time, error) {
	at := make([]time.Time, len(ids))
	if len(ids) > 1 && !r.noMultiRead.Load() {
		// one request for them all: a fire resharded at a stop asks for each instance of its job, and
		// thousands of jobs' fires are resharded together then
		ops := make([]zk.ReadOp, len(ids))
		for i, id := range ids {
			ops[i] = zk.ReadOp{Path: r.p.Instance(job, id)}
		}
		res, err := r.multiReadChunked(ops)
		if err == nil {
			for i, x := range res {
				if x.Err == nil && x.Stat != nil {
					at[i] = time.UnixMilli(x.Stat.Ctime)
				}
			}
			return registeredAt(ids, at), nil
		}
		if !r.multiReadRefused(err) {
			return nil, err
		}
	}
	err := concurrently(len(ids), func(i int) error {
		ok, st, err := r.s.exists(r.p.Instance(job, ids[i]))
		if ok && st != nil {
			at[i] = time.UnixMilli(st.Ctime)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return registeredAt(ids, at), nil
}

// registeredAt maps ids to their registration times, those not known (zero) left out.
func registeredAt(ids []string, at []time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(ids))
	for i, id := range ids {
		if !at[i].IsZero() {
			out[id] = at[i]
		}
	}
	return out
}
