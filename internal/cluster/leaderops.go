package cluster

import (
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/go-zookeeper/zk"
)

// SetNecessary creates leader/sharding/necessary: reshard before the next fire. It reports whether this
// call created it. A flag created or found is applied to this peer's cache at once (as a commit's removal of
// it is): a resharding that commits before the flag's watch event comes back then removes it in the same
// transaction. Left out, the flag outlived that resharding, and the fire that made it waited 30 s for another.
func (r *Registry) SetNecessary(job string) (bool, error) {
	_, err := r.b.submit(r.s.opCreate(r.p.Necessary(job), nil, 0))
	var oe *OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	switch {
	case err == nil:
		r.necessaryKnown(job)
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		r.necessaryKnown(job)
		return false, nil
	case errors.Is(err, zk.ErrNoNode):
		return false, nil
	}
	return false, err
}

// necessaryKnown records in the cache that job's necessary flag exists, and tells the listeners if that is new.
func (r *Registry) necessaryKnown(job string) {
	e := r.entry(job)
	if e == nil {
		return
	}
	e.mu.Lock()
	changed := !e.st.necessary
	e.st.necessary = true
	if changed {
		e.changedLocked()
	}
	e.mu.Unlock()
	if changed {
		r.emit([]Event{{Kind: NecessaryChanged, Job: job}})
	}
}

// BeginResharding creates the ephemeral leader/sharding/processing node (it dies with the leader). Many jobs
// resharding at once share multis.
func (r *Registry) BeginResharding(job string) error {
	_, err := r.b.submit(r.s.opCreate(r.p.Processing(job), nil, zk.FlagEphemeral))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	if e := r.entry(job); e != nil {
		e.mu.Lock()
		e.st.processing = true
		e.mu.Unlock()
	}
	return nil
}

// CommitSharding writes owners[i] into sharding/{i}/instance for every item, deletes items >= len(owners)
// and, in the same transaction, deletes necessary and processing: peers act on the new assignment only once
// necessary is gone, so that deletion is the commit point. Every multi carries the leader guard.
//
// The commit is fenced against items that began since the leader saw none running: before an existing
// item's owner is written, the same multi creates and deletes its running node, so a peer that began the
// item meanwhile (under the owner version it read before the commit) makes the whole commit fail with
// ErrItemRunning, and the leader waits for that run to end and commits again. Without the fence, that run
// and the new owner's run of the same fire would both be POSTed: the new owner's check of the item's
// completed node (a fire that waited for the resharding) finds the fire done only once the old run ended.
// Items in unfenced (those whose running node belongs to an accepted async item, which may last for
// hours) are written without the fence.
//
// The ops are built from the registry's cache (which items and instance nodes exist) and sent through the
// batcher, so the commits of many jobs resharding at once share multis; a cache that proves stale (an op
// fails on a node's existence) makes it read the registry and try once more. A resharding too large for one
// multi writes the items in earlier multis; they are inert until the last one removes necessary.
func (r *Registry) CommitSharding(job string, owners []string, unfenced map[int]bool) error {
	guard, err := r.leaderGuard(job)
	if err != nil {
		return err
	}
	ops, final, err := r.shardingOpsFromCache(job, owners, unfenced)
	if err == nil {
		all, resps, err := r.commitSharding(guard, ops, final)
		var oe *OpError
		if !errors.As(err, &oe) || oe.Op == 0 || fenceFailed(oe) || !(errors.Is(oe.Err, zk.ErrNoNode) || errors.Is(oe.Err, zk.ErrNodeExists) || errors.Is(oe.Err, zk.ErrNotEmpty)) {
			return r.committed(job, owners, all, resps, err)
		}
		r.log.Debug("sharding cache was stale; reading the registry", "job", job, "err", err)
	}
	if ops, final, err = r.shardingOpsFromRegistry(job, owners, unfenced); err != nil {
		return err
	}
	all, resps, err := r.commitSharding(guard, ops, final)
	return r.committed(job, owners, all, resps, err)
}

// fenceFailed says whether a commit failed on its fence: an item's running node exists.
func fenceFailed(oe *OpError) bool {
	return errors.Is(oe.Err, zk.ErrNodeExists) && path.Base(oe.Path) == NodeRunning
}

// committed turns a commit's outcome into CommitSharding's error. A commit that went through is applied to
// this peer's cache at once (owners, their node versions from the multi's results, necessary gone): the
// leader's next fire then sees the sharding it wrote instead of resharding again while its watches catch
// up, which with thousands of jobs starting together can take a while.
func (r *Registry) committed(job string, owners []string, ops []any, resps []zk.MultiResponse, err error) error {
	var oe *OpError
	if errors.As(err, &oe) && oe.Op == 0 {
		return ErrNotLeader // the guard failed: deposed
	}
	if errors.As(err, &oe) && fenceFailed(oe) {
		return fmt.Errorf("commit sharding of job %q: %w (%s began since the leader looked)", job, ErrItemRunning, path.Dir(oe.Path))
	}
	if err != nil {
		return fmt.Errorf("commit sharding of job %q: %w", job, err)
	}
	e := r.entry(job)
	if e == nil {
		return nil
	}
	var added []int
	applied := false
	defer func() { // after e.mu's release
		for _, i := range added { // read (and watch) the new items' nodes, as refreshSharding would have
			r.kickItem(job, i)
		}
		if applied { // as the watch's read would have, had it found the owners changed
			r.emit([]Event{{Kind: ItemsChanged, Job: job}})
		}
	}()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.processing = false
	if resps == nil { // committed in chunks: the watches bring the result
		return nil
	}
	version := make(map[string]int32, len(owners))
	for k, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			version[o.Path] = 0
		case *zk.SetDataRequest:
			if resps[k].Stat != nil {
				version[o.Path] = resps[k].Stat.Version
			}
		case *zk.DeleteRequest:
			if o.Path == r.p.Necessary(job) {
				e.st.necessary = false
			}
		}
	}
	for i, owner := range owners {
		v, ok := version[r.p.ItemNode(job, i, NodeInstance)]
		if !ok {
			continue
		}
		it := e.st.items.get(i)
		if it == nil {
			it = &ItemState{}
			e.st.items.set(i, it)
			added = append(added, i)
		}
		it.Exists, it.Owner, it.OwnerVersion = true, owner, v
		e.st.ownersChangedAt = r.clk.Now()
		applied = true
	}
	e.st.items.retain(func(i int) bool { return i < len(owners) })
	e.changedLocked()
	return nil
}

// commitSharding sends guard+ops+final as one batched multi, returning the ops sent and their results, or
// in chunks when it is too large (then with no results).
func (r *Registry) commitSharding(guard any, ops, final []any) ([]any, []zk.MultiResponse, error) {
	if 1+len(ops)+len(final) <= maxBatchOps {
		all := append(append([]any{guard}, ops...), final...)
		end := r.echoBegin(instancePaths(ops)) // applied to the cache by committed: its events need no read
		resps, err := r.b.submitFirst(all...)
		end(err == nil)
		return all, resps, err
	}
	for len(ops)+len(final) > maxBatchOps-1 {
		n := maxBatchOps - 1
		if _, err := r.s.multi(append([]any{guard}, ops[:n]...)...); err != nil {
			return nil, nil, err
		}
		ops = ops[n:]
	}
	_, err := r.s.multi(append(append([]any{guard}, ops...), final...)...)
	return nil, nil, err
}

// shardingOpsFromCache builds the commit from what the watches last saw. Items to delete need their
// children listed, which the cache doesn't hold: those are read.
func (r *Registry) shardingOpsFromCache(job string, owners []string, unfenced map[int]bool) (ops, final []any, err error) {
	e := r.entry(job)
	if e == nil {
		return nil, nil, fmt.Errorf("job %q is not loaded", job)
	}
	e.mu.Lock()
	exists := make(map[int]bool, len(e.st.items))
	hasOwner := make(map[int]bool, len(e.st.items))
	for i, it := range e.st.items.all() {
		exists[i] = it.Exists
		hasOwner[i] = it.OwnerVersion >= 0
	}
	necessary, processing := e.st.necessary, e.st.processing
	e.mu.Unlock()
	if ops, err = r.itemOps(job, owners, exists, hasOwner, unfenced); err != nil {
		return nil, nil, err
	}
	if necessary {
		final = append(final, opDelete(r.p.Necessary(job), -1))
	}
	if processing {
		final = append(final, opDelete(r.p.Processing(job), -1))
	}
	return ops, final, nil
}

// shardingOpsFromRegistry builds the commit from fresh reads.
func (r *Registry) shardingOpsFromRegistry(job string, owners []string, unfenced map[int]bool) (ops, final []any, err error) {
	existing, _, err := r.s.children(r.p.Sharding(job))
	if err != nil {
		return nil, nil, err
	}
	items := itemNumbers(existing)
	exists := make(map[int]bool, len(items))
	for _, i := range items {
		exists[i] = true
	}
	owned := make([]bool, len(owners))
	err = concurrently(len(owners), func(i int) error {
		if !exists[i] {
			return nil
		}
		ok, _, err := r.s.exists(r.p.ItemNode(job, i, NodeInstance))
		owned[i] = ok
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	hasOwner := make(map[int]bool, len(owners))
	for i, ok := range owned {
		hasOwner[i] = ok
	}
	if ops, err = r.itemOps(job, owners, exists, hasOwner, unfenced); err != nil {
		return nil, nil, err
	}
	for _, flag := range []string{r.p.Necessary(job), r.p.Processing(job)} {
		ok, _, err := r.s.exists(flag)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			final = append(final, opDelete(flag, -1))
		}
	}
	return ops, final, nil
}

// itemOps writes each item's owner (ownerOps) and deletes the existing items at or beyond len(owners).
func (r *Registry) itemOps(job string, owners []string, exists, hasOwner, unfenced map[int]bool) ([]any, error) {
	var gone []int
	for i := range exists {
		if i >= len(owners) {
			gone = append(gone, i)
		}
	}
	slices.Sort(gone)
	del, err := r.deleteItemOps(job, gone)
	if err != nil {
		return nil, err
	}
	return append(r.ownerOps(job, owners, exists, hasOwner, unfenced), del...), nil
}

// ownerOps writes each item's owner, creating the item or its instance node where they don't exist. An
// existing item not in unfenced is fenced first: its running node is created and deleted, which fails the
// multi if the item is running (see CommitSharding).
func (r *Registry) ownerOps(job string, owners []string, exists, hasOwner, unfenced map[int]bool) []any {
	ops := make([]any, 0, len(owners))
	for i, owner := range owners {
		if exists[i] && !unfenced[i] {
			running := r.p.ItemNode(job, i, NodeRunning)
			ops = append(ops, r.s.opCreate(running, nil, 0), opDelete(running, -1))
		}
		switch {
		case !exists[i]:
			ops = append(ops, r.s.opCreate(r.p.Item(job, i), nil, 0),
				r.s.opCreate(r.p.ItemNode(job, i, NodeInstance), []byte(owner), 0))
		case hasOwner[i]:
			ops = append(ops, opSet(r.p.ItemNode(job, i, NodeInstance), []byte(owner), -1))
		default:
			ops = append(ops, r.s.opCreate(r.p.ItemNode(job, i, NodeInstance), []byte(owner), 0))
		}
	}
	return ops
}

// deleteItemOps deletes items and their children (read now: the cache doesn't list an item's children).
func (r *Registry) deleteItemOps(job string, items []int) ([]any, error) {
	var ops []any
	for _, i := range items {
		kids, _, err := r.s.children(r.p.Item(job, i))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			ops = append(ops, opDelete(r.p.ItemNode(job, i, k), -1))
		}
		ops = append(ops, opDelete(r.p.Item(job, i), -1))
	}
	return ops, nil
}

// AddFailoverItems puts items into leader/failover/items, for a surviving peer to take over. Leader only.
func (r *Registry) AddFailoverItems(job string, items []int) error {
	guard, err := r.leaderGuard(job)
	if err != nil {
		return err
	}
	for _, i := range items {
		_, err := r.s.multi(guard, r.s.opCreate(r.p.FailoverItem(job, i), nil, 0))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("queue item %d of job %q for failover: %w", i, job, err)
		}
	}
	return nil
}

// ClearFailoverItems removes every pending failover item and failover claim of a job (failover switched off).
func (r *Registry) ClearFailoverItems(job string, n int) error {
	names, _, err := r.s.children(r.p.FailoverItems(job))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	for _, i := range itemNumbers(names) {
		if err := r.deleteIfExists(r.p.FailoverItem(job, i)); err != nil {
			return err
		}
	}
	for i := range n {
		if err := r.deleteIfExists(r.p.ItemNode(job, i, NodeFailovering)); err != nil {
			return err
		}
	}
	return nil
}

// ErrNothingToClaim: the failover item was claimed by another peer, or there is nothing left to re-run.
var ErrNothingToClaim = errors.New("nothing to claim")

// ClaimFailover takes item i over in one transaction: it removes leader/failover/items/{i}, writes
// sharding/{i}/failover (ephemeral) and failovering with this peer's id, and rewrites sharding/{i}/running
// to name this peer while keeping the interrupted execution's id, so the re-POST carries the same
// webhook-id. It returns that execution and the running node's new version.
func (r *Registry) ClaimFailover(job string, item int) (Running, int32, error) {
	run, version, ok, err := r.ReadRunning(job, item)
	if err != nil {
		return Running{}, -1, err
	}
	if !ok {
		// the item finished (or was cleaned up) after all: nothing to re-run
		if err := r.deleteIfExists(r.p.FailoverItem(job, item)); err != nil {
			return Running{}, -1, err
		}
		return Running{}, -1, ErrNothingToClaim
	}
	failovering := r.p.ItemNode(job, item, NodeFailovering)
	hasFailovering, _, err := r.s.exists(failovering)
	if err != nil {
		return Running{}, -1, err
	}
	me := []byte(r.me.InstanceID)
	claimed := run
	claimed.InstanceID = r.me.InstanceID
	ops := []any{
		opDelete(r.p.FailoverItem(job, item), -1),
		r.s.opCreate(r.p.ItemNode(job, item, NodeFailover), me, zk.FlagEphemeral),
	}
	if hasFailovering {
		ops = append(ops, opSet(failovering, me, -1))
	} else {
		ops = append(ops, r.s.opCreate(failovering, me, 0))
	}
	ops = append(ops, opSet(r.p.ItemNode(job, item, NodeRunning), claimed.encode(), version))
	resps, err := r.b.submit(ops...)
	var oe *OpError
	if errors.As(err, &oe) && (oe.Op == 0 || oe.Op == 1) {
		return Running{}, -1, ErrNothingToClaim // another peer was faster
	}
	if errors.As(err, &oe) && oe.Op == 3 {
		return Running{}, -1, ErrNothingToClaim // running changed under us: not an orphan any more
	}
	if err != nil {
		return Running{}, -1, err
	}
	return run, resps[len(resps)-1].Stat.Version, nil
}

// Failovering reads sharding/{i}/failovering.
func (r *Registry) Failovering(job string, item int) (string, error) {
	data, _, err := r.s.get(r.p.ItemNode(job, item, NodeFailovering))
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	return string(data), err
}

// DeleteServer removes servers/{ip} of a job (an offline server's leftover node).
func (r *Registry) DeleteServer(job, ip string) error {
	return r.deleteIfExists(r.p.Server(job, ip))
}
