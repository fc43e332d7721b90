package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
)

// shardingWait is how long a fire handed off at now waits for its job's sharding (a resharding in progress, or a
// job not sharded yet): schedule.ShardingWait, at least minShardingWait. limit is ExecutorConfig.ReshardWait,
// lead its FireLead, next the job's next fire (zero: none). A job that takes late fires (misfire: true,
// ElasticJob's default) waits at least limit, and until its next fire's hand-off when that is later: a fire
// near a resharding then runs late, once the sharding is committed, instead of being skipped. A job that does
// not (misfire: false) never waits past its next fire: a late fire is what it refuses, so the fire is skipped.
func shardingWait(limit, lead time.Duration, now, next time.Time, misfire bool) time.Duration {
	return max(schedule.ShardingWait(limit, lead, now, next, misfire), minShardingWait)
}

// minShardingWait is the least a fire waits for its sharding: the watch events of a committed resharding
// usually arrive within it.
const minShardingWait = 100 * time.Millisecond

// shardingReady reports whether a snapshot's sharding is committed: no resharding flagged, every item has an
// owner, and the nodes that decide the items are read (fireReady adds that no owner is gone or stopping).
func shardingReady(s *cluster.JobSnapshot) bool { return !s.Necessary && s.Sharded() && s.ItemsSettled }

// ensureSharded calls then with a snapshot that can be fired with (fireReady): the leader reshards if necessary
// (a flagged resharding, an item without an owner, an item whose owner is gone), the others wait for it
// (shardingWait: up to the job's next fire's hand-off when it takes late fires). A peer that becomes the job's
// leader while it waits (the leader was the peer that left) reshards then. The leader reshards at most once
// per fire. waited reports whether the snapshot given was not ready (the fire then runs late: notRunYet).
// then runs on this goroutine when the snapshot is ready; a fire that waits is a shardingWaiter and a record
// on the job's registry entry (Registry.WaitFunc), not a goroutine, and then runs on the goroutine that ends
// the wait: through a restart at 100,000 jobs a survivor holds tens of thousands of such fires.
//
// A scheduled fire is held meanwhile (Resharder.Hold): a resharding by this peer gives the items only to the
// instances that hold this fire too, not to one registered since (a restarted peer's new process), which
// would not run them.
func (e *Executor) ensureSharded(req fireRequest, snap *cluster.JobSnapshot, then func(_ *cluster.JobSnapshot, waited bool, _ error)) {
	peers := Peers(e.reg)
	if fireReady(snap, peers) {
		then(snap, false, nil)
		return
	}
	w := &shardingWaiter{e: e, req: req, peers: peers, then: then, start: e.clk.Now(), release: func() {}}
	if req.source == ejserver.SourceNormal && e.cfg.Resharder != nil {
		w.release = e.cfg.Resharder.Hold(req.job, req.scheduledAt)
	}
	w.wait = shardingWait(e.cfg.ReshardWait, e.cfg.FireLead, w.start, e.nextFire(req.job), snap.Config.Misfire)
	w.ctx, w.cancel = context.WithTimeout(e.soft, w.wait)
	e.wg.Add(1) // the waiting fire is the executor's work, as its goroutine was (Drain waits for it)
	w.step(snap)
}

// shardingWaiter is a fire waiting for its job's sharding (ensureSharded).
type shardingWaiter struct {
	e         *Executor
	req       fireRequest
	peers     Peers
	then      func(*cluster.JobSnapshot, bool, error)
	start     time.Time
	wait      time.Duration
	ctx       context.Context
	cancel    context.CancelFunc
	release   func() // the fire's Hold
	resharded bool
}

// leaderMust reports whether this peer reshards the job before the fire: it leads it, the sharding needs it,
// and it has not resharded for this fire yet.
func (w *shardingWaiter) leaderMust(s *cluster.JobSnapshot) bool {
	return !w.resharded && w.e.cfg.Resharder != nil && s.IsLeader() && needsResharding(s, w.peers)
}

// step reshards as the leader if it must, then waits for a snapshot that is ready or that the leader must
// reshard for (woken).
func (w *shardingWaiter) step(snap *cluster.JobSnapshot) {
	e, job := w.e, w.req.job
	for w.leaderMust(snap) {
		w.resharded = true
		if items, states := ownersAway(snap, w.peers); !snap.Necessary {
			if k := slices.Index(states, ownerGone); k >= 0 {
				e.log.Info("resharding at the fire: an item's owner is gone", "job", job, "item", items[k], "instance", snap.Items[items[k]].Owner)
			}
		}
		err := e.cfg.Resharder.Reshard(w.ctx, job)
		switch {
		case errors.Is(err, cluster.ErrNotLeader) && !e.reg.Lease():
			// the leadership is in doubt, not lost: the session's lease lapsed (a ZooKeeper stalled by a
			// burst holds the heartbeat). This fire's peers wait for this resharding: wait for the session and
			// reshard then, as a fire waits for its session at its hand-off. Skipped at once, the fires of a
			// stopped peer's jobs whose new leader this was were skipped here and waited for in vain by their
			// peers for 30 s (docs/benchmarks.md, run 32: ~1,300 missed fires).
			if ok, why := e.awaitSession(&w.req, -1, stageReshard, w.req.scheduledAt); !ok {
				w.finish(nil, fmt.Errorf("resharding as leader: ZooKeeper session in doubt: %s", why))
				return
			}
			w.resharded = false
			if snap = e.reg.Job(job); snap == nil {
				w.finish(nil, fmt.Errorf("job %q is gone", job))
				return
			}
			continue
		case errors.Is(err, cluster.ErrNotLeader):
			// deposed meanwhile: the new leader reshards, and this fire waits for it as any peer's does
		case err != nil:
			w.finish(nil, fmt.Errorf("resharding as leader: %w", err))
			return
		}
		break
	}
	e.reg.WaitFunc(w.ctx, job, func(s *cluster.JobSnapshot) bool { return fireReady(s, w.peers) || w.leaderMust(s) }, w.woken)
}

// woken is the end of a wait: the fire runs (ready), the leader reshards (step), or the fire is given up.
func (w *shardingWaiter) woken(got *cluster.JobSnapshot, err error) {
	e := w.e
	if err != nil {
		leader := "none"
		if got != nil && got.Leader != "" {
			leader = got.Leader
		}
		why := unready(got, w.peers)
		if got != nil && !got.ItemsSettled {
			if reads := e.reg.PendingReads(w.req.job, len(got.Items)); reads != "" {
				why += ": " + reads
			}
		}
		w.finish(nil, fmt.Errorf("waited %s of %s for the leader (%s) to reshard (%s): %w",
			e.clk.Now().Sub(w.start).Round(time.Millisecond), w.wait.Round(time.Millisecond), leader, why, err))
		return
	}
	if fireReady(got, w.peers) {
		w.finish(got, nil)
		return
	}
	w.step(got)
}

// finish ends the wait (its timer, the fire's Hold) and runs the rest of the fire.
func (w *shardingWaiter) finish(snap *cluster.JobSnapshot, err error) {
	defer w.e.wg.Done()
	w.cancel()
	w.release()
	w.then(snap, true, err)
}

// unready says which of fireReady's conditions a snapshot fails, for the skip's log line.
func unready(s *cluster.JobSnapshot, peers Peers) string {
	if s == nil {
		return "job not loaded"
	}
	var why []string
	if s.Necessary {
		why = append(why, "resharding flagged")
	}
	if !s.Sharded() {
		why = append(why, "not every item has an owner")
	}
	if !s.ItemsSettled {
		why = append(why, "the job's sharding nodes still being read")
	}
	if items, states := ownersAway(s, peers); len(items) > 0 {
		how := "gone"
		if states[0] == ownerLeaving {
			how = "stopping"
		}
		why = append(why, fmt.Sprintf("the owner of item %d (%s) is %s", items[0], s.Items[items[0]].Owner, how))
	}
	return strings.Join(why, ", ")
}
