package dispatch

import "github.com/ejserver/ejserver/internal/cluster"

// goneOwnerItems lists the items of a job that a fire would leave to nobody: an item below shardingTotalCount
// that exists, is not disabled, is not taken over (sharding/{i}/failover names who runs it) and whose owner
// is neither among the job's instances nor a live peer. That is the state between a peer's stop (its session
// closed: its instance and peer nodes are gone) and the job leader's resharding, which with thousands of jobs
// can be many seconds: every peer reads the item as another's, so without this check no peer fires it.
//
// peerGone says whether an instance id is known to have no live peer (/{namespace}.ejserver/peers). A live
// peer that has not registered on the job yet is not gone: a new job's first sharding names the live peers
// before they register (sharding.FirstOwners and Assess's Coming), and the leader must not reshard for them.
// An item without an owner is not listed: Sharded already tells that.
func goneOwnerItems(s *cluster.JobSnapshot, peerGone func(id string) bool) []int {
	var out []int
	for i := range min(len(s.Items), s.Config.ShardingTotalCount) {
		if itemOwnerGone(s, i, peerGone) {
			out = append(out, i)
		}
	}
	return out
}

// ownerGone reports whether goneOwnerItems would list any item, without listing them.
func ownerGone(s *cluster.JobSnapshot, peerGone func(id string) bool) bool {
	for i := range min(len(s.Items), s.Config.ShardingTotalCount) {
		if itemOwnerGone(s, i, peerGone) {
			return true
		}
	}
	return false
}

func itemOwnerGone(s *cluster.JobSnapshot, i int, peerGone func(id string) bool) bool {
	it := s.Items[i]
	if !it.Exists || it.Owner == "" || it.Disabled || it.FailoverTo != "" {
		return false
	}
	return !s.Online(it.Owner) && peerGone(it.Owner)
}

// fireReady reports whether a snapshot can be fired with: a committed sharding (shardingReady) in which no
// item's owner is gone.
func fireReady(s *cluster.JobSnapshot, peerGone func(id string) bool) bool {
	return shardingReady(s) && !ownerGone(s, peerGone)
}

// needsResharding reports whether the job's leader must reshard before a fire: resharding is flagged, an
// item has no owner, or an item's owner is gone.
func needsResharding(s *cluster.JobSnapshot, peerGone func(id string) bool) bool {
	return s.Necessary || !s.Sharded() || ownerGone(s, peerGone)
}
