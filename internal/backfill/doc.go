// Package backfill runs a job's past fires again: every fire its schedule had in a range, each item POSTed
// with source BACKFILL and the original scheduledAt (issue 24).
//
// The decisions are pure functions of values (plan.go: the fires of a range and their cap; pace.go: when the
// next request may leave, yielding to the peer's scheduled sends a bounded time per fire; state.go: a backfill's progress and the moves between its states; id.go: the
// webhook-id of one item of one fire). The Runner (runner.go) drives them: a backfill's state lives in one
// ZooKeeper node that every progress write replaces at the version its owner last wrote, so a peer that lost
// the backfill (its session ended, another peer claimed it) can write nothing more; the peer that claims it
// next continues after the last fire recorded done, and re-sends a fire that was in flight with the same
// webhook-ids, so a receiver that dedupes on webhook-id sees each fire once. A fire is recorded done once its
// items' history records have committed, by the run's settler (pipeline.go), while the run sends the next
// fires (at most Pacing.MaxPending not yet recorded done): a new owner re-sends those too, under the same ids. Ended backfills' nodes are
// pruned after a retention, and a deleted job's at once (prune.go: which ones, a pure decision; every peer's
// runner deletes them at the version it read, so peers pruning at once never undo each other).
//
//	          create                     last fire done
//	(none) ----------> RUNNING ------------------------------> DONE
//	                     |   \  cancel (API)
//	                     |    `-------------------> CANCELLED
//	                     |  the job is gone
//	                     `--------------------------> FAILED
package backfill
