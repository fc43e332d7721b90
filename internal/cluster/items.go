package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/parallel"
)

// Errors of the item writes.
var (
	// ErrNotOwner: the item is no longer this peer's as it believed (resharded, taken over, or this peer's
	// instance node is gone). The item must not run here.
	ErrNotOwner = errors.New("item no longer owned by this instance")
	// ErrItemRunning: sharding/{i}/running exists: the item is running somewhere.
	ErrItemRunning = errors.New("item is running")
)

// BeginItem records that this peer starts item i: in one atomic multi it checks that this peer's instance
// node exists and that sharding/{i}/instance still has the version it read (so the item was not resharded
// away), and creates sharding/{i}/running. A peer whose session expired, or that lost the item, gets
// ErrNotOwner and must not POST: two peers can't both believe they own an item.
// persistent makes the running node outlive this peer (failover jobs need that to detect orphans).
func (r *Registry) BeginItem(job string, item int, ownerVersion int32, run Running, persistent bool) error {
	_, err := r.b.submit(r.beginOps(job, item, ownerVersion, run, persistent)...)
	return beginErr(err)
}

// BeginItemThen is BeginItem as a record on the write batcher: it returns at once and then gets BeginItem's
// outcome on a flusher (it must not block; it may also be called before BeginItemThen returns). An item that
// waits for its begin then holds no goroutine: through a restart at 100,000 jobs a survivor's begins waited
// seconds for ZooKeeper by the thousand (docs/benchmarks.md).
func (r *Registry) BeginItemThen(job string, item int, ownerVersion int32, run Running, persistent bool, then func(error)) {
	r.b.submitThen(func(_ []zk.MultiResponse, err error) { then(beginErr(err)) },
		r.beginOps(job, item, ownerVersion, run, persistent)...)
}

// beginOps are an item's begin: this peer's instance node and the item's owner version checked, the running
// node created (persistent or ephemeral).
func (r *Registry) beginOps(job string, item int, ownerVersion int32, run Running, persistent bool) []any {
	flags := int32(zk.FlagEphemeral)
	if persistent {
		flags = 0
	}
	return []any{
		opCheck(r.p.Instance(job, r.me.InstanceID), -1),
		opCheck(r.p.ItemNode(job, item, NodeInstance), ownerVersion),
		r.s.opCreate(r.p.ItemNode(job, item, NodeRunning), run.encode(), flags),
	}
}

// beginErr maps a begin's refusal to ErrNotOwner (a check failed) or ErrItemRunning (the running node is
// there); any other error is returned as it is.
func beginErr(err error) error {
	var oe *OpError
	if errors.As(err, &oe) {
		switch oe.Op {
		case 0, 1:
			return fmt.Errorf("%w: %v", ErrNotOwner, oe)
		case 2:
			if errors.Is(oe.Err, zk.ErrNodeExists) {
				return ErrItemRunning
			}
		}
	}
	return err
}

// EndItem records the outcome of item i: it deletes sharding/{i}/running if this execution still holds it
// (version), writes sharding/{i}/completed, and, after a failover run, deletes the failover nodes.
func (r *Registry) EndItem(job string, item int, runningVersion int32, done Completed, clearFailover bool) error {
	useCreate, err := r.completedAbsent(job, item)
	if err != nil {
		return err
	}
	return r.endTries(r.ending(job, item, runningVersion, done, clearFailover, useCreate), 0, nil)
}

// EndItemThen is EndItem as a record on the write batcher: it returns at once, and then gets EndItem's outcome,
// on a flusher (it must not block) or before EndItemThen returns. Its first try waits on no goroutine when this
// peer knows the item's completed node exists (its usual end); a first try that fails for a reason EndItem
// tries again for, and an end that must first ask whether the node exists, go on as EndItem does, on a
// goroutine of their own. Through a restart at 100,000 jobs a survivor's items waited seconds for their ends
// by the thousand, each on a goroutine (docs/benchmarks.md).
func (r *Registry) EndItemThen(job string, item int, runningVersion int32, done Completed, clearFailover bool, then func(error)) {
	e := r.entry(job) // looked up once: the outcome records the node on the entry the end began with
	if !e.completedKnown(item) {
		go func() { then(r.EndItem(job, item, runningVersion, done, clearFailover)) }()
		return
	}
	en := r.ending(job, item, runningVersion, done, clearFailover, false)
	r.b.submitThen(func(_ []zk.MultiResponse, err error) {
		if err == nil {
			e.setCompleted(item, true)
			then(nil)
			return
		}
		go func() { then(r.endTries(en, 1, err)) }()
	}, r.endOps(en)...)
}

// ending is an item's end being written: what its next try sends, as the tries before it have learnt.
type ending struct {
	job                                   string
	item                                  int
	runningVersion                        int32
	data                                  []byte
	lastFire                              time.Time
	useCreate, dropRunning, clearFailover bool
}

func (r *Registry) ending(job string, item int, runningVersion int32, done Completed, clearFailover, useCreate bool) *ending {
	data, _ := json.Marshal(done)
	return &ending{job: job, item: item, runningVersion: runningVersion, data: data, lastFire: done.LastFire(),
		useCreate: useCreate, dropRunning: runningVersion < 0, clearFailover: clearFailover}
}

// endOps is an end's next try: the running node deleted (unless dropped), the completed node written, the
// failover nodes deleted (after a failover run).
func (r *Registry) endOps(en *ending) []any {
	var ops []any
	if !en.dropRunning {
		ops = append(ops, opDelete(r.p.ItemNode(en.job, en.item, NodeRunning), en.runningVersion))
	}
	ops = append(ops, r.completedOp(r.p.ItemNode(en.job, en.item, NodeCompleted), en.data, en.useCreate))
	if en.clearFailover {
		ops = append(ops, opDelete(r.p.ItemNode(en.job, en.item, NodeFailover), -1),
			opDelete(r.p.ItemNode(en.job, en.item, NodeFailovering), -1))
	}
	return ops
}

// endTries runs an end's tries after the sent ones (sent, the last of which answered err) until one lands,
// the end turns out not to be this run's to write, or four tries conflicted.
func (r *Registry) endTries(en *ending, sent int, err error) error {
	for ; ; sent++ {
		if sent > 0 {
			if res, over := r.endAfter(en, err); over {
				return res
			}
		}
		if sent == 4 {
			return fmt.Errorf("record the end of item %d of job %q: too many conflicts", en.item, en.job)
		}
		_, err = r.b.submit(r.endOps(en)...)
	}
}

// endAfter judges an end's try from its outcome: over reports that the end is decided (res is EndItem's
// answer); otherwise en is readied for the next try.
func (r *Registry) endAfter(en *ending, err error) (res error, over bool) {
	completed := r.p.ItemNode(en.job, en.item, NodeCompleted)
	var oe *OpError
	switch {
	case err == nil:
		r.setCompleted(en.job, en.item, true)
		return nil, true
	case !errors.As(err, &oe):
		return err, true
	case oe.Path == completed && errors.Is(oe.Err, zk.ErrNodeExists):
		en.useCreate = false
	case oe.Path == completed && errors.Is(oe.Err, zk.ErrNoNode):
		if en.useCreate { // sharding/{i} itself is gone: the item was resharded away
			return nil, true
		}
		en.useCreate = true
	case !en.dropRunning && oe.Op == 0:
		// running was rewritten (a failover took the item) or removed: not ours to delete. A run that lost
		// its node (its peer froze past its session: the node was ended as LOST, the item ran on) records
		// its end only if no later fire's is there: catchUp all counts missed fires from that node.
		en.dropRunning = true
		if cur, ok, err := r.LastCompleted(en.job, en.item); err == nil && ok && cur.LastFire().After(en.lastFire) {
			return nil, true
		}
	case en.clearFailover && errors.Is(oe.Err, zk.ErrNoNode):
		en.clearFailover = false
		if err := r.deleteIfExists(r.p.ItemNode(en.job, en.item, NodeFailover)); err != nil {
			return err, true
		}
		if err := r.deleteIfExists(r.p.ItemNode(en.job, en.item, NodeFailovering)); err != nil {
			return err, true
		}
	default:
		return err, true
	}
	return nil, false
}

// completedOp writes an item's completed node at pth: a create when it is absent, else a set.
func (r *Registry) completedOp(pth string, data []byte, absent bool) any {
	if absent {
		return r.s.opCreate(pth, data, 0)
	}
	return opSet(pth, data, -1)
}

func (r *Registry) deleteIfExists(pth string) error {
	if err := r.s.del(pth, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// completedKnown reports whether item's completed node is known to exist (its slot's flag, itemSlot).
func (r *Registry) completedKnown(job string, item int) bool {
	return r.entry(job).completedKnown(item)
}

// setCompleted records whether item's completed node is known to exist. An item this peer holds no slot of
// (its job or its sharding node not loaded yet) is not recorded: its next end asks ZooKeeper.
func (r *Registry) setCompleted(job string, item int, known bool) {
	r.entry(job).setCompleted(item, known)
}

// completedKnown is Registry.completedKnown on the job's entry (nil: no entry, not known).
func (e *jobEntry) completedKnown(item int) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.items.completed(item)
}

// setCompleted is Registry.setCompleted on the job's entry (nil: no entry, nothing recorded).
func (e *jobEntry) setCompleted(item int, known bool) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.items.setCompleted(item, known)
}

// completedAbsent says whether item i's completed node is to be created (true) or set: known from this
// process's own writes, else read (no watch). Guessed as absent, it exists whenever the item ran before
// this process ran it (an item gained from a stopped peer, any item of a restarted peer): the create failed
// the shared multi, and the batcher sent every group batched with it again, one failure at a time, so a
// restarted peer at 100,000 jobs fell behind its fires by 1 s every 4 s (20,000 item writes queued).
func (r *Registry) completedAbsent(job string, item int) (bool, error) {
	if r.completedKnown(job, item) {
		return false, nil
	}
	ok, _, err := r.s.exists(r.p.ItemNode(job, item, NodeCompleted))
	if err != nil {
		return false, err
	}
	if ok {
		r.setCompleted(job, item, true)
	}
	return !ok, nil
}

// noteCompleted learns from an event of an item's completed node (the namespace's recursive watch reports
// them; no refresh reads them) whether the node exists, so that this peer's first end of an item another peer
// ran sets the node without asking ZooKeeper first (completedAbsent): a stopped peer's survivors gain
// thousands of items, and asked one exists each as those items first ended on them (~400 a second each at
// 100,000 jobs, docs/benchmarks.md run 28).
func (r *Registry) noteCompleted(job string, item int, typ zk.EventType) {
	switch typ {
	case zk.EventNodeCreated, zk.EventNodeDataChanged:
		r.setCompleted(job, item, true)
	case zk.EventNodeDeleted:
		r.setCompleted(job, item, false)
	}
}

// SetMisfire creates sharding/{i}/misfire: a fire of item i was skipped because it was still running.
func (r *Registry) SetMisfire(job string, item int) error {
	_, err := r.b.submit(r.s.opCreate(r.p.ItemNode(job, item, NodeMisfire), nil, 0))
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// ClearMisfire deletes sharding/{i}/misfire.
func (r *Registry) ClearMisfire(job string, item int) error {
	_, err := r.b.submit(opDelete(r.p.ItemNode(job, item, NodeMisfire), -1))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// InstanceOnline reads from ZooKeeper whether an instance's node is on a job now. A peer's snapshot may not
// list an instance yet (it registered after the peer's last read of the job's instances, as every peer does
// on a job just created), so an instance missing from a snapshot is taken for gone, and its running items
// for lost or failed over, only once ZooKeeper confirms it.
func (r *Registry) InstanceOnline(job, id string) (bool, error) {
	ok, _, err := r.s.exists(r.p.Instance(job, id))
	return ok, err
}

// ReadRunning reads sharding/{i}/running.
func (r *Registry) ReadRunning(job string, item int) (Running, int32, bool, error) {
	data, st, err := r.s.get(r.p.ItemNode(job, item, NodeRunning))
	if errors.Is(err, zk.ErrNoNode) {
		return Running{}, -1, false, nil
	}
	if err != nil {
		return Running{}, -1, false, err
	}
	return decodeRunning(data), st.Version, true, nil
}

// LastCompleted reads sharding/{i}/completed: the item's last recorded outcome, from any peer.
func (r *Registry) LastCompleted(job string, item int) (Completed, bool, error) {
	data, _, err := r.s.get(r.p.ItemNode(job, item, NodeCompleted))
	if errors.Is(err, zk.ErrNoNode) {
		return Completed{}, false, nil
	}
	if err != nil {
		return Completed{}, false, err
	}
	r.setCompleted(job, item, true) // the next end of the item sets it
	var c Completed
	if err := json.Unmarshal(data, &c); err != nil {
		return Completed{}, false, nil // unreadable: as if never completed
	}
	return c, true, nil
}

// ClearStaleRunning deletes a running node left by an instance that is no longer online (version-checked,
// so a node rewritten meanwhile stays).
func (r *Registry) ClearStaleRunning(job string, item int, version int32) error {
	err := r.s.del(r.p.ItemNode(job, item, NodeRunning), version)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return nil
	}
	return err
}

// CompletedLost is the State of a completed node written for a run whose instance vanished mid-run: it
// ended with an unknown outcome (its receiver may or may not have had it).
const CompletedLost = "LOST"

// EndStaleRunning ends a run that a vanished instance left behind: in one transaction it deletes the running
// node (version-checked, so a node rewritten meanwhile stays and nothing is written) and records the run as
// the item's completed node with State LOST, so the item's last fire is still known after the node is gone
// (catchUp all counts the fires after it as missed, not the fire itself, which its receiver may have had).
func (r *Registry) EndStaleRunning(job string, item int, version int32, run Running, now time.Time) error {
	done := Completed{ExecutionID: run.ExecutionID, InstanceID: run.InstanceID, Source: run.Source,
		ScheduledAt: run.ScheduledAt, FinishedAt: now.UTC(), State: CompletedLost}
	if prev, ok, err := r.LastCompleted(job, item); err == nil && ok && prev.LastFire().After(run.ScheduledAt) {
		done.Latest = prev.LastFire() // the lost run was a catch-up of an older fire
	}
	data, _ := json.Marshal(done)
	running, completed := r.p.ItemNode(job, item, NodeRunning), r.p.ItemNode(job, item, NodeCompleted)
	useCreate := !r.completedKnown(job, item)
	for range 3 {
		write := any(opSet(completed, data, -1))
		if useCreate {
			write = r.s.opCreate(completed, data, 0)
		}
		res, err := r.s.multi(opDelete(running, version), write)
		if err == nil {
			r.setCompleted(job, item, true)
			return nil
		}
		if len(res) != 2 {
			return err // not an answer per operation: the request itself failed
		}
		switch werr := res[1].Error; {
		case errors.Is(res[0].Error, zk.ErrBadVersion) || errors.Is(res[0].Error, zk.ErrNoNode):
			return nil // the running node was rewritten (a failover took it) or removed: not ours to end
		case errors.Is(werr, zk.ErrNodeExists):
			useCreate = false
		case errors.Is(werr, zk.ErrNoNode) && !useCreate:
			useCreate = true
		case errors.Is(werr, zk.ErrNoNode):
			return nil // sharding/{i} itself is gone: the item was resharded away
		default:
			return err
		}
	}
	return fmt.Errorf("record the lost run of item %d of job %q: too many conflicts", item, job)
}

// PeekTrigger reads trigger/{me} without deleting it, reporting whether there was one: the claim names the
// version read, for the start record that consumes it (RecordFireStart) or for DropTrigger.
func (r *Registry) PeekTrigger(job string) (TriggerRequest, *TriggerClaim, bool, error) {
	data, st, err := r.s.get(r.p.Trigger(job, r.me.InstanceID))
	if errors.Is(err, zk.ErrNoNode) {
		return TriggerRequest{}, nil, false, nil
	}
	if err != nil {
		return TriggerRequest{}, nil, false, err
	}
	return decodeTrigger(data), &TriggerClaim{Job: job, Version: st.Version}, true, nil
}

// DropTrigger deletes trigger/{me} if it is still the version claimed; gone reports that it was not (deleted,
// or replaced: handed on to other instances meanwhile). A claim a start record consumed is gone without a
// round trip.
func (r *Registry) DropTrigger(job string, c *TriggerClaim) (gone bool, err error) {
	if c.consumed {
		return true, nil
	}
	err = r.s.del(r.p.Trigger(job, r.me.InstanceID), c.Version)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return true, nil
	}
	return false, err
}

// oneShot wakes the waiters of a path watched by WaitGone; it reports whether there were any.
func (r *Registry) oneShot(pth string) bool {
	r.waitMu.Lock()
	list, ok := r.waiters[pth]
	delete(r.waiters, pth)
	r.waitMu.Unlock()
	for _, ch := range list {
		close(ch)
	}
	return ok
}

// WaitGone waits until none of the paths exists, with watches rather than polling.
func (r *Registry) WaitGone(ctx context.Context, paths []string) error {
	for _, pth := range paths {
		for {
			ch := r.addWaiter(pth)
			ok, _, err := r.s.existsW(pth)
			if err == nil && ok {
				select {
				case <-ctx.Done():
					err = ctx.Err()
				case <-ch:
					continue
				}
			}
			r.dropWaiter(pth, ch)
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// addWaiter returns a channel closed by the next watch event on pth (oneShot); arm the watch after it.
func (r *Registry) addWaiter(pth string) chan struct{} {
	ch := make(chan struct{})
	r.waitMu.Lock()
	r.waiters[pth] = append(r.waiters[pth], ch)
	r.waitMu.Unlock()
	return ch
}

func (r *Registry) dropWaiter(pth string, ch chan struct{}) {
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	list := slices.DeleteFunc(r.waiters[pth], func(c chan struct{}) bool { return c == ch })
	if len(list) == 0 {
		delete(r.waiters, pth)
	} else {
		r.waiters[pth] = list
	}
}

// RunningItems returns the items below n whose running node exists, with their content.
func (r *Registry) RunningItems(job string, n int) (map[int]Running, error) {
	runs := make([]*Running, n)
	err := concurrently(n, func(i int) error {
		run, _, ok, err := r.ReadRunning(job, i)
		if ok {
			runs[i] = &run
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[int]Running{}
	for i, run := range runs {
		if run != nil {
			out[i] = *run
		}
	}
	return out, nil
}

// RunningItemsOf reads, for each job of counts, the running nodes of its items 0..counts[job]-1, and returns
// those that exist, by job then item (a job without one is left out). The reads travel in multiRead requests of a few hundred, sent at once
// (one get per item, 32 at a time, without multiRead: ZooKeeper before 3.6).
func (r *Registry) RunningItemsOf(counts map[string]int) (map[string]map[int]Running, error) {
	out := make(map[string]map[int]Running, len(counts))
	jobs := slices.Sorted(maps.Keys(counts))
	if r.noMultiRead.Load() {
		for _, job := range jobs {
			runs, err := r.RunningItems(job, counts[job])
			if err != nil {
				return nil, err
			}
			if len(runs) > 0 {
				out[job] = runs
			}
		}
		return out, nil
	}
	var ops []zk.ReadOp
	for _, job := range jobs {
		for i := range counts[job] {
			ops = append(ops, zk.ReadOp{Path: r.p.ItemNode(job, i, NodeRunning)})
		}
	}
	res, err := r.multiReadChunked(ops)
	if r.multiReadRefused(err) {
		return r.RunningItemsOf(counts) // noMultiRead is set now
	}
	if err != nil {
		return nil, err
	}
	k := 0
	for _, job := range jobs {
		for i := range counts[job] {
			if x := res[k]; x.Err == nil {
				if out[job] == nil {
					out[job] = map[int]Running{}
				}
				out[job][i] = decodeRunning(x.Data)
			}
			k++
		}
	}
	return out, nil
}

// readers bounds the concurrent reads of one bulk read: go-zookeeper pipelines concurrent requests on its
// one connection, so n reads cost about n/readers round trips instead of n.
const readers = 32

// concurrently runs fn(0..n-1) on up to readers goroutines and returns the first error.
func concurrently(n int, fn func(i int) error) error { return parallel.For(n, readers, fn) }
