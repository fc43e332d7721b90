package async

import (
	"context"
	"errors"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// endCommitWait bounds the wait for an ended lease's history record to commit (as the executor's item ends).
const endCommitWait = 5 * time.Second

// An ended lease's record in ZooKeeper holds the item's end until the history does. The peer that ends a lease
// (a completion, a re-POST's answer, the watcher's expiry) writes it to ZooKeeper first and queues its history
// record after: a peer lost between the two would lose the record (docs/reliability.md). So the watcher duty
// writes the end record of every ended lease it sees end or finds in the ended folder (a new holder finds the
// ends of the holder it replaces), and deletes an ended record only once its end record has committed.

// recordEnded queues the history record of ended lease id (an idempotent upsert: a repeat of the record its
// peer queued costs one write).
func (m *Manager) recordEnded(id string) {
	l, _, err := m.reg.ReadLease(id)
	switch {
	case errors.Is(err, cluster.ErrNoLease):
	case err != nil:
		m.log.Warn("lease watcher: could not read an ended lease to record it", "execution_id", id, "err", err)
	case l.State.Ended():
		m.cfg.Recorder.Enqueue(Record(l))
	}
}

// endCommitted writes the history record of ended lease id and waits for its commit, and tells whether the
// record in ZooKeeper may go: its end is in the history, or there is nothing to keep.
func (m *Manager) endCommitted(id string) bool {
	l, _, err := m.reg.ReadLease(id)
	switch {
	case errors.Is(err, cluster.ErrNoLease):
		return true
	case err != nil:
		m.log.Warn("lease watcher: could not read an ended lease to record it", "execution_id", id, "err", err)
		return false
	case !l.State.Ended():
		return true // not an end: nothing of it to keep here
	}
	ctx, cancel := context.WithTimeout(context.Background(), endCommitWait)
	defer cancel()
	if err := m.cfg.Recorder.EnqueueCommitted(ctx, Record(l)); err != nil {
		m.log.Warn("lease watcher: an ended lease's record is kept until its end is in the history",
			"job", l.JobName, "item", l.ShardingItem, "execution_id", id, "err", err)
		return false
	}
	return true
}
