package sharding

import (
	"slices"

	"github.com/ejserver/ejserver"
)

// MaxFirstItems bounds the items of a job sharded at its creation (FirstOwners): a job with more is created
// with leader/sharding/necessary and sharded by its first leader, because its first sharding would make the
// creating transaction too large for one ZooKeeper request (two nodes per item).
const MaxFirstItems = 1000

// Owners turns an assignment into each item's owner, "" for an item no instance got (there was none).
func Owners(a Assignment, total int) []string {
	owners := make([]string, total)
	for id, items := range a {
		for _, i := range items {
			if i >= 0 && i < total {
				owners[i] = id
			}
		}
	}
	return owners
}

// assign is strategy's owners for the instances, in Sort's order (the instances are not modified).
func assign(strategy Strategy, instances []Instance, job string, total int) []string {
	list := slices.Clone(instances)
	Sort(list)
	return Owners(strategy(list, job, total), total)
}

// FirstOwners is a new job's first sharding: its strategy over the live peers, which are the instances the job
// will have once each peer has loaded it (every peer registers on every job, and a new job has no disabled
// server). It is what the job's first leader would compute, written with the job so that the job fires from
// its first scheduled time instead of waiting for an election and a resharding round. nil when there is no
// peer, the strategy is unknown or the job has more than MaxFirstItems items: the job is then created to be
// sharded by its first leader.
func FirstOwners(peers []Instance, cfg ejserver.JobConfig) []string {
	total := cfg.ShardingTotalCount
	strategy, err := StrategyFor(cfg.JobShardingStrategyType)
	if len(peers) == 0 || err != nil || total < 1 || total > MaxFirstItems {
		return nil
	}
	return assign(strategy, peers, cfg.JobName, total)
}

// Verdict is what a job's leader decides from a look at the job's committed sharding.
type Verdict int

// The verdicts of Assess.
const (
	// Keep: every item's owner is what the strategy gives the job's available instances. Resharding would
	// write the same owners.
	Keep Verdict = iota + 1
	// Coming: the owners are what the strategy gives once the live peers that have not registered on the job
	// yet (still loading it) have: nothing to do now; their registration makes the leader look again.
	Coming
	// Rebalance: every item's owner is an available instance, but not the one the strategy gives (an
	// instance joined, or one that owned nothing left): the sharding can be fired as it is, and the leader
	// reshards when it has no urgent resharding to do (the coordinator's rebalance queue), not at once.
	Rebalance
	// Reshard: an item has no owner, or one that is not available (gone, or on a disabled server): flag
	// resharding now, the job's fires wait for it.
	Reshard
)

func (v Verdict) String() string {
	switch v {
	case Keep:
		return "keep"
	case Coming:
		return "coming"
	case Rebalance:
		return "rebalance"
	case Reshard:
		return "reshard"
	}
	return "?"
}

// Assessment is what Assess looks at.
type Assessment struct {
	Job string
	// Owners holds the committed owner of each item below shardingTotalCount ("" when the item or its
	// instance node is missing); its length is shardingTotalCount.
	Owners   []string
	Strategy Strategy
	// Available are the job's instances on servers that are not disabled.
	Available []Instance
	// Coming are the live peers not registered on the job, on servers not disabled for it.
	Coming []Instance
}

// Assess decides whether a job's committed sharding must be redone. It replaces flagging resharding on every
// leader change and every instance that joins: a job sharded at its creation over the live peers (FirstOwners)
// keeps its sharding while those peers register, and a new leader that finds the sharding right leaves it.
func Assess(a Assessment) Verdict {
	total := len(a.Owners)
	if total == 0 || a.Strategy == nil {
		return Reshard
	}
	if slices.Contains(a.Owners, "") {
		return Reshard
	}
	if len(a.Available) > 0 && slices.Equal(assign(a.Strategy, a.Available, a.Job, total), a.Owners) {
		return Keep
	}
	all := slices.Clone(a.Available)
	for _, in := range a.Coming {
		if !slices.ContainsFunc(all, func(x Instance) bool { return x.ID == in.ID }) {
			all = append(all, in)
		}
	}
	if len(all) > len(a.Available) && slices.Equal(assign(a.Strategy, all, a.Job, total), a.Owners) {
		return Coming
	}
	for _, owner := range a.Owners {
		if !slices.ContainsFunc(a.Available, func(in Instance) bool { return in.ID == owner }) {
			return Reshard
		}
	}
	return Rebalance
}
