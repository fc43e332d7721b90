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
// processing node, so the next leader simply does it again. A fire's leader first commits directly (no
// processing node; the multi's fence refuses if an item runs) and takes the path above only when one does.
//
// A job created through the API is born sharded (FirstOwners): the creating transaction writes
// sharding/{i}/instance with the job's strategy over the live peers, and no necessary flag, so it fires from
// its first scheduled time on every peer that has loaded it. A leader change, an instance joining, a server
// node changing or a peer leaving no longer flag resharding by themselves: the leader flags it only when the
// owners are not what the strategy gives the job's available instances (Assess: keep / coming / reshard;
// "coming" is a sharding that will be right once the live peers still loading the job register). An
// instance leaving, a changed item count or strategy, and reconcile flag it as before.
package sharding
