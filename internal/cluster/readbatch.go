package cluster

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// Reads together (issue 21, a peer restarted at 100,000 jobs). Under the namespace's recursive watch a read
// of one of a job's nodes needs no watch of its own, so the reads that queue in bulk travel in multiRead
// requests of up to readBatch reads, taken by one worker:
//
//   - the items' nodes (laneItems, urgent). A resharding writes the new owner of each item it moves, and every
//     peer reads each such node back: when a peer of three stops, ~33,000 jobs are resharded at once. Read one
//     node per refresh worker, the 32 workers read ~550 nodes a second against a ZooKeeper answering in ~58 ms,
//     behind ~90,000 reports of the stopped instance's deletions: the jobs the stopped peer owned missed their
//     next fire (~30,000 fires). leader/sharding/necessary goes with them: it decides items too.
//   - the jobs' leader nodes, instances' listings and servers' states (laneReads, not urgent). The stopped
//     peer's ~33,000 leaderships are campaigned for by both survivors at once; each race's loser, and the
//     event of each new leader node, asks for the leader to be read, and the restarted peer's ~100,000
//     registrations ask for the instances to be listed until the survivors have read its peer node. Read one
//     by one, 25-30 of the 32 workers were each in one get of a leader node 15-30 s after the stop, ~24,000
//     leader and ~10,000 instances' reads waited 60 s after it (~350 a second drained), and the campaigns of
//     jobs found leaderless waited behind them: their fires were skipped after 30 s of "the leader (none)".
//     A registration of 100,000 jobs has each peer read every peer's servers/{ip} of every job: ~170,000 of
//     those reads waited on each peer while the jobs registered (the refresher's backlog log).
//
// A key whose job is not loaded yet (its load reads the nodes), whose node the recursive watch no longer
// covers (the session changed since it was queued), or whose answer needs more than the one read (an
// instance of a process that is not a live peer, this peer's own node missing) is refreshed on its own.

// readBatch bounds the reads sent together: one multiRead request.
const readBatch = bulkChunk

// readBatched selects the reads that travel together, on a server that speaks multiRead and while the
// recursive watch is armed: of the kinds one read answers (oneRead), the urgent ones (laneItems: the items'
// nodes and necessary, urgent in settled.go) or the others (laneReads).
func (r *Registry) readBatched(urgentLane bool) func(k refreshKey) bool {
	return func(k refreshKey) bool {
		return oneRead(k.kind) && urgent(k) == urgentLane && !r.noMultiRead.Load() && r.recursiveArmed()
	}
}

// oneRead reports whether a refresh of kind k is one read of one node or listing (itemRead, jobRead).
func oneRead(k refreshKind) bool {
	switch k {
	case kindItemInstance, kindItemDisabled, kindItemFailover, kindNecessary, kindLeader, kindInstances, kindServer:
		return true
	}
	return false
}

// batchedRead is one key's read in a batch: its op, and apply, which applies the answer and reports false
// when the key must be refreshed on its own after all.
type batchedRead struct {
	op    zk.ReadOp
	apply func(zk.ReadResult) bool
}

// errAlone marks a key that is refreshed on its own (see refreshBatched).
var errAlone = errors.New("read alone")

// refreshBatched reads the nodes of keys (laneItems or laneReads) in one multiRead and applies them; errs[i]
// is keys[i]'s outcome. The job-level reads are made and applied under the job's refreshMu, as alone
// (Registry.refresh), taken with TryLock: a job held by another refresh (a load) is read on its own once the
// batch has let its locks go, so a batch never waits while it holds one.
func (r *Registry) refreshBatched(keys []refreshKey) []error {
	errs := make([]error, len(keys))
	var reads []batchedRead
	var at []int                 // the key of each read
	held := map[*jobEntry]bool{} // the jobs whose refreshMu the batch holds (a job's keys of several kinds share it)
	for i, k := range keys {
		e := r.entry(k.job)
		if e == nil {
			continue // the job went away
		}
		if isItemKind(k.kind) {
			if rd, ok := r.itemRead(e, k); ok {
				reads, at = append(reads, rd), append(at, i)
				continue
			}
			errs[i] = errAlone
			continue
		}
		if !held[e] {
			if !e.refreshMu.TryLock() {
				errs[i] = errAlone
				continue
			}
			held[e] = true
		}
		rd, ok := r.jobRead(e, k)
		switch {
		case ok:
			reads, at = append(reads, rd), append(at, i)
		case e.ready():
			errs[i] = errAlone // not covered any more
		}
		// not ready: as alone, nothing to read (its load reads the node)
	}
	ops := make([]zk.ReadOp, len(reads))
	for j, rd := range reads {
		ops[j] = rd.op
	}
	res, err := r.multiReadChunked(ops)
	switch {
	case r.multiReadRefused(err):
		for _, i := range at {
			errs[i] = errAlone
		}
	case err != nil:
		for _, i := range at {
			errs[i] = err
		}
	default:
		for j, x := range res {
			if !reads[j].apply(x) {
				errs[at[j]] = errAlone
			}
		}
	}
	for e := range held {
		e.refreshMu.Unlock()
	}
	for i, k := range keys {
		if errs[i] == errAlone {
			errs[i] = r.refresh(k)
		}
	}
	return errs
}

func isItemKind(k refreshKind) bool {
	return k == kindItemInstance || k == kindItemDisabled || k == kindItemFailover
}

// itemRead is the batched read of an item's node of a loaded job (a job not loaded yet is read alone: the
// refresh waits for its load, which reads the items).
func (r *Registry) itemRead(e *jobEntry, k refreshKey) (batchedRead, bool) {
	pth := r.p.ItemNode(k.job, k.item, itemNodeOf(k.kind))
	if !e.ready() || !r.s.isCovered(pth) {
		return batchedRead{}, false
	}
	return batchedRead{op: zk.ReadOp{Path: pth}, apply: func(x zk.ReadResult) bool {
		value, version, present := readValue(x)
		r.applyItem(e, k.kind, k.item, value, version, present)
		return true
	}}, true
}

// jobRead is the batched read of a job-level node of a loaded job, under its refreshMu; false when the job is
// not loaded or the node is not covered.
func (r *Registry) jobRead(e *jobEntry, k refreshKey) (batchedRead, bool) {
	if !e.ready() {
		return batchedRead{}, false
	}
	var pth string
	var apply func(zk.ReadResult) bool
	switch k.kind {
	case kindNecessary:
		pth = r.p.Necessary(e.name)
		apply = func(x zk.ReadResult) bool {
			r.applyNecessary(e, x.Err == nil)
			return true
		}
	case kindLeader:
		pth = r.p.LeaderInstance(e.name)
		direct := e.directCount().leader
		apply = func(x zk.ReadResult) bool {
			var node leaderNode
			if x.Err == nil {
				node = leaderOf(x.Data, x.Stat)
			}
			r.applyLeader(e, node, direct)
			return true
		}
	case kindServer:
		pth = r.p.Server(e.name, k.ip)
		apply = func(x zk.ReadResult) bool {
			r.applyServer(e, k.ip, x.Data, x.Stat, x.Err == nil)
			return true
		}
	case kindInstances:
		pth = r.p.Instances(e.name)
		e.mu.Lock()
		known, direct := e.st.instances, e.direct.instances
		e.mu.Unlock()
		apply = func(x zk.ReadResult) bool {
			if x.Err != nil {
				return false // the folder is missing: refreshInstances makes it
			}
			cur, ok := r.listedInstances(e, x.Children, known)
			if ok { // without this peer's node only while it was not registered: never a confirmed removal
				r.applyInstances(e, cur, direct, false)
			}
			return ok
		}
	default:
		return batchedRead{}, false
	}
	if !r.s.isCovered(pth) {
		return batchedRead{}, false
	}
	return batchedRead{op: zk.ReadOp{Path: pth, Children: k.kind == kindInstances}, apply: apply}, true
}
