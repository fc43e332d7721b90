package service

import (
	"context"
	"slices"

	"github.com/ejserver/ejserver"
)

// What the API needs to keep a scoped token to its jobs: a job's label, and the jobs of some labels.

// JobLabel returns a job's label from this peer's registry cache, or from ZooKeeper for a job the cache
// does not hold yet (one created a moment ago); ENOTFOUND if there is no such job.
func (s *Service) JobLabel(ctx context.Context, name string) (string, error) {
	if ejserver.ValidateJobName(name) != nil {
		return "", ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
	}
	if snap := s.reg.Job(name); snap != nil {
		return snap.Config.Label, nil
	}
	cfg, err := s.JobConfig(ctx, name)
	return cfg.Label, err
}

// JobsLabeled returns the names of the jobs whose label is one of labels, from the registry cache.
func (s *Service) JobsLabeled(labels []string) []string {
	var out []string
	if len(labels) == 0 {
		return out
	}
	for _, name := range s.reg.Jobs() {
		if snap := s.reg.Job(name); snap != nil && slices.Contains(labels, snap.Config.Label) {
			out = append(out, name)
		}
	}
	return out
}
