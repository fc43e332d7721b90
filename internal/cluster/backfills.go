package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Errors of the backfill writes.
var (
	// ErrNoBackfill: no backfill node of that job and id.
	ErrNoBackfill = errors.New("no such backfill")
	// ErrBackfillChanged: the backfill node was written since the version the caller gave (its owner wrote
	// progress, an operator cancelled it, another peer claimed it): read it again and decide again.
	ErrBackfillChanged = errors.New("the backfill changed meanwhile")
	// ErrBackfillOwned: another live peer runs the backfill.
	ErrBackfillOwned = errors.New("another peer runs the backfill")
)

// BackfillNode is one backfill's node: its JSON (internal/backfill's) and data version, the fence of every
// write to it.
type BackfillNode struct {
	Job     string
	ID      string
	Data    []byte
	Version int32
}

// onBackfillWatch handles a watch event under the backfills or their owners' folder.
func (r *Registry) onBackfillWatch(pth string) bool {
	for _, folder := range []string{r.p.Backfills(), r.p.BackfillOwners()} {
		if pth == folder || strings.HasPrefix(pth, folder+"/") {
			r.bfw.fire()
			return true
		}
	}
	return false
}

// CreateBackfill creates a backfill's node.
func (r *Registry) CreateBackfill(job, id string, data []byte) error {
	var err error
	for range 3 { // the job's folder may be pruned between the two (DeleteBackfill): make it again
		if err = r.s.ensurePath(r.p.JobBackfills(job)); err != nil {
			return err
		}
		if err = r.s.create(r.p.Backfill(job, id), data, 0); !errors.Is(err, zk.ErrNoNode) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("create backfill %s of job %q: %w", id, job, err)
	}
	r.bfw.fire()
	return nil
}

// ReadBackfill reads one backfill's node now.
func (r *Registry) ReadBackfill(job, id string) (BackfillNode, error) {
	data, st, err := r.s.get(r.p.Backfill(job, id))
	if errors.Is(err, zk.ErrNoNode) {
		return BackfillNode{}, ErrNoBackfill
	}
	if err != nil {
		return BackfillNode{}, err
	}
	return BackfillNode{Job: job, ID: id, Data: data, Version: st.Version}, nil
}

// JobBackfillNodes reads the backfills of one job, ordered by id (ids are UUIDv7: by creation).
func (r *Registry) JobBackfillNodes(job string) ([]BackfillNode, error) {
	return r.readJobBackfills(job, r.s.children, r.s.get)
}

func (r *Registry) readJobBackfills(job string, list func(string) ([]string, *zk.Stat, error),
	get func(string) ([]byte, *zk.Stat, error)) ([]BackfillNode, error) {
	ids, _, err := list(r.p.JobBackfills(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list backfills of job %q: %w", job, err)
	}
	slices.Sort(ids)
	out := make([]BackfillNode, 0, len(ids))
	for _, id := range ids {
		data, st, err := get(r.p.Backfill(job, id))
		if errors.Is(err, zk.ErrNoNode) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("read backfill %s of job %q: %w", id, job, err)
		}
		out = append(out, BackfillNode{Job: job, ID: id, Data: data, Version: st.Version})
	}
	return out, nil
}

// BackfillNodes reads every backfill of the namespace and the ids that have a live owner. With watch it
// watches the folders, each node and the owners' folder: the returned channel is closed on the first change
// (a backfill created or written, an owner gone with its session) or when the watches go with the session.
func (r *Registry) BackfillNodes(watch bool) ([]BackfillNode, map[string]bool, <-chan struct{}, error) {
	var changed <-chan struct{}
	list, get := r.s.children, r.s.get
	if watch {
		changed = r.bfw.arm()
		list, get = r.s.childrenW, r.s.getW
	}
	for _, folder := range []string{r.p.Backfills(), r.p.BackfillOwners()} {
		if err := r.s.ensurePath(folder); err != nil {
			return nil, nil, nil, err
		}
	}
	owners, _, err := list(r.p.BackfillOwners())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list backfill owners: %w", err)
	}
	owned := make(map[string]bool, len(owners))
	for _, id := range owners {
		owned[id] = true
	}
	jobs, _, err := list(r.p.Backfills())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list backfills: %w", err)
	}
	slices.Sort(jobs)
	var out []BackfillNode
	for _, job := range jobs {
		nodes, err := r.readJobBackfills(job, list, get)
		if err != nil {
			return nil, nil, nil, err
		}
		out = append(out, nodes...)
	}
	return out, owned, changed, nil
}

// WriteBackfill replaces a backfill's node if it still has version; the new version is returned. Every
// progress write of its owner goes through here, so an owner that lost it (another peer claimed it, an
// operator cancelled it) writes nothing.
func (r *Registry) WriteBackfill(job, id string, data []byte, version int32) (int32, error) {
	st, err := r.s.set(r.p.Backfill(job, id), data, version)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return -1, ErrNoBackfill
	case errors.Is(err, zk.ErrBadVersion):
		return -1, ErrBackfillChanged
	case err != nil:
		return -1, err
	}
	return st.Version, nil
}

// ClaimBackfill makes this peer the backfill's owner: in one multi it creates the owner's ephemeral node
// (which goes with this peer's session, so the others see the backfill orphaned) and writes the claimed
// state at version. ErrBackfillOwned if another session owns it; ErrBackfillChanged if the node changed.
// An owner node of this very session (a claim whose answer was lost, a runner restarted) is taken as ours.
func (r *Registry) ClaimBackfill(job, id string, data []byte, version int32) (int32, error) {
	if err := r.s.ensurePath(r.p.BackfillOwners()); err != nil {
		return -1, err
	}
	owner := r.p.BackfillOwner(id)
	ops := []any{r.s.opCreate(owner, []byte(r.me.InstanceID), zk.FlagEphemeral), opSet(r.p.Backfill(job, id), data, version)}
	if _, st, err := r.s.get(owner); err == nil {
		if st.EphemeralOwner != r.s.ID() {
			return -1, ErrBackfillOwned
		}
		ops = ops[1:]
	}
	_, err := r.s.multi(ops...)
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		return -1, ErrBackfillOwned
	case errors.Is(err, zk.ErrBadVersion):
		return -1, ErrBackfillChanged
	case errors.Is(err, zk.ErrNoNode):
		return -1, ErrNoBackfill
	case err != nil:
		return -1, err
	}
	return version + 1, nil // a set adds one to the data version; reading it back could see a later write
}

// ReleaseBackfill deletes this session's owner node of a backfill (it ended, or this peer stops).
func (r *Registry) ReleaseBackfill(id string) error {
	owner := r.p.BackfillOwner(id)
	_, st, err := r.s.get(owner)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.EphemeralOwner != r.s.ID() {
		return nil // another peer's
	}
	if err := r.s.del(owner, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// DeleteBackfill deletes a backfill's node if it still has version (the version the caller decided on), and
// its job's folder once empty. A node deleted meanwhile (another peer pruned it) or written meanwhile (its
// state changed: the caller must decide again) is left as it is, without an error: peers pruning at once
// never undo each other.
func (r *Registry) DeleteBackfill(job, id string, version int32) error {
	err := r.s.del(r.p.Backfill(job, id), version)
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		return fmt.Errorf("delete backfill %s of job %q: %w", id, job, err)
	}
	if err := r.s.del(r.p.JobBackfills(job), -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
		return fmt.Errorf("delete the backfills folder of job %q: %w", job, err)
	}
	return nil
}
