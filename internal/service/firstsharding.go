package service

import (
	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/sharding"
)

// firstOwners is a new job's first sharding over the live peers (sharding.FirstOwners), or nil (its first
// leader shards it) when the peers have not been listed yet.
func (s *Service) firstOwners(cfg ejserver.JobConfig) []string {
	peers, ok := s.reg.LivePeers()
	if !ok {
		return nil
	}
	in := make([]sharding.Instance, 0, len(peers))
	for _, p := range peers {
		in = append(in, sharding.Instance{ID: p.InstanceID, ServerIP: p.ServerIP})
	}
	return sharding.FirstOwners(in, cfg)
}

// ownersListed reports whether a trigger may go to the instances snap lists: it lists one, and every owner
// of an item that is a live peer is among them. A job sharded at its creation names its owners before
// their instance nodes exist; a trigger written while a peer's node is still on its way would not reach
// that peer, and the items sharded to it would not run.
func ownersListed(snap *cluster.JobSnapshot, live func(instance string) bool) bool {
	if len(snap.Instances) == 0 {
		return false
	}
	for _, it := range snap.Items {
		if it.Owner != "" && !snap.Online(it.Owner) && live(it.Owner) {
			return false
		}
	}
	return true
}
