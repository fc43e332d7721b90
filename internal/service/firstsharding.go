package service

import (
	"github.com/ejserver/ejserver"
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
