package ejserver

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds of the steering fields (issue 24: calendars, pause, endAt, remainingFires).
const (
	MaxJobCalendars   = 16
	MaxRemainingFires = 1_000_000_000
	MaxPauseNoteLen   = 1024
)

// Props keys of the steering fields in ElasticJob's config.
const (
	PropExcludeCalendars = "ejserver.excludeCalendars"
	PropIncludeCalendars = "ejserver.includeCalendars"
	PropEndAt            = "ejserver.endAt"
	PropRemainingFires   = "ejserver.remainingFires"
	PropPause            = "ejserver.pause"
)

// Pause is an operator's pause of a job's schedule: scheduled fires are skipped (reason "job paused") until
// resume; manual triggers still run. It is set only by POST /jobs/{job}/pause, kept by a replace, cleared by
// resume.
type Pause struct {
	// By is the actor of the token that paused the job.
	By string `json:"by"`
	// Note says why.
	Note string    `json:"note,omitempty"`
	At   time.Time `json:"at"`
}

var calendarNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// EndTime is EndAt parsed (zero when unset or invalid: Validate refuses an invalid one). Every fire asks
// (the steering's rules): an unset EndAt is not parsed, as time.Parse builds an error for "" (~7 µs of
// CPU and an allocation per fire in a profile of steady-10k).
func (c *JobConfig) EndTime() time.Time {
	if c.EndAt == "" {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339, c.EndAt)
	return t
}

// validateSteering checks the calendar references, endAt and remainingFires. That every calendar named
// exists is checked where the calendars are (the service), as it needs the cluster.
func (c *JobConfig) validateSteering(v *validator) {
	v.calendarRefs("", c.ExcludeCalendars, c.IncludeCalendars)
	if c.EndAt != "" {
		if _, err := time.Parse(time.RFC3339, c.EndAt); err != nil {
			v.add("endAt", "%q is not an RFC 3339 time (2026-12-31T23:59:59Z)", c.EndAt)
		}
	}
	if c.RemainingFires < 0 || c.RemainingFires > MaxRemainingFires {
		v.add("remainingFires", "must be between 0 (no limit) and %d, got %d", MaxRemainingFires, c.RemainingFires)
	}
	if c.RemainingFires > 0 && c.Cron == "" {
		v.add("remainingFires", "counts scheduled fires: a job without a cron has none")
	}
	if p := c.Pause; p != nil && len(p.Note) > MaxPauseNoteLen {
		v.add("pause.note", "is longer than %d bytes", MaxPauseNoteLen)
	}
}

// ValidateCalendarRefs checks a workflow's (or any schedule's) excludeCalendars and includeCalendars as a
// job's are checked: names, at most MaxJobCalendars, none twice, none in both lists. That they exist is
// checked where the calendars are.
func ValidateCalendarRefs(exclude, include []string) error {
	var v validator
	v.calendarRefs("", exclude, include)
	return v.err()
}

func (v *validator) calendarRefs(prefix string, exclude, include []string) {
	for _, f := range []struct {
		field string
		names []string
	}{{prefix + "excludeCalendars", exclude}, {prefix + "includeCalendars", include}} {
		if len(f.names) > MaxJobCalendars {
			v.add(f.field, "names %d calendars; the limit is %d", len(f.names), MaxJobCalendars)
		}
		for i, n := range f.names {
			switch {
			case !calendarNameRE.MatchString(n):
				v.add(fmt.Sprintf("%s[%d]", f.field, i), "%q is not a calendar name (letters, digits, '_', '.', '-')", n)
			case slices.Index(f.names, n) < i:
				v.add(fmt.Sprintf("%s[%d]", f.field, i), "%q is named twice", n)
			}
		}
	}
	for _, n := range include {
		if slices.Contains(exclude, n) {
			v.add(prefix+"includeCalendars", "%q is excluded too: a schedule can't both exclude and be restricted to a calendar", n)
		}
	}
}

// marshalSteeringProps stores the steering fields in props.
func marshalSteeringProps(cfg JobConfig, props map[string]string) error {
	if len(cfg.ExcludeCalendars) > 0 {
		props[PropExcludeCalendars] = strings.Join(cfg.ExcludeCalendars, ",")
	}
	if len(cfg.IncludeCalendars) > 0 {
		props[PropIncludeCalendars] = strings.Join(cfg.IncludeCalendars, ",")
	}
	if cfg.EndAt != "" {
		props[PropEndAt] = cfg.EndAt
	}
	if cfg.RemainingFires > 0 {
		props[PropRemainingFires] = strconv.Itoa(cfg.RemainingFires)
	}
	if cfg.Pause != nil {
		b, err := json.Marshal(cfg.Pause)
		if err != nil {
			return err
		}
		props[PropPause] = string(b)
	}
	return nil
}

// parseSteeringProps reads what marshalSteeringProps stored, taking the keys out of props.
func parseSteeringProps(cfg *JobConfig, take func(string) (string, bool)) error {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	v, _ := take(PropExcludeCalendars)
	cfg.ExcludeCalendars = split(v)
	v, _ = take(PropIncludeCalendars)
	cfg.IncludeCalendars = split(v)
	cfg.EndAt, _ = take(PropEndAt)
	if v, ok := take(PropRemainingFires); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("props %s: %w", PropRemainingFires, err)
		}
		cfg.RemainingFires = n
	}
	if v, ok := take(PropPause); ok && v != "" {
		var p Pause
		if err := json.Unmarshal([]byte(v), &p); err != nil {
			return fmt.Errorf("props %s: %w", PropPause, err)
		}
		cfg.Pause = &p
	}
	return nil
}
