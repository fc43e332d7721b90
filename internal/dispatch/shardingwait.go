package dispatch

import (
	"strings"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// shardingWait is how long a fire waits for its job's sharding (a resharding in progress, or a job not sharded
// yet): up to limit (ExecutorConfig.ReshardWait). A job that takes late fires (misfire: true, ElasticJob's
// default) waits that long even past its next fire: a fire near a resharding then runs late, once the sharding
// is committed, instead of being skipped, and a next fire that finds its items still running becomes the job's
// one misfire catch-up. A job that does not (misfire: false) never waits past its next fire: a late fire is
// what it refuses, so the fire is skipped. next is zero when the job has no next fire.
func shardingWait(limit time.Duration, now, next time.Time, misfire bool) time.Duration {
	wait := limit
	if !misfire && !next.IsZero() {
		wait = min(wait, next.Sub(now))
	}
	return max(wait, minShardingWait)
}

// minShardingWait is the least a fire waits for its sharding: the watch events of a committed resharding
// usually arrive within it.
const minShardingWait = 100 * time.Millisecond

// unready says which of shardingReady's conditions a snapshot fails, for the skip's log line.
func unready(s *cluster.JobSnapshot) string {
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
	return strings.Join(why, ", ")
}
