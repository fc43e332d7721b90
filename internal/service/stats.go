package service

import (
	"context"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/loadahead"
)

// The console's charts: the history's aggregates and the schedule's load ahead.

// place sets q's window: window long, ending at q.To or, when that is zero, at the end of the bucket that
// holds now (so buckets fall on whole multiples of their width).
func (s *Service) place(q *history.StatsQuery, window time.Duration) {
	if q.To.IsZero() {
		q.To = s.clk.Now().UTC()
		if q.Bucket > 0 {
			q.To = q.To.Truncate(q.Bucket).Add(q.Bucket)
		}
	}
	q.From = q.To.Add(-window)
}

// JobStats aggregates a job's executions in the window per bucket; the bool says whether the history is
// the whole cluster's.
func (s *Service) JobStats(ctx context.Context, q history.StatsQuery, window time.Duration) (history.JobStats, bool, error) {
	s.place(&q, window)
	h, err := s.history()
	if err != nil {
		return history.JobStats{}, false, err
	}
	if err := ejserver.ValidateJobName(q.Job); err != nil {
		return history.JobStats{}, false, err
	}
	st, err := h.JobStats(ctx, q)
	return st, h.Shared(), err
}

// JobPoints returns a job's executions in the window as chart points.
func (s *Service) JobPoints(ctx context.Context, q history.StatsQuery, window time.Duration) (history.PointList, bool, error) {
	s.place(&q, window)
	h, err := s.history()
	if err != nil {
		return history.PointList{}, false, err
	}
	if err := ejserver.ValidateJobName(q.Job); err != nil {
		return history.PointList{}, false, err
	}
	p, err := h.JobPoints(ctx, q)
	return p, h.Shared(), err
}

// ClusterStats aggregates every job's executions (q.Jobs' when set) per bucket and per peer.
func (s *Service) ClusterStats(ctx context.Context, q history.StatsQuery, window time.Duration) (history.ClusterStats, bool, error) {
	s.place(&q, window)
	h, err := s.history()
	if err != nil {
		return history.ClusterStats{}, false, err
	}
	st, err := h.ClusterStats(ctx, q)
	return st, h.Shared(), err
}

// LoadAhead counts the items that fall on each second of the next horizon from the enabled jobs' schedules
// (those visible accepts, when set).
func (s *Service) LoadAhead(horizon time.Duration, visible func(name, label string) bool) (loadahead.Load, error) {
	if horizon < time.Second || horizon > loadahead.MaxHorizon || horizon%time.Second != 0 {
		return loadahead.Load{}, ejserver.Invalid("horizon", "must be a whole number of seconds from 1s to %s, not %s", loadahead.MaxHorizon, horizon)
	}
	var jobs []loadahead.Job
	for _, name := range s.reg.Jobs() {
		snap := s.reg.Job(name)
		if snap == nil || snap.Config.Disabled || (visible != nil && !visible(name, snap.Config.Label)) {
			continue
		}
		jobs = append(jobs, loadahead.Job{Cron: snap.Config.Cron, TimeZone: snap.Config.TimeZone, Items: snap.Config.ShardingTotalCount})
	}
	return loadahead.Compute(jobs, s.clk.Now(), loadahead.Config{Horizon: horizon}), nil
}
