// Package sharding decides which instance owns which item of a job, and runs ElasticJob's resharding protocol.
//
// The strategies (Average, Odevity, RoundRobin) are pure functions of an ordered instance list (see Sort),
// the job name and the item count, matching ElasticJob's own test vectors.
//
// Resharding is led by the job's leader and committed by one registry transaction:
//
//	instance joins/leaves, server enabled/disabled,      ┌──────────────┐
//	shardingTotalCount changed, leader changed  ───────▶ │  necessary   │ (persistent flag)
//	                                                     └──────┬───────┘
//	                                 next fire, leader:         │ wait until no item runs
//	                                                     ┌──────▼───────┐
//	                                                     │  processing  │ (ephemeral: dies with the leader)
//	                                                     └──────┬───────┘
//	        multi: set every sharding/{i}/instance,             │ delete items >= total,
//	        check leader node, delete necessary + processing    ▼
//	                                                     assignments visible: peers reload and fire
//
// Peers never fire a job while necessary exists; a leader that dies mid-way leaves necessary set and no
// processing node, so the next leader simply does it again.
package sharding
