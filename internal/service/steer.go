package service

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/cronexpr"
)

// Calendars is what the service needs of the cluster's calendars (calendarstore.Store satisfies it).
type Calendars interface {
	// Compile reads the named calendars now; an unknown one is an EINVALID error naming field and calendar.
	Compile(ctx context.Context, field string, names []string) ([]*calendar.Compiled, error)
	// Rules gives a job's rules from the watched cache (an error names an unknown calendar).
	Rules(cfg *ejserver.JobConfig) (calendar.Rules, error)
}

// FireCounterReader reads a job's remainingFires counter (cluster.Registry satisfies it); version -1: none.
type FireCounterReader interface {
	ReadFireCounter(job string) ([]byte, int32, error)
}

// MaxPauseNote bounds a pause's note.
const MaxPauseNote = ejserver.MaxPauseNoteLen

// checkCalendars refuses a job that names a calendar the cluster does not have, naming it.
func (s *Service) checkCalendars(cfg *ejserver.JobConfig) error {
	if s.cfg.Calendars == nil {
		return nil
	}
	ctx := context.Background()
	if _, err := s.cfg.Calendars.Compile(ctx, "excludeCalendars", cfg.ExcludeCalendars); err != nil {
		return err
	}
	_, err := s.cfg.Calendars.Compile(ctx, "includeCalendars", cfg.IncludeCalendars)
	return err
}

// JobsUsingCalendar lists the jobs (this peer's cache) whose config names a calendar.
func (s *Service) JobsUsingCalendar(name string) []string {
	var out []string
	for _, job := range s.reg.Jobs() {
		snap := s.reg.Job(job)
		if snap == nil {
			continue
		}
		if slices.Contains(snap.Config.ExcludeCalendars, name) || slices.Contains(snap.Config.IncludeCalendars, name) {
			out = append(out, job)
		}
	}
	slices.Sort(out)
	return out
}

// PauseJob pauses a job's schedule with a note: scheduled fires are skipped (reason "job paused") until
// ResumeJob; manual triggers still run, and the job stays enabled (unlike disable, which stops everything
// and takes its items off the sharding view). Pausing a paused job replaces the note.
func (s *Service) PauseJob(ctx context.Context, name, by, note string) (JobView, error) {
	if len(note) > MaxPauseNote {
		return JobView{}, ejserver.Invalid("note", "is longer than %d bytes", MaxPauseNote)
	}
	p := &ejserver.Pause{By: by, Note: note, At: s.clk.Now().UTC().Truncate(time.Second)}
	return s.setPause(name, p)
}

// ResumeJob ends a pause: the next scheduled fire runs (fires skipped while paused are not made up).
func (s *Service) ResumeJob(ctx context.Context, name string) (JobView, error) {
	return s.setPause(name, nil)
}

func (s *Service) setPause(name string, p *ejserver.Pause) (JobView, error) {
	if ejserver.ValidateJobName(name) != nil {
		return JobView{}, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
	}
	for attempt := 0; ; attempt++ {
		cfg, version, err := s.reg.GetJob(name)
		if err != nil {
			return JobView{}, err
		}
		cfg.Pause = p
		newVersion, err := s.reg.ReplaceJob(cfg, version)
		if ejserver.ErrorCodeOf(err) == ejserver.EPRECONDITION && attempt < 3 {
			continue
		}
		if err != nil {
			return JobView{}, err
		}
		if p != nil {
			s.log.Info("job paused", "job", name, "actor", p.By, "note", p.Note)
		} else {
			s.log.Info("job resumed", "job", name)
		}
		return s.view(cfg, newVersion, s.reg.Job(name)), nil
	}
}

// NextFires is a job's effective schedule ahead: its cron's fires that its calendars, endAt, remaining
// fires and pause let run.
type NextFires struct {
	JobName string      `json:"jobName"`
	Cron    string      `json:"cron"`
	Next    []time.Time `json:"next"`
	// RemainingFires is how many scheduled fires are left when the job has a limit (absent: no limit).
	RemainingFires *int            `json:"remainingFires,omitempty"`
	Pause          *ejserver.Pause `json:"pause,omitempty"`
	// Ended says why the schedule has no more fires (endAt passed, remainingFires used up), if so.
	Ended string `json:"ended,omitempty"`
}

// JobNextFires lists up to count effective fires of a stored job after from (now when zero).
func (s *Service) JobNextFires(ctx context.Context, name string, from time.Time, count int) (NextFires, error) {
	if count < 1 || count > MaxCronPreview {
		return NextFires{}, ejserver.Invalid("count", "must be between 1 and %d, got %d", MaxCronPreview, count)
	}
	if ejserver.ValidateJobName(name) != nil {
		return NextFires{}, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
	}
	cfg, _, err := s.reg.GetJob(name)
	if err != nil {
		return NextFires{}, err
	}
	if from.IsZero() {
		from = s.clk.Now()
	}
	out := NextFires{JobName: name, Cron: cfg.Cron, Next: []time.Time{}, Pause: cfg.Pause}
	remaining := -1
	if cfg.RemainingFires > 0 {
		remaining = s.remainingFires(name, cfg.RemainingFires)
		out.RemainingFires = &remaining
		if remaining == 0 {
			out.Ended = "its remainingFires are used up"
		}
	}
	if end := cfg.EndTime(); !end.IsZero() && !from.Before(end) {
		out.Ended = "endAt " + cfg.EndAt + " has passed"
	}
	if cfg.Cron == "" || cfg.Disabled {
		return out, nil
	}
	r, err := s.rules(ctx, &cfg)
	if err != nil {
		return NextFires{}, err
	}
	out.Next = s.effective(cfg, r, from, count, remaining)
	return out, nil
}

// rules reads a job's calendars now (read-your-writes: a calendar edited a moment ago shows).
func (s *Service) rules(ctx context.Context, cfg *ejserver.JobConfig) (calendar.Rules, error) {
	r := calendar.Rules{EndAt: cfg.EndTime(), Paused: cfg.Pause != nil}
	if s.cfg.Calendars == nil {
		return r, nil
	}
	var err error
	if r.Exclude, err = s.cfg.Calendars.Compile(ctx, "excludeCalendars", cfg.ExcludeCalendars); err != nil {
		return r, err
	}
	r.Include, err = s.cfg.Calendars.Compile(ctx, "includeCalendars", cfg.IncludeCalendars)
	return r, err
}

// previewRules are the calendar rules of a preview that names calendars without a stored job: the job's
// own path (rules), so that a preview and the job's next fires agree.
func (s *Service) previewRules(ctx context.Context, exclude, include []string) (calendar.Rules, error) {
	if s.cfg.Calendars == nil && len(exclude)+len(include) > 0 {
		field := "excludeCalendars"
		if len(exclude) == 0 {
			field = "includeCalendars"
		}
		return calendar.Rules{}, ejserver.Invalid(field, "this peer has no calendar store")
	}
	return s.rules(ctx, &ejserver.JobConfig{ExcludeCalendars: exclude, IncludeCalendars: include})
}

func (s *Service) effective(cfg ejserver.JobConfig, r calendar.Rules, from time.Time, count, remaining int) []time.Time {
	loc, err := cronexpr.LoadLocation(cfg.TimeZone)
	if err != nil {
		return []time.Time{}
	}
	sched, err := cronexpr.Parse(cfg.Cron, loc)
	if err != nil {
		return []time.Time{}
	}
	out := calendar.Next(sched.Next, r, from, count, remaining)
	if out == nil {
		out = []time.Time{}
	}
	return out
}

// remainingFires is how many scheduled fires a job has left by the cluster's counter (limit when unread).
func (s *Service) remainingFires(job string, limit int) int {
	if s.cfg.Counters == nil {
		return limit
	}
	data, version, err := s.cfg.Counters.ReadFireCounter(job)
	if err != nil || version < 0 {
		return limit
	}
	var c calendar.Counter
	if json.Unmarshal(data, &c) != nil || c.Limit != limit {
		return limit
	}
	return c.Left
}

// steerView makes a job view's next fire the effective one (from this peer's calendar cache) and says a
// pause, an unknown calendar or an ended schedule among its problems.
func (s *Service) steerView(v *JobView) {
	cfg := &v.JobConfig
	if p := cfg.Pause; p != nil {
		v.Problems = append(v.Problems, "paused by "+p.By+": "+p.Note)
	}
	if s.cfg.Calendars == nil || v.NextFireTime == nil || cfg.Cron == "" {
		return
	}
	r, err := s.cfg.Calendars.Rules(cfg)
	if err != nil {
		v.Problems = append(v.Problems, "scheduled fires are skipped: "+err.Error())
	}
	remaining := -1
	if cfg.RemainingFires > 0 {
		remaining = s.remainingFires(cfg.JobName, cfg.RemainingFires)
	}
	next := s.effective(*cfg, r, v.NextFireTime.Add(-time.Nanosecond), 1, remaining)
	if len(next) == 0 {
		v.NextFireTime = nil
		if !r.Paused {
			v.Problems = append(v.Problems, "the schedule has no more fires (endAt, remainingFires or calendars)")
		}
		return
	}
	v.NextFireTime = &next[0]
}
