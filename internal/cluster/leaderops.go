package cluster

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// SetNecessary creates leader/sharding/necessary: reshard before the next fire. It reports whether this
// call created it.
func (r *Registry) SetNecessary(job string) (bool, error) {
	err := r.s.create(r.p.Necessary(job), nil, 0)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode):
		return false, nil
	}
	return false, err
}

// BeginResharding creates the ephemeral leader/sharding/processing node (it dies with the leader).
func (r *Registry) BeginResharding(job string) error {
	err := r.s.create(r.p.Processing(job), nil, zk.FlagEphemeral)
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// CommitSharding writes owners[i] into sharding/{i}/instance for every item, deletes items >= len(owners)
// and, in the same transaction, deletes necessary and processing: peers act on the new assignment only once
// necessary is gone, so that deletion is the commit point. Every multi carries the leader guard. A
// resharding too large for one multi writes the items in earlier multis; they are inert until the last one
// removes necessary.
func (r *Registry) CommitSharding(job string, owners []string) error {
	guard, err := r.leaderGuard(job)
	if err != nil {
		return err
	}
	existing, _, err := r.s.children(r.p.Sharding(job))
	if err != nil {
		return err
	}
	items := itemNumbers(existing)
	present := make(map[int]bool, len(items))
	for _, i := range items {
		present[i] = true
	}
	hasInstance := make([]bool, len(owners))
	err = concurrently(len(owners), func(i int) error {
		if !present[i] {
			return nil
		}
		ok, _, err := r.s.exists(r.p.ItemNode(job, i, NodeInstance))
		hasInstance[i] = ok
		return err
	})
	if err != nil {
		return err
	}
	var ops []any
	for i, owner := range owners {
		switch {
		case !present[i]:
			ops = append(ops, r.s.opCreate(r.p.Item(job, i), nil, 0),
				r.s.opCreate(r.p.ItemNode(job, i, NodeInstance), []byte(owner), 0))
		case hasInstance[i]:
			ops = append(ops, opSet(r.p.ItemNode(job, i, NodeInstance), []byte(owner), -1))
		default:
			ops = append(ops, r.s.opCreate(r.p.ItemNode(job, i, NodeInstance), []byte(owner), 0))
		}
	}
	for _, i := range items {
		if i < len(owners) {
			continue
		}
		kids, _, err := r.s.children(r.p.Item(job, i))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			ops = append(ops, opDelete(r.p.ItemNode(job, i, k), -1))
		}
		ops = append(ops, opDelete(r.p.Item(job, i), -1))
	}
	var final []any
	for _, flag := range []string{r.p.Necessary(job), r.p.Processing(job)} {
		ok, _, err := r.s.exists(flag)
		if err != nil {
			return err
		}
		if ok {
			final = append(final, opDelete(flag, -1))
		}
	}
	for len(ops)+len(final) > maxBatchOps-1 {
		n := maxBatchOps - 1
		if _, err := r.s.multi(append([]any{guard}, ops[:n]...)...); err != nil {
			return fmt.Errorf("write sharding of job %q: %w", job, err)
		}
		ops = ops[n:]
	}
	if _, err := r.s.multi(append(append([]any{guard}, ops...), final...)...); err != nil {
		return fmt.Errorf("commit sharding of job %q: %w", job, err)
	}
	return nil
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
