package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/cronexpr"
	"github.com/ejserver/ejserver/internal/workflow"
)

// Calendars is what workflows need of the cluster's calendars (calendarstore.Store satisfies it): the API
// checks that the calendars a workflow names exist, the engine steers scheduled runs with them.
type Calendars interface {
	// Compile reads the named calendars now; an unknown one is an EINVALID error naming field and calendar.
	Compile(ctx context.Context, field string, names []string) ([]*calendar.Compiled, error)
	// CalendarRules gives the rules of the named calendars from the watched cache (an error names an unknown one).
	CalendarRules(exclude, include []string) (calendar.Rules, error)
}

// UseCalendars makes the service refuse workflows naming calendars the cluster does not have.
func (s *Service) UseCalendars(c Calendars) *Service {
	s.calendars = c
	return s
}

// checkCalendars refuses a workflow naming a calendar that does not exist, naming the field and calendar.
func (s *Service) checkCalendars(ctx context.Context, w workflow.Workflow) error {
	if s.calendars == nil {
		return nil
	}
	if _, err := s.calendars.Compile(ctx, "excludeCalendars", w.ExcludeCalendars); err != nil {
		return err
	}
	_, err := s.calendars.Compile(ctx, "includeCalendars", w.IncludeCalendars)
	return err
}

// UsingCalendar lists the workflows whose schedule names a calendar (read from ZooKeeper), by name: a
// calendar in use is not deleted.
func (s *Service) UsingCalendar(name string) []string {
	names, err := s.reg.WorkflowNames()
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		data, _, err := s.reg.GetWorkflow(n)
		var w workflow.Workflow
		if err != nil || json.Unmarshal(data, &w) != nil {
			continue
		}
		if slices.Contains(w.ExcludeCalendars, name) || slices.Contains(w.IncludeCalendars, name) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// dueRefresh is how often a workflow's next scheduled run is computed again (the due time is the cron's; the
// calendars decide at the due time).
const dueRefresh = time.Minute

// nextDue is a scheduled workflow's next run after now by its cron (zero: none, or the schedule cannot be
// read). Its calendars are applied at the due time (calendarsLet), so that a run they leave out is recorded.
func (d *duty) nextDue(w workflow.Workflow, now time.Time) time.Time {
	loc, err := cronexpr.LoadLocation(w.TimeZone)
	if err != nil {
		return time.Time{}
	}
	s, err := cronexpr.Parse(w.Cron, loc)
	if err != nil {
		return time.Time{}
	}
	return s.Next(now)
}

// Why a run was SKIPPED, as the workflow metrics count it.
const (
	SkipCalendar = "calendar" // its calendars left the scheduled run out
	SkipOverlap  = "overlap"  // an earlier run was still going (overlap: skip)
)

// skipWhy is the SkipCalendar or SkipOverlap a SKIPPED run's reason tells.
func skipWhy(reason string) string {
	if strings.HasPrefix(reason, calendar.ReasonCalendar) {
		return SkipCalendar
	}
	return SkipOverlap
}

// skipDue records a scheduled run the workflow's calendars leave out, as jobs count their calendar-skipped
// fires: a run made SKIPPED at once (its reason names the calendar: "calendar: cn-holidays excludes the
// day"), kept in ZooKeeper with the other ended runs and in the history, counted by the metrics.
func (d *duty) skipDue(w workflow.Workflow, at, now time.Time, why string) {
	pending := workflow.NewRun(w, ejserver.NewExecutionID(), workflow.TriggerSchedule, at, now, nil)
	r, _, err := workflow.Apply(pending, workflow.Event{Kind: workflow.EventSkip, Reason: why}, now)
	if err != nil {
		return
	}
	data, _ := json.Marshal(r)
	if err := d.e.reg.CreateRun(d.fence, w.Name, r.ID, data, nil); err != nil {
		d.e.log.Warn("could not record a scheduled workflow run its calendars skip", "workflow", w.Name, "scheduled_at", at, "err", err)
		return
	}
	d.ended(pending, r, 0)
}

// calendarsLet reports whether a scheduled run due at t runs by the workflow's calendars now, and if not why.
func (d *duty) calendarsLet(w workflow.Workflow, t time.Time) (bool, string) {
	rules, err := d.calendarRules(w)
	if err != nil {
		return false, calendar.ReasonCalendar + ": " + err.Error()
	}
	v := rules.Decide(t)
	return v.Run, v.Reason
}

func (d *duty) calendarRules(w workflow.Workflow) (calendar.Rules, error) {
	if len(w.ExcludeCalendars)+len(w.IncludeCalendars) == 0 || d.e.cfg.Calendars == nil {
		return calendar.Rules{}, nil
	}
	return d.e.cfg.Calendars.CalendarRules(w.ExcludeCalendars, w.IncludeCalendars)
}

// never is the due time of a schedule with no next run (computed again every dueRefresh).
var never = time.Unix(1<<40, 0)

// refreshDue sets a workflow's next due run when it has none, or when it was computed dueRefresh ago and is
// still ahead; true when it did (the caller waits for the next tick).
func (d *duty) refreshDue(name string, w workflow.Workflow, now time.Time) bool {
	if d.dueAt == nil {
		d.dueAt = map[string]time.Time{}
	}
	next, ok := d.due[name]
	if ok && (now.Sub(d.dueAt[name]) < dueRefresh || !now.Before(next)) {
		return false
	}
	n := d.nextDue(w, now)
	if n.IsZero() {
		n = never
	}
	d.due[name], d.dueAt[name] = n, now
	return !ok || now.Before(n)
}
