package cronexpr

import (
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// unixDayNames numbers the days of the week as Unix cron does, Sunday 0 (7 is Sunday too).
var unixDayNames = map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}

// The fields of a Unix expression, in order. Ranges do not wrap and steps are not limited, as in robfig/cron.
var unixFieldInfos = [5]fieldInfo{
	{name: FieldMinute, min: 0, max: 59},
	{name: FieldHour, min: 0, max: 23},
	{name: FieldDayOfMonth, min: 1, max: 31},
	{name: FieldMonth, min: 1, max: 12, names: monthNames, stepAfterName: true},
	{name: FieldDayOfWeek, min: 0, max: 7, names: unixDayNames, stepAfterName: true},
}

// unixSchedule is a 5-field Unix expression or a descriptor such as @daily, evaluated by robfig/cron in the
// schedule's location.
//
// DST: a fire time in a spring-forward gap is skipped (robfig's behaviour, and Quartz's). In a repeated
// fall-back hour robfig would fire a schedule twice, once per pass; like Vixie cron, ejserver fires a
// schedule with a fixed minute and hour only in the first pass, and one whose minute or hour field starts
// with "*" (every 5 minutes, hourly) in both.
type unixSchedule struct {
	spec     *cron.SpecSchedule
	loc      *time.Location
	wildcard bool // the minute or hour field starts with "*"

	fields     [5][]fieldItem // as parsed, for Describe; empty for a descriptor
	descriptor string
}

// Next returns the first fire time strictly after t, in the schedule's location, or the zero time if there
// is none within five years (robfig's horizon), such as for 0 0 30 2 *.
func (s *unixSchedule) Next(t time.Time) time.Time {
	t = t.In(s.loc)
	for range 1000 { // a fixed-hour schedule fires at most 60 times in a repeated hour
		next := s.spec.Next(t)
		if next.IsZero() || s.wildcard || !inSecondPass(next) {
			return next
		}
		t = next
	}
	return time.Time{}
}

// inSecondPass reports whether t is in a repeated stretch of wall-clock time after clocks were set back,
// so that the same wall time already occurred earlier.
func inSecondPass(t time.Time) bool {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, offset := t.Zone()
	_, before := start.Add(-time.Second).Zone()
	return before > offset && t.Sub(start) < time.Duration(before-offset)*time.Second
}

// parseUnix parses the 5 fields of a Unix expression: minute, hour, day of month, month, day of week.
// robfig/cron builds the schedule; the fields are checked here first, for errors that name the field.
func parseUnix(expr string, texts []string, loc *time.Location) (Schedule, error) {
	s := &unixSchedule{loc: loc}
	robfigFields := make([]string, len(texts))
	for i, text := range texts {
		f := &unixFieldInfos[i]
		items, err := parseUnixField(f, text)
		if err != nil {
			value := err.value
			if value == "" {
				value = text
			}
			return nil, &ParseError{Expr: expr, Field: f.name, Value: value, Msg: err.msg}
		}
		s.fields[i] = items
		robfigFields[i] = robfigField(f, items)
	}
	s.wildcard = strings.HasPrefix(texts[0], "*") || strings.HasPrefix(texts[1], "*")
	return s.build(expr, strings.Join(robfigFields, " "))
}

// build has robfig/cron parse spec and points the schedule at the location.
func (s *unixSchedule) build(expr, spec string) (Schedule, error) {
	parsed, err := cron.ParseStandard(spec)
	if err != nil { // the checks above should have caught it
		return nil, &ParseError{Expr: expr, Field: FieldExpression, Msg: err.Error()}
	}
	s.spec = parsed.(*cron.SpecSchedule)
	s.spec.Location = s.loc
	return s, nil
}

func parseUnixField(f *fieldInfo, text string) ([]fieldItem, *itemError) {
	upper := strings.ToUpper(text)
	isDay := f.name == FieldDayOfMonth || f.name == FieldDayOfWeek
	for i := 0; i < len(upper); i++ {
		c := upper[i]
		switch {
		case c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || strings.IndexByte("*/,-", c) >= 0:
		case c == '?' && isDay:
		case c == '?':
			return nil, errorf(text, `"?" is only allowed in day-of-month and day-of-week`)
		case c == '#':
			return nil, errorf(text, quartzSyntax)
		default:
			return nil, errorf(text, "unexpected character %q", text[i:i+1])
		}
	}
	if upper == "?" {
		upper = "*" // robfig reads "?" as "*"
	} else if strings.Contains(upper, "?") {
		return nil, errorf(text, `"?" stands alone in its field`)
	}
	var items []fieldItem
	origItems := strings.Split(text, ",")
	for i, s := range strings.Split(upper, ",") {
		it, err := parseItem(f, s, origItems[i])
		if err != nil {
			if isDay && isQuartzDayForm(f.name, upper) {
				return nil, errorf(text, quartzSyntax)
			}
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

const quartzSyntax = `this is Quartz syntax: write the expression with 6 fields, seconds first, such as "0 0 12 L * ?"`

// isQuartzDayForm reports whether a day field is one of Quartz's L, W or # forms.
func isQuartzDayForm(field, upper string) bool {
	var q quartzField
	if field == FieldDayOfMonth {
		done, err := parseDayOfMonthForm(&quartzFieldInfos[3], upper, upper, &q)
		return done && err == nil
	}
	done, err := parseDayOfWeekForm(&quartzFieldInfos[5], upper, upper, &q)
	return done && err == nil
}

// robfigField writes a parsed field the way robfig/cron reads it: "*" for a field that is every value (robfig
// and Vixie cron treat it specially in the day fields), else the list of values, with day of week 7 as 0.
func robfigField(f *fieldInfo, items []fieldItem) string {
	var set valueSet
	for _, it := range items {
		if it.kind == itemAll && it.step <= 1 {
			return "*"
		}
		it.addTo(f, &set, 0)
	}
	if f.name == FieldDayOfWeek && set.has(7) {
		set[0] &^= 1 << 7
		set.add(0)
	}
	values := set.values()
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strconv.Itoa(v)
	}
	return strings.Join(out, ",")
}

// parseDescriptor parses @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly and
// @every <duration>.
func parseDescriptor(expr string, loc *time.Location) (Schedule, error) {
	if rest, ok := strings.CutPrefix(expr, "@every"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		return parseEvery(expr, strings.TrimSpace(rest), loc)
	}
	s := &unixSchedule{loc: loc, descriptor: expr}
	switch expr {
	case "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight":
	case "@hourly":
		s.wildcard = true
	default:
		return nil, &ParseError{Expr: expr, Field: FieldExpression, Value: expr,
			Msg: "unknown descriptor: use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>"}
	}
	return s.build(expr, expr)
}

// everySchedule fires at a fixed interval from the time it is asked about: @every 90s.
type everySchedule struct {
	every cron.ConstantDelaySchedule
	loc   *time.Location
}

func (s everySchedule) Next(t time.Time) time.Time {
	return s.every.Next(t).In(s.loc)
}

func parseEvery(expr, text string, loc *time.Location) (Schedule, error) {
	d, err := time.ParseDuration(text)
	switch {
	case err != nil:
		return nil, &ParseError{Expr: expr, Field: FieldExpression, Value: text,
			Msg: `"@every" must be followed by a duration such as 30s, 5m or 1h30m`}
	case d < time.Second || d%time.Second != 0:
		return nil, &ParseError{Expr: expr, Field: FieldExpression, Value: text,
			Msg: "the interval must be a whole number of seconds, at least 1s"}
	}
	parsed, err := cron.ParseStandard("@every " + d.String())
	if err != nil {
		return nil, &ParseError{Expr: expr, Field: FieldExpression, Value: text, Msg: err.Error()}
	}
	return everySchedule{every: parsed.(cron.ConstantDelaySchedule), loc: loc}, nil
}
