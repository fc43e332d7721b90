// Package calendarstore keeps the cluster's named calendars: writes go to ZooKeeper
// (/{namespace}.ejserver/calendars/{name}); every peer keeps a compiled cache fresh by watches, so the
// executor decides a fire without a round trip and a calendar edit applies on every peer without a restart.
// API reads go to ZooKeeper (read-your-writes, ETags).
package calendarstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/metawatch"
)

// Registry is what the Store needs of ZooKeeper (cluster.Registry satisfies it).
type Registry interface {
	CalendarNodes(watch bool) ([]cluster.CalendarNode, <-chan struct{}, error)
	ReadCalendar(name string) (cluster.CalendarNode, error)
	CreateCalendar(name string, data []byte) (int32, error)
	SetCalendar(name string, data []byte, version int32) (int32, error)
	DeleteCalendar(name string, version int32) error
}

var _ Registry = (*cluster.Registry)(nil)

// Stored is a calendar as stored, with its node version (the API's ETag).
type Stored struct {
	calendar.Calendar
	Version int32 `json:"version"`
}

// Config configures a Store.
type Config struct {
	Registry Registry
	// UsedBy lists the jobs whose config names a calendar (excluded or included): a calendar in use is not
	// deleted. Nil: no check.
	UsedBy func(name string) []string
	// UsedByWorkflows lists the workflows whose schedule names a calendar; nil: no check.
	UsedByWorkflows func(name string) []string
	Logger          *slog.Logger
	Clock           clock.Clock
	// RetryPause is how long the watch loop waits after a failed read (default 1s).
	RetryPause time.Duration
}

// Store is the cluster's calendars.
type Store struct {
	cfg Config
	log *slog.Logger

	mu    sync.RWMutex
	cache map[string]*calendar.Compiled
	loop  *metawatch.Loop
}

// New returns a store; Start begins watching.
func New(cfg Config) *Store {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Store{cfg: cfg, log: cfg.Logger, cache: map[string]*calendar.Compiled{}}
	s.loop = metawatch.New(metawatch.Config{What: "calendars", Read: cfg.Registry.CalendarNodes, Apply: s.apply,
		Clock: cfg.Clock, Logger: cfg.Logger, RetryPause: cfg.RetryPause})
	return s
}

// Start loads the calendars and keeps watching them; it returns after the first load or when ctx ends.
func (s *Store) Start(ctx context.Context) error { return s.loop.Start(ctx) }

// Stop ends the watch loop; safe twice and before Start.
func (s *Store) Stop() { s.loop.Stop() }

// apply replaces the cache with the calendars read; one that can't be compiled is left out (jobs naming it
// skip their fires).
func (s *Store) apply(nodes []cluster.CalendarNode) {
	next := make(map[string]*calendar.Compiled, len(nodes))
	for _, n := range nodes {
		st, err := decode(n)
		if err == nil {
			next[n.Name], err = calendar.Compile(st.Calendar)
		}
		if err != nil {
			s.log.Error("calendar not usable: jobs naming it skip their fires", "calendar", n.Name, "err", err)
			delete(next, n.Name)
		}
	}
	s.mu.Lock()
	s.cache = next
	s.mu.Unlock()
}

// Rules returns a job's effective-schedule rules from the cache: its calendars, endAt and pause. A calendar
// the job names that the cache does not hold (deleted meanwhile, or unreadable) is an error naming it: the
// caller skips the fire rather than run it on a day the job may exclude.
func (s *Store) Rules(cfg *ejserver.JobConfig) (calendar.Rules, error) {
	r, err := s.CalendarRules(cfg.ExcludeCalendars, cfg.IncludeCalendars)
	r.EndAt, r.Paused = cfg.EndTime(), cfg.Pause != nil
	return r, err
}

// CalendarRules returns the rules of a schedule's calendars (a job's, a workflow's) from the cache; a
// calendar the cache does not hold is an error naming it.
func (s *Store) CalendarRules(exclude, include []string) (calendar.Rules, error) {
	var r calendar.Rules
	if len(exclude)+len(include) == 0 {
		return r, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var missing []string
	pick := func(names []string) []*calendar.Compiled {
		out := make([]*calendar.Compiled, 0, len(names))
		for _, n := range names {
			if c, ok := s.cache[n]; ok {
				out = append(out, c)
			} else {
				missing = append(missing, n)
			}
		}
		return out
	}
	r.Exclude, r.Include = pick(exclude), pick(include)
	if len(missing) > 0 {
		return r, fmt.Errorf("unknown calendar %s", strings.Join(missing, ", "))
	}
	return r, nil
}

func decode(n cluster.CalendarNode) (Stored, error) {
	var c calendar.Calendar
	if err := json.Unmarshal(n.Data, &c); err != nil {
		return Stored{}, fmt.Errorf("calendar node %q is not readable: %w", n.Name, err)
	}
	c.Name = n.Name
	return Stored{Calendar: c, Version: n.Version}, nil
}

func storeErr(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrNoCalendar):
		return ejserver.Errorf(ejserver.ENOTFOUND, "calendar %q not found", name)
	case errors.Is(err, cluster.ErrCalendarExists):
		return ejserver.Errorf(ejserver.ECONFLICT, "calendar %q exists already (replace it with PUT)", name)
	case errors.Is(err, cluster.ErrCalendarChanged):
		return ejserver.Errorf(ejserver.EPRECONDITION, "calendar %q changed since the version you sent", name)
	}
	var e *ejserver.Error
	if errors.As(err, &e) {
		return err
	}
	return ejserver.Unavailable(err, "the registry is unavailable")
}

// List reads every calendar from ZooKeeper, by name.
func (s *Store) List(context.Context) ([]Stored, error) {
	nodes, _, err := s.cfg.Registry.CalendarNodes(false)
	if err != nil {
		return nil, storeErr("", err)
	}
	out := make([]Stored, 0, len(nodes))
	for _, n := range nodes {
		st, err := decode(n)
		if err != nil {
			s.log.Error("calendar not usable", "calendar", n.Name, "err", err)
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// Get reads one calendar from ZooKeeper.
func (s *Store) Get(_ context.Context, name string) (Stored, error) {
	if calendar.ValidateName("name", name) != nil {
		return Stored{}, ejserver.Errorf(ejserver.ENOTFOUND, "calendar %q not found", name)
	}
	n, err := s.cfg.Registry.ReadCalendar(name)
	if err != nil {
		return Stored{}, storeErr(name, err)
	}
	st, err := decode(n)
	if err != nil {
		return Stored{}, &ejserver.Error{Code: ejserver.EINTERNAL, Message: "the stored calendar is not readable", Err: err}
	}
	return st, nil
}

// Compile reads the named calendars from ZooKeeper (not the cache: a calendar created a moment ago counts)
// and compiles them; a name with no calendar is an EINVALID error naming field and the calendar.
func (s *Store) Compile(ctx context.Context, field string, names []string) ([]*calendar.Compiled, error) {
	out := make([]*calendar.Compiled, 0, len(names))
	for _, n := range names {
		st, err := s.Get(ctx, n)
		if ejserver.IsNotFound(err) {
			return nil, ejserver.Invalid(field, "no calendar %q: create it first (POST /api/v1/calendars)", n)
		}
		if err != nil {
			return nil, err
		}
		c, err := calendar.Compile(st.Calendar)
		if err != nil {
			return nil, ejserver.Invalid(field, "calendar %q is not usable: %v", n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Create validates and stores a new calendar.
func (s *Store) Create(_ context.Context, c calendar.Calendar) (Stored, error) {
	if _, err := calendar.Compile(c); err != nil {
		return Stored{}, err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return Stored{}, err
	}
	v, err := s.cfg.Registry.CreateCalendar(c.Name, data)
	if err != nil {
		return Stored{}, storeErr(c.Name, err)
	}
	s.log.Info("calendar created", "calendar", c.Name)
	return Stored{Calendar: c, Version: v}, nil
}

// VersionCheck decides whether a replace may apply to the stored version (If-Match); nil accepts any.
type VersionCheck func(version int32) bool

// Replace replaces calendar name; check, if set, must accept the stored version, which must not change
// before the write (else EPRECONDITION). Every peer applies the change when its watch fires.
func (s *Store) Replace(ctx context.Context, name string, c calendar.Calendar, check VersionCheck) (Stored, error) {
	if c.Name == "" {
		c.Name = name
	}
	if c.Name != name {
		return Stored{}, ejserver.Invalid("name", "is %q but the URL names %q: a calendar cannot be renamed", c.Name, name)
	}
	old, err := s.Get(ctx, name)
	if err != nil {
		return Stored{}, err
	}
	if check != nil && !check(old.Version) {
		return Stored{}, ejserver.Errorf(ejserver.EPRECONDITION, "calendar %q changed since the version you sent (its ETag is now \"%d\")", name, old.Version)
	}
	if _, err := calendar.Compile(c); err != nil {
		return Stored{}, err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return Stored{}, err
	}
	v, err := s.cfg.Registry.SetCalendar(name, data, old.Version)
	if err != nil {
		return Stored{}, storeErr(name, err)
	}
	s.log.Info("calendar replaced", "calendar", name)
	return Stored{Calendar: c, Version: v}, nil
}

// Delete removes a calendar, refused (ECONFLICT, naming them) while jobs or workflows name it. The check reads this
// peer's job cache: a job created on another peer in the same instant may still name a deleted calendar,
// and then its fires are skipped with reason "calendar: unknown calendar" until the job is edited.
func (s *Store) Delete(ctx context.Context, name string) error {
	old, err := s.Get(ctx, name)
	if err != nil {
		return err
	}
	var users []string
	if s.cfg.UsedBy != nil {
		if jobs := s.cfg.UsedBy(name); len(jobs) > 0 {
			users = append(users, "job(s) "+strings.Join(jobs, ", "))
		}
	}
	if s.cfg.UsedByWorkflows != nil {
		if wfs := s.cfg.UsedByWorkflows(name); len(wfs) > 0 {
			users = append(users, "workflow(s) "+strings.Join(wfs, ", "))
		}
	}
	if len(users) > 0 {
		return ejserver.Errorf(ejserver.ECONFLICT, "calendar %q is used by %s: remove it from their excludeCalendars/includeCalendars first", name, strings.Join(users, " and "))
	}
	if err := s.cfg.Registry.DeleteCalendar(name, old.Version); err != nil {
		return storeErr(name, err)
	}
	s.log.Info("calendar deleted", "calendar", name)
	return nil
}
