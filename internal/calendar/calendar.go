// Package calendar is the pure core of named calendars (Quartz's HolidayCalendar and AnnualCalendar) and of a
// job's effective schedule: which of its cron fires run once its calendars, endAt, remainingFires and pause
// are applied. It holds no state and does no I/O: decisions are functions of values.
package calendar

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cronexpr"
)

// Bounds of a calendar, documented in the README.
const (
	MaxNameLen        = 128
	MaxDates          = 3660 // ten years of single days
	MaxRanges         = 512
	MaxAnnual         = 366
	MaxDescriptionLen = 1024
	MaxRangeDays      = 3660
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Calendar is a named set of days, in a time zone: single dates and inclusive date ranges (Quartz's
// HolidayCalendar) and month-days that recur every year (Quartz's AnnualCalendar). A job excludes the days
// of a calendar (excludeCalendars) or is restricted to them (includeCalendars). A time belongs to a
// calendar when its day, read in the calendar's time zone, is one of the calendar's days.
type Calendar struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// TimeZone is an IANA name (or ElasticJob's GMT+8 form); empty is UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// Dates are single days, YYYY-MM-DD.
	Dates []string `json:"dates,omitempty"`
	// Ranges are inclusive day ranges.
	Ranges []DateRange `json:"ranges,omitempty"`
	// Annual are days of every year, MM-DD (02-29 only matches leap years, as in Quartz).
	Annual []string `json:"annual,omitempty"`
}

// DateRange is an inclusive range of days, YYYY-MM-DD.
type DateRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// day is a civil date.
type day struct{ y, m, d int }

func (d day) less(o day) bool {
	if d.y != o.y {
		return d.y < o.y
	}
	if d.m != o.m {
		return d.m < o.m
	}
	return d.d < o.d
}

// Compiled is a validated calendar ready for lookups.
type Compiled struct {
	Name   string
	loc    *time.Location
	dates  map[day]bool
	ranges [][2]day
	annual map[[2]int]bool
}

// ValidateName checks a calendar name: it is a ZooKeeper path segment and a URL path segment.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return ejserver.Invalid(field, "is required")
	case len(name) > MaxNameLen:
		return ejserver.Invalid(field, "is %d characters long; the limit is %d", len(name), MaxNameLen)
	case !nameRE.MatchString(name):
		return ejserver.Invalid(field, "%q may only hold letters, digits, '_', '.' and '-', and must start with a letter or digit", name)
	}
	return nil
}

// Compile validates a calendar and returns it ready for lookups, or an EINVALID error naming each bad field.
func Compile(c Calendar) (*Compiled, error) {
	var errs []ejserver.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, ejserver.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if err := ValidateName("name", c.Name); err != nil {
		errs = append(errs, err.(*ejserver.Error).Fields...)
	}
	if len(c.Description) > MaxDescriptionLen {
		add("description", "is longer than %d bytes", MaxDescriptionLen)
	}
	loc, err := loadLocation(c.TimeZone)
	if err != nil {
		add("timeZone", "%v", err)
	}
	out := &Compiled{Name: c.Name, loc: loc, dates: map[day]bool{}, annual: map[[2]int]bool{}}
	if len(c.Dates)+len(c.Ranges)+len(c.Annual) == 0 {
		add("dates", "a calendar needs at least one of dates, ranges or annual")
	}
	if len(c.Dates) > MaxDates {
		add("dates", "has %d entries; the limit is %d", len(c.Dates), MaxDates)
	}
	for i, s := range c.Dates {
		d, err := parseDay(s)
		if err != nil {
			add(fmt.Sprintf("dates[%d]", i), "%v", err)
			continue
		}
		out.dates[d] = true
	}
	if len(c.Ranges) > MaxRanges {
		add("ranges", "has %d entries; the limit is %d", len(c.Ranges), MaxRanges)
	}
	for i, r := range c.Ranges {
		from, err1 := parseDay(r.From)
		if err1 != nil {
			add(fmt.Sprintf("ranges[%d].from", i), "%v", err1)
		}
		to, err2 := parseDay(r.To)
		if err2 != nil {
			add(fmt.Sprintf("ranges[%d].to", i), "%v", err2)
		}
		if err1 != nil || err2 != nil {
			continue
		}
		if to.less(from) {
			add(fmt.Sprintf("ranges[%d].to", i), "%s is before from (%s)", r.To, r.From)
			continue
		}
		if n := civil(to).Sub(civil(from)).Hours() / 24; n > MaxRangeDays {
			add(fmt.Sprintf("ranges[%d]", i), "spans %.0f days; the limit is %d", n, MaxRangeDays)
			continue
		}
		out.ranges = append(out.ranges, [2]day{from, to})
	}
	if len(c.Annual) > MaxAnnual {
		add("annual", "has %d entries; the limit is %d", len(c.Annual), MaxAnnual)
	}
	for i, s := range c.Annual {
		m, d, err := parseMonthDay(s)
		if err != nil {
			add(fmt.Sprintf("annual[%d]", i), "%v", err)
			continue
		}
		out.annual[[2]int{m, d}] = true
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Field + ": " + e.Message
		}
		return nil, &ejserver.Error{Code: ejserver.EINVALID, Message: strings.Join(msgs, "; "), Fields: errs}
	}
	return out, nil
}

// Contains reports whether t's day, in the calendar's time zone, is one of the calendar's days.
func (c *Compiled) Contains(t time.Time) bool {
	y, m, dd := t.In(c.loc).Date()
	d := day{y, int(m), dd}
	if c.dates[d] || c.annual[[2]int{d.m, d.d}] {
		return true
	}
	for _, r := range c.ranges {
		if !d.less(r[0]) && !r[1].less(d) {
			return true
		}
	}
	return false
}

// Location is the calendar's time zone.
func (c *Compiled) Location() *time.Location { return c.loc }

func civil(d day) time.Time { return time.Date(d.y, time.Month(d.m), d.d, 0, 0, 0, 0, time.UTC) }

func parseDay(s string) (day, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || len(s) != len(time.DateOnly) {
		return day{}, fmt.Errorf("%q is not a date YYYY-MM-DD", s)
	}
	return day{t.Year(), int(t.Month()), t.Day()}, nil
}

func parseMonthDay(s string) (int, int, error) {
	bad := fmt.Errorf("%q is not a day of the year MM-DD", s)
	if len(s) != 5 || s[2] != '-' {
		return 0, 0, bad
	}
	m, err1 := strconv.Atoi(s[:2])
	d, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || m < 1 || m > 12 || d < 1 {
		return 0, 0, bad
	}
	if d > []int{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1] {
		return 0, 0, bad
	}
	return m, d, nil
}

// loadLocation reads a time zone like the job's timeZone does: IANA names, ElasticJob's GMT+8, empty = UTC.
func loadLocation(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	return cronexpr.LoadLocation(tz)
}

// Names returns the sorted, de-duplicated calendar names of a job's lists.
func Names(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
