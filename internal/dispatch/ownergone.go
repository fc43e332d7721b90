package dispatch

import (
	"slices"

	"github.com/ejserver/ejserver/internal/cluster"
)

// Peers is what the owner checks need to know of the namespace's live peers (/{namespace}.ejserver/peers);
// the Registry provides it.
type Peers interface {
	// PeerGone: the live peers were listed and id is not among them.
	PeerGone(id string) bool
	// PeerLeft: id's peer node was seen and then went (a stopping peer removes it first: cluster.Leave).
	PeerLeft(id string) bool
}

// ownerState is what a fire makes of an item's owner.
type ownerState int

const (
	ownerFine    ownerState = iota
	ownerLeaving            // its instance node is there, its peer node went: it is stopping
	ownerGone               // neither its instance node nor its peer node is there
)

// itemOwner classifies item i's owner for a fire. Only an item a fire would run is looked at: it exists, has
// an owner, is not disabled and not taken over (sharding/{i}/failover names who runs it).
//
// An owner is gone when it is neither among the job's instances nor a live peer: the state between a peer's
// stop (its session closed) and the leader's resharding, which with thousands of jobs can be many seconds,
// when every peer reads the item as another's and no peer fires it. A live peer that has not registered on
// the job yet is not gone: a new job's first sharding names the live peers before they register
// (sharding.FirstOwners; Assess's Coming), and the leader must not reshard for them.
//
// An owner is leaving when it is still among the job's instances but removed its peer node (cluster.Leave):
// it stopped scheduling, and its session is about to close. This peer is never leaving for itself.
func itemOwner(s *cluster.JobSnapshot, i int, peers Peers) ownerState {
	it := s.Items[i]
	switch {
	case !considered(it):
		return ownerFine
	case !s.Online(it.Owner):
		if peers.PeerGone(it.Owner) {
			return ownerGone
		}
	case it.Owner != s.Me && peers.PeerLeft(it.Owner):
		return ownerLeaving
	}
	return ownerFine
}

// eachOwner calls visit with the state of every item a fire would look at, until visit returns false. Items
// share a few owners: each owner's state is asked of the peers once per scan, not once per item (a fire of
// 2,000 items would take 2,000 locks of the peers' cache otherwise).
//
// The first few owners are kept in an array on the stack, the rest in a map: a job's items are on at most as
// many owners as there are peers, and a map made at every fire of every job was ~700 bytes a fire.
func eachOwner(s *cluster.JobSnapshot, peers Peers, visit func(i int, st ownerState) bool) {
	type seenOwner struct {
		owner string
		st    ownerState
	}
	var few [8]seenOwner
	nfew := 0
	var seen map[string]ownerState
	for i := range min(len(s.Items), s.Config.ShardingTotalCount) {
		st := ownerFine
		if it := s.Items[i]; considered(it) {
			found := false
			for _, o := range few[:nfew] {
				if o.owner == it.Owner {
					st, found = o.st, true
					break
				}
			}
			if !found && seen != nil {
				st, found = seen[it.Owner]
			}
			if !found {
				st = itemOwner(s, i, peers)
				switch {
				case nfew < len(few):
					few[nfew] = seenOwner{it.Owner, st}
					nfew++
				case seen == nil:
					seen = map[string]ownerState{it.Owner: st}
				default:
					seen[it.Owner] = st
				}
			}
		}
		if !visit(i, st) {
			return
		}
	}
}

// considered reports whether an item's owner decides a fire: the item exists, has an owner, is not disabled
// and not taken over (sharding/{i}/failover names who runs it).
func considered(it cluster.ItemState) bool {
	return it.Exists && it.Owner != "" && !it.Disabled && it.FailoverTo == ""
}

// ownersAway lists the items whose owner is gone or leaving, with the owners' states.
func ownersAway(s *cluster.JobSnapshot, peers Peers) (items []int, states []ownerState) {
	eachOwner(s, peers, func(i int, st ownerState) bool {
		if st != ownerFine {
			items, states = append(items, i), append(states, st)
		}
		return true
	})
	return items, states
}

// anyOwner reports whether an item's owner is in one of the states, without listing the items.
func anyOwner(s *cluster.JobSnapshot, peers Peers, want ...ownerState) bool {
	found := false
	eachOwner(s, peers, func(_ int, st ownerState) bool {
		found = slices.Contains(want, st)
		return !found
	})
	return found
}

// fireReady reports whether a snapshot can be fired with: a committed sharding (shardingReady) in which no
// item's owner is gone or leaving. A fire that waits runs late, once: notRunYet drops the items their owner
// ran for that time before it left.
func fireReady(s *cluster.JobSnapshot, peers Peers) bool {
	return shardingReady(s) && !anyOwner(s, peers, ownerGone, ownerLeaving)
}

// needsResharding reports whether the job's leader must reshard before a fire: resharding is flagged, an
// item has no owner, or an item's owner is gone. Not for a leaving owner: its instance node is still there,
// and a resharding would give it items again; its session's end makes its owner gone.
func needsResharding(s *cluster.JobSnapshot, peers Peers) bool {
	return s.Necessary || !s.Sharded() || anyOwner(s, peers, ownerGone)
}
