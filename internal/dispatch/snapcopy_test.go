package dispatch

import "github.com/ejserver/ejserver/internal/cluster"

// copySnap copies a snapshot with a config of its own: a snapshot's config is shared and never written,
// so a test that edits a copy's config must not edit the one the earlier snapshot holds.
func copySnap(s *cluster.JobSnapshot) cluster.JobSnapshot {
	c := *s
	cfg := *s.Config
	c.Config = &cfg
	return c
}
