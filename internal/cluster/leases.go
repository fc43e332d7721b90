package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/lease"
)

// Errors of the lease writes.
var (
	// ErrNoLease: no lease node of that execution.
	ErrNoLease = errors.New("no lease of that execution")
	// ErrLeaseChanged: the lease node was written since it was read (another peer applied a callback or the
	// watcher an expiry): read it again and decide again.
	ErrLeaseChanged = errors.New("the lease changed meanwhile")
	// ErrNotWatcher: this peer does not hold the lease watcher duty (any more).
	ErrNotWatcher = errors.New("not the lease watcher")
)

// AcceptItem records that the receiver accepted item i's request (202): in one multi it creates the
// execution's lease node and, for a monitored item, replaces its running node (ephemeral unless the job has
// failover, so it would go with this peer) by a persistent one marked async, version-checked so an item that
// was taken over meanwhile is not claimed back.
func (r *Registry) AcceptItem(l lease.Lease, run Running, runningVersion int32, monitored bool) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	ops := []any{r.s.opCreate(r.p.Lease(l.ExecutionID), data, 0)}
	if monitored {
		run.Async = true
		running := r.p.ItemNode(l.JobName, l.ShardingItem, NodeRunning)
		ops = append(ops, opDelete(running, runningVersion), r.s.opCreate(running, run.encode(), 0))
	}
	_, err = r.b.submit(ops...)
	var oe *OpError
	if errors.As(err, &oe) && oe.Op == 0 && errors.Is(oe.Err, zk.ErrNoNode) {
		// the leases folder went (an operator's clean-up): make it again, once
		if err = r.s.ensurePath(r.p.Leases()); err == nil {
			_, err = r.b.submit(ops...)
		}
	}
	if errors.As(err, &oe) && oe.Op == 0 && errors.Is(oe.Err, zk.ErrNodeExists) {
		return fmt.Errorf("accept execution %s: %w", l.ExecutionID, zk.ErrNodeExists)
	}
	return err
}

// ReadLease reads an execution's lease and its node version: the live lease, or else its ended record
// (version -1: it is never written again).
func (r *Registry) ReadLease(executionID string) (lease.Lease, int32, error) {
	data, st, err := r.s.get(r.p.Lease(executionID))
	if errors.Is(err, zk.ErrNoNode) {
		data, _, err = r.s.get(r.p.EndedLease(executionID))
		st = &zk.Stat{Version: -1}
	}
	if errors.Is(err, zk.ErrNoNode) {
		return lease.Lease{}, -1, ErrNoLease
	}
	if err != nil {
		return lease.Lease{}, -1, err
	}
	var l lease.Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return lease.Lease{}, -1, fmt.Errorf("lease of execution %s is not readable: %w", executionID, err)
	}
	return l, st.Version, nil
}

// WriteLease replaces an execution's lease if its node still has version. An ended lease moves to the ended
// folder in the same multi (the watcher lists only the live ones), and so does the item's end when its running
// node is still this execution's: the running node released and the completed node naming the lease's fire.
// itemEnded reports that it did; otherwise (the running node went or was never written) the caller records the
// item's end. fence, if not nil, is an op that must hold too (the lease watcher's duty).
//
// The item's end travels with the lease's because a write whose answer is lost (its peer frozen or cut off
// after ZooKeeper applied it) has no effects after it: with the completed node written apart, the item's
// running node was gone and its completed node silent, and a peer that gained the item in a resharding ran
// the fire again (a double delivery the nemesis soak found, seed 20). Nor does a reader between two writes see
// the item neither running nor ended.
func (r *Registry) WriteLease(l lease.Lease, version int32, fence any) (itemEnded bool, err error) {
	data, err := json.Marshal(l)
	if err != nil {
		return false, err
	}
	for range 3 {
		ops := make([]any, 0, 5)
		if fence != nil {
			ops = append(ops, fence)
		}
		end := itemEnd{}
		if l.State.Ended() {
			ops = append(ops, opDelete(r.p.Lease(l.ExecutionID), version), r.s.opCreate(r.p.EndedLease(l.ExecutionID), data, 0))
			if end, err = r.itemEndOps(l); err != nil {
				return false, err
			}
			ops = append(ops, end.ops...)
		} else {
			ops = append(ops, opSet(r.p.Lease(l.ExecutionID), data, version))
		}
		_, err = r.b.submit(ops...)
		var oe *OpError
		switch {
		case err == nil:
			if end.ops != nil {
				r.setCompleted(l.JobName, l.ShardingItem, true)
			}
			return end.ops != nil, nil
		case errors.As(err, &oe) && fence != nil && oe.Op == 0:
			return false, ErrNotWatcher
		case errors.As(err, &oe) && end.ops != nil && (oe.Path == end.completed || oe.Path == end.running):
			// the completed node appeared or went, or the running node changed: look again
			r.setCompleted(l.JobName, l.ShardingItem, false)
			continue
		case errors.Is(err, zk.ErrBadVersion):
			return false, ErrLeaseChanged
		case errors.Is(err, zk.ErrNoNode):
			return false, ErrNoLease
		}
		return false, err
	}
	return false, ErrLeaseChanged
}

// itemEnd is what an ended lease's multi does to its item: ops, and the paths of the nodes they write.
type itemEnd struct {
	ops                []any
	running, completed string
}

// itemEndOps reads an ended lease's item: when its running node is still this execution's, the ops that
// release it and record the item's end (CompletedOf) in its completed node. The lease is live until the multi
// commits, and nobody else removes an accepted item's running node while its lease is live, so the version
// read here is still its node's (a node created after the end could have the same version), and no later run
// of the item has ended meanwhile (its completed node may be overwritten).
func (r *Registry) itemEndOps(l lease.Lease) (itemEnd, error) {
	running := r.p.ItemNode(l.JobName, l.ShardingItem, NodeRunning)
	rdata, st, err := r.s.get(running)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return itemEnd{}, nil
	case err != nil:
		return itemEnd{}, err
	case decodeRunning(rdata).ExecutionID != l.ExecutionID:
		return itemEnd{}, nil
	}
	absent, err := r.completedAbsent(l.JobName, l.ShardingItem)
	if err != nil {
		return itemEnd{}, err
	}
	done, _ := json.Marshal(CompletedOf(l))
	end := itemEnd{ops: []any{opDelete(running, st.Version)}, running: running,
		completed: r.p.ItemNode(l.JobName, l.ShardingItem, NodeCompleted)}
	end.ops = append(end.ops, r.completedOp(end.completed, done, absent))
	return end, nil
}

// CompletedOf is the completed node of an ended lease's item.
func CompletedOf(l lease.Lease) Completed {
	return Completed{ExecutionID: l.ExecutionID, InstanceID: l.InstanceID, Source: ejserver.Source(l.Source),
		Success: l.State == lease.Succeeded, StatusCode: l.StatusCode, ScheduledAt: l.ScheduledAt, FinishedAt: l.EndedAt,
		State: string(l.State)}
}

// DeleteEnded removes an ended execution's record (kept for a while after the end so a repeated completion
// gets the same answer from any peer).
func (r *Registry) DeleteEnded(executionID string) error {
	err := r.s.del(r.p.EndedLease(executionID), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// EndedLeases lists the execution ids that have an ended record.
func (r *Registry) EndedLeases() ([]string, error) {
	ids, _, err := r.s.children(r.p.EndedLeases())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return ids, err
}

// CatchUp hands the one catch-up of item i to its owner after an accepted execution ended: if a fire found
// the item running meanwhile (its misfire node), the misfire node is replaced by a trigger node that makes the
// owner run the item once more with source MISFIRE, in one multi, so exactly one catch-up follows. It reports
// whether there was a misfire.
func (r *Registry) CatchUp(job string, item int, executionID string) (bool, error) {
	misfirePath := r.p.ItemNode(job, item, NodeMisfire)
	ok, mst, err := r.s.exists(misfirePath)
	if err != nil || !ok {
		return false, err
	}
	owner := ""
	if snap := r.Job(job); snap != nil {
		owner = snap.Item(item).Owner
	}
	if owner == "" {
		return true, nil // resharding: the misfire node stays for the item's next owner to find
	}
	t, _ := json.Marshal(TriggerRequest{ID: "misfire-" + executionID, Items: []int{item}, Misfire: true,
		RequestedAt: r.clk.Now().UTC()})
	_, err = r.b.submit(opDelete(misfirePath, mst.Version), r.s.opCreate(r.p.Trigger(job, owner), t, 0))
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		// the owner has a trigger waiting already, or another peer took the misfire first
		return true, nil
	}
	return true, err
}

// LeaseLive reports whether executionID has a lease that has not ended: its running node must stay.
func (r *Registry) LeaseLive(executionID string) (bool, error) {
	if !ValidExecutionID(executionID) {
		return false, nil
	}
	ok, _, err := r.s.exists(r.p.Lease(executionID))
	return ok, err
}

// WaitLease waits until executionID's lease node exists (a callback that overtook the 202 it follows), or
// its ended record does.
func (r *Registry) WaitLease(ctx context.Context, executionID string) error {
	pth := r.p.Lease(executionID)
	for {
		ch := r.addWaiter(pth)
		ok, _, err := r.s.existsW(pth)
		if err == nil && !ok { // not (or no longer) live: it may have ended already
			ok, _, err = r.s.exists(r.p.EndedLease(executionID))
		}
		if err != nil || ok {
			r.dropWaiter(pth, ch)
			return err
		}
		select {
		case <-ctx.Done():
			r.dropWaiter(pth, ch)
			return ctx.Err()
		case <-ch:
		}
	}
}

// Leases lists the execution ids that have a lease node, and arms a watch: the returned channel is closed
// when the list changes (or the watch is lost).
func (r *Registry) Leases() ([]string, <-chan struct{}, error) {
	pth := r.p.Leases()
	ch := r.addWaiter(pth)
	ids, _, err := r.s.childrenW(pth)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(pth); err == nil {
			ids, _, err = r.s.childrenW(pth)
		}
	}
	if err != nil {
		r.dropWaiter(pth, ch)
		return nil, nil, err
	}
	return ids, ch, nil
}

// WatcherDuty stands this peer for the lease watcher duty: it creates its ephemeral sequential node (if it
// has none in this session) and reports whether it holds the duty (its node is the lowest), the op that
// fences the holder's writes (its node must still exist), and a channel closed when the node it waits
// behind goes.
func (r *Registry) WatcherDuty(mine string) (held bool, node string, fence any, changed <-chan struct{}, err error) {
	return r.duty(r.p.LeaseWatchers(), mine)
}

// duty stands this peer for a duty held by the lowest ephemeral sequential node of folder (see WatcherDuty).
func (r *Registry) duty(folder, mine string) (held bool, node string, fence any, changed <-chan struct{}, err error) {
	if err := r.s.ensurePath(folder); err != nil {
		return false, "", nil, nil, err
	}
	if mine != "" {
		if ok, st, err := r.s.exists(mine); err != nil {
			return false, "", nil, nil, err
		} else if !ok || st.EphemeralOwner != r.s.ID() {
			mine = ""
		}
	}
	if mine == "" {
		mine, err = r.s.conn.Create(folder+"/w-", []byte(r.me.InstanceID), zk.FlagEphemeral|zk.FlagSequence, r.s.acl)
		if err != nil {
			return false, "", nil, nil, err
		}
	}
	kids, _, err := r.s.children(folder)
	if err != nil {
		return false, mine, nil, nil, err
	}
	slices.Sort(kids) // sequence numbers are zero-padded: the lexical order is the numeric one
	name := mine[strings.LastIndex(mine, "/")+1:]
	pos := slices.Index(kids, name)
	if pos < 0 {
		return false, "", nil, nil, fmt.Errorf("duty node %s vanished", mine)
	}
	if pos == 0 {
		return true, mine, opCheck(mine, -1), nil, nil
	}
	ahead := folder + "/" + kids[pos-1]
	ch := r.addWaiter(ahead)
	ok, _, err := r.s.existsW(ahead)
	if err != nil || !ok {
		r.dropWaiter(ahead, ch)
		if err != nil {
			return false, mine, nil, nil, err
		}
		return r.duty(folder, mine) // it went before the watch was set: look again
	}
	return false, mine, nil, ch, nil
}

// ResignWatcher deletes this peer's lease watcher node (shutdown: the next peer takes the duty at once).
func (r *Registry) ResignWatcher(node string) {
	if node != "" {
		_ = r.s.del(node, -1)
	}
}

// CallbackSecret returns the cluster's callback token secret, creating it on first use: 32 random bytes in a
// node whose ACL, with --zk-digest, lets only the cluster's digest read it (job nodes are world-readable, and
// a reader of the registry must not mint tokens). Without a digest anyone who can reach ZooKeeper can read it,
// as they can write jobs: the caller warns.
func (r *Registry) CallbackSecret() ([]byte, error) {
	pth := r.p.CallbackSecret()
	if err := r.s.ensurePath(r.p.Meta()); err != nil {
		return nil, err
	}
	for range 3 {
		data, _, err := r.s.get(pth)
		if err == nil && len(data) >= lease.MinSecretLen {
			return data, nil
		}
		if err == nil {
			return nil, fmt.Errorf("callback secret node %s holds %d bytes; delete it to have a new one made", pth, len(data))
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
		_, err = r.s.conn.Create(pth, secret, 0, r.s.secretACL())
		if err == nil {
			return secret, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("read the callback secret at %s: it keeps changing", pth)
}

// JobGone reports whether job's config node is gone from ZooKeeper (read now, not from the cache, which may
// not have loaded a job yet).
func (r *Registry) JobGone(job string) (bool, error) {
	ok, _, err := r.s.exists(r.p.Config(job))
	return err == nil && !ok, err
}

// Digested reports whether the session authenticates with a digest (secret nodes are then closed to others).
func (r *Registry) Digested() bool { return r.s.cfg.Digest != "" }

// ValidExecutionID reports whether id can name a lease node: an execution id is a UUID in its canonical form.
func ValidExecutionID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i, c := range id {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
	}
	return true
}
