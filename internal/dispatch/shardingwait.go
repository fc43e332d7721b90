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

// ensureSharded returns a snapshot that can be fired with (fireReady): the leader reshards if necessary (a
// flagged resharding, an item without an owner, an item whose owner is gone), the others wait for it
// (shardingWait: up to the job's next fire's hand-off when it takes late fires). A peer that becomes the job's
// leader while it waits (the leader was the peer that left) reshards then. The leader reshards at most once
// per fire. waited reports whether the snapshot given was not ready (the fire then runs late: notRunYet).
//
// A scheduled fire is held meanwhile (Resharder.Hold): a resharding by this peer gives the items only to the
// instances that hold this fire too, not to one registered since (a restarted peer's new process), which
// would not run them.
func (e *Executor) ensureSharded(req fireRequest, snap *cluster.JobSnapshot) (_ *cluster.JobSnapshot, waited bool, _ error) {
	job := req.job
	peers := Peers(e.reg)
	if fireReady(snap, peers) {
		return snap, false, nil
	}
	if req.source == ejserver.SourceNormal && e.cfg.Resharder != nil {
		defer e.cfg.Resharder.Hold(job, req.scheduledAt)()
	}
	start := e.clk.Now()
	wait := shardingWait(e.cfg.ReshardWait, e.cfg.FireLead, start, e.nextAfter(&req), snap.Config.Misfire)
	ctx, cancel := context.WithTimeout(e.soft, wait)
	defer cancel()
	resharded := false
	leaderMust := func(s *cluster.JobSnapshot) bool {
		return !resharded && e.cfg.Resharder != nil && s.IsLeader() && needsResharding(s, peers)
	}
	for {
		if leaderMust(snap) {
			resharded = true
			if items, states := ownersAway(snap, peers); !snap.Necessary {
				if k := slices.Index(states, ownerGone); k >= 0 {
					e.log.Info("resharding at the fire: an item's owner is gone", "job", job, "item", items[k], "instance", snap.Items[items[k]].Owner)
				}
			}
			err := e.cfg.Resharder.Reshard(ctx, job)
			switch {
			case errors.Is(err, cluster.ErrNotLeader) && !e.reg.Lease():
				// the leadership is in doubt, not lost: the session's lease lapsed (a ZooKeeper stalled by a
				// burst holds the heartbeat). This fire's peers wait for this resharding: wait for the session and
				// reshard then, as a fire waits for its session at its hand-off. Skipped at once, the fires of a
				// stopped peer's jobs whose new leader this was were skipped here and waited for in vain by their
				// peers for 30 s (docs/benchmarks.md, run 32: ~1,300 missed fires).
				if ok, why := e.awaitSession(&req, -1, stageReshard, req.scheduledAt); !ok {
					return nil, true, fmt.Errorf("resharding as leader: ZooKeeper session in doubt: %s", why)
				}
				resharded = false
				if snap = e.reg.Job(job); snap == nil {
					return nil, true, fmt.Errorf("job %q is gone", job)
				}
				continue
			case errors.Is(err, cluster.ErrNotLeader):
				// deposed meanwhile: the new leader reshards, and this fire waits for it as any peer's does
			case err != nil:
				return nil, true, fmt.Errorf("resharding as leader: %w", err)
			}
		}
		got, err := e.reg.Wait(ctx, job, func(s *cluster.JobSnapshot) bool { return fireReady(s, peers) || leaderMust(s) })
		if err != nil {
			leader := "none"
			if got != nil && got.Leader != "" {
				leader = got.Leader
			}
			why := unready(got, peers)
			if got != nil && !got.ItemsSettled {
				if reads := e.reg.PendingReads(job, len(got.Items)); reads != "" {
					why += ": " + reads
				}
			}
			return nil, true, fmt.Errorf("waited %s of %s for the leader (%s) to reshard (%s): %w",
				e.clk.Now().Sub(start).Round(time.Millisecond), wait.Round(time.Millisecond), leader, why, err)
		}
		if fireReady(got, peers) {
			return got, true, nil
		}
		snap = got
	}
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
