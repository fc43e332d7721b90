package schedule

import "time"

// MaxShardingWait bounds how long a fire of a job that takes late fires waits for its sharding (ShardingWait):
// the longest a restarted peer's new process may go without a share of such a job after a resharding left it
// out (sharding.RecheckAt), and a job that fires seldom does not hold a fire for hours.
const MaxShardingWait = 5 * time.Minute

// ShardingWait is how long a fire handed off at now waits for its job's sharding at most (dispatch's
// shardingWait; sharding.Holding is the bound a resharding reads from it): wait (the executor's ReshardWait),
// never past the job's next fire (next; zero: none) for a job that refuses late fires (misfire false), and for
// a job that takes them until the next fire's hand-off (lead before it: FireLead) when that is later, within
// MaxShardingWait. ElasticJob's instances wait for the leader's sharding without a bound: on a host saturated
// by a restart at 100,000 jobs some reshardings took more than 30 s, and the fires that waited for them were
// skipped (docs/benchmarks.md, restart run 10: 154 missed); a fire that waits until its next one is handed off
// runs late instead, once, and its next fire waits for the same sharding. The result may be below zero (the
// next fire already due): the caller floors it.
func ShardingWait(wait, lead time.Duration, now, next time.Time, misfire bool) time.Duration {
	switch {
	case next.IsZero():
		return wait
	case !misfire:
		return min(wait, next.Sub(now))
	}
	return max(wait, min(next.Sub(now)-lead, MaxShardingWait))
}
