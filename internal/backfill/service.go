package backfill

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
)

// Registry is what the backfill API's service needs from ZooKeeper (cluster.Registry satisfies it).
type Registry interface {
	GetJob(job string) (ejserver.JobConfig, int32, error)
	CreateBackfill(job, id string, data []byte) error
	ReadBackfill(job, id string) (cluster.BackfillNode, error)
	JobBackfillNodes(job string) ([]cluster.BackfillNode, error)
	WriteBackfill(job, id string, data []byte, version int32) (int32, error)
}

// Service starts, lists and cancels backfills; the Runners of the peers run them.
type Service struct {
	reg   Registry
	clk   clock.Clock
	log   *slog.Logger
	allow func(job string) func(time.Time) bool
	newID func() string
}

// NewService returns a Service. allow (nil: none) narrows a job's cron fires, as RunnerConfig.Allow.
func NewService(reg Registry, allow func(job string) func(time.Time) bool, clk clock.Clock, log *slog.Logger) *Service {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{reg: reg, clk: clk, log: log, allow: allow, newID: ejserver.NewExecutionID}
}

// Start validates req against the job's schedule and records a running backfill for the runners.
func (s *Service) Start(job string, req Request, by string) (Backfill, error) {
	cfg, _, err := s.reg.GetJob(job) // read now: a job created a moment ago on another peer may not be in this one's cache
	if err != nil {
		return Backfill{}, err
	}
	now := s.clk.Now()
	p, err := Parse(req, now)
	if err != nil {
		return Backfill{}, err
	}
	sched, err := ScheduleOf(cfg)
	if err != nil {
		return Backfill{}, err
	}
	var allow func(time.Time) bool
	if s.allow != nil {
		allow = s.allow(job)
	}
	total, err := Range{Schedule: sched, From: p.From, To: p.To, Allow: allow}.Count(MaxFires)
	if err != nil {
		return Backfill{}, err
	}
	b := New(s.newID(), job, p, total, by, now)
	data, err := json.Marshal(b)
	if err != nil {
		return Backfill{}, err
	}
	if err := s.reg.CreateBackfill(job, b.ID, data); err != nil {
		return Backfill{}, ejserver.Unavailable(err, "could not record the backfill")
	}
	s.log.Info("backfill started", "job", job, "backfill", b.ID, "range", p.String(), "fires", total)
	return b, nil
}

// List returns the job's backfills, newest first.
func (s *Service) List(job string) ([]Backfill, error) {
	if _, _, err := s.reg.GetJob(job); err != nil {
		return nil, err
	}
	nodes, err := s.reg.JobBackfillNodes(job)
	if err != nil {
		return nil, ejserver.Unavailable(err, "could not read the backfills")
	}
	out := make([]Backfill, 0, len(nodes))
	for _, n := range nodes {
		var b Backfill
		if json.Unmarshal(n.Data, &b) == nil {
			out = append(out, b)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// Get returns one backfill.
func (s *Service) Get(job, id string) (Backfill, error) {
	b, _, err := s.read(job, id)
	return b, err
}

func (s *Service) read(job, id string) (Backfill, int32, error) {
	n, err := s.reg.ReadBackfill(job, id)
	if errors.Is(err, cluster.ErrNoBackfill) {
		return Backfill{}, -1, ejserver.Errorf(ejserver.ENOTFOUND, "job %q has no backfill %q", job, id)
	}
	if err != nil {
		return Backfill{}, -1, ejserver.Unavailable(err, "could not read the backfill")
	}
	var b Backfill
	if err := json.Unmarshal(n.Data, &b); err != nil {
		return Backfill{}, -1, fmt.Errorf("backfill %s of job %q is not readable: %w", id, job, err)
	}
	return b, n.Version, nil
}

// Cancel ends a running backfill: its owner sees the node change, aborts the fire in flight and stops.
func (s *Service) Cancel(job, id, by string) (Backfill, error) {
	for range 10 {
		b, version, err := s.read(job, id)
		if err != nil {
			return Backfill{}, err
		}
		if b, err = b.Cancel(by, s.clk.Now()); err != nil {
			return Backfill{}, err
		}
		data, err := json.Marshal(b)
		if err != nil {
			return Backfill{}, err
		}
		_, err = s.reg.WriteBackfill(job, id, data, version)
		if errors.Is(err, cluster.ErrBackfillChanged) {
			continue // its owner recorded a fire meanwhile
		}
		if err != nil {
			return Backfill{}, ejserver.Unavailable(err, "could not cancel the backfill")
		}
		s.log.Info("backfill cancelled", "job", job, "backfill", id, "done", b.Done, "total", b.Total)
		return b, nil
	}
	return Backfill{}, ejserver.Errorf(ejserver.ECONFLICT, "backfill %s kept changing: try again", id)
}
