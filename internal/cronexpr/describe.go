package cronexpr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Describe says in plain English when an expression fires, for the console and the job list: "every 5
// seconds", "at 10:15 on the last day of every month", "at 12:00 on the third Friday of every month". It is
// best effort: it returns "" for an expression that does not parse, and never panics.
func Describe(expr string) string {
	expr = strings.TrimSpace(expr)
	s, err := Parse(expr, time.UTC)
	if err != nil {
		return ""
	}
	var v specView
	switch s := s.(type) {
	case everySchedule:
		return describeDescriptor(expr)
	case *unixSchedule:
		if s.descriptor != "" {
			return describeDescriptor(expr)
		}
		v = specView{
			seconds: []fieldItem{{kind: itemValue}}, minutes: s.fields[0], hours: s.fields[1],
			dom: quartzField{items: s.fields[2]}, months: s.fields[3], dow: quartzField{items: s.fields[4]},
			dayNames: unixDayNameList, either: true,
		}
		// robfig reads "*" in one day field as "no restriction there"; both restricted means either matches.
		v.dom.unspecified = isEvery(v.dom.items)
		v.dow.unspecified = isEvery(v.dow.items)
		if v.dom.unspecified && v.dow.unspecified {
			v.dow.unspecified = false
		}
	case *quartzSchedule:
		v = specView{
			seconds: s.fields[0].items, minutes: s.fields[1].items, hours: s.fields[2].items,
			dom: s.fields[3], months: s.fields[4].items, dow: s.fields[5], years: s.fields[6].items,
			dayNames: quartzDayNameList,
		}
	default:
		return ""
	}
	return v.describe()
}

var (
	quartzDayNameList = []string{"", "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	unixDayNameList   = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	monthNameList     = []string{"", "January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
	ordinals = []string{"", "first", "second", "third", "fourth", "fifth"}
)

// describeDescriptor describes a descriptor that parses.
func describeDescriptor(expr string) string {
	switch expr {
	case "@yearly", "@annually":
		return "at 00:00 on January 1"
	case "@monthly":
		return "at 00:00 on the 1st of every month"
	case "@weekly":
		return "at 00:00 on Sunday"
	case "@daily", "@midnight":
		return "at 00:00 every day"
	case "@hourly":
		return "every hour"
	}
	rest, ok := strings.CutPrefix(expr, "@every")
	if !ok {
		return ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	if err != nil || d < time.Second || d%time.Second != 0 {
		return ""
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d%u.d == 0 {
			return "every " + plural(int(d/u.d), u.name)
		}
	}
	return ""
}

// specView is an expression of either dialect, seen the same way for describing it.
type specView struct {
	seconds, minutes, hours, months, years []fieldItem
	dom, dow                               quartzField
	dayNames                               []string // by day-of-week number
	either                                 bool     // Unix: with both day fields restricted, either matches
}

func (v specView) describe() string {
	parts := []string{v.describeTime()}
	day, ok := v.describeDays()
	if !ok {
		return ""
	}
	years, ok := v.describeYears()
	if !ok {
		return ""
	}
	for _, p := range []string{day, years} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}

// describeTime describes the second, minute and hour fields: "at 10:15", "every 5 minutes", "at minute 30
// of every hour from 09:00 through 17:59", "every 7 seconds of every 13th minute".
func (v specView) describeTime() string {
	if times := v.clockTimes(); times != nil {
		return "at " + joinAnd(times)
	}
	var parts []string
	secs, _ := singles(v.seconds)
	onMinute := len(secs) == 1 && secs[0] == 0
	switch {
	case onMinute:
	case isEvery(v.seconds):
		parts = append(parts, "every second")
	default:
		parts = append(parts, unitPhrase(v.seconds, "second", true))
	}
	mins, _ := singles(v.minutes)
	atMinute := onMinute && len(mins) == 1
	switch {
	case atMinute:
		if mins[0] == 0 {
			return v.describeHourly()
		}
		parts = append(parts, fmt.Sprintf("at minute %d", mins[0]))
	case isEvery(v.minutes) && len(parts) == 0:
		parts = append(parts, "every minute")
	case isEvery(v.minutes):
	case len(parts) == 0:
		parts = append(parts, unitPhrase(v.minutes, "minute", true))
	default:
		parts = append(parts, "of "+unitPhrase(v.minutes, "minute", false))
	}
	switch {
	case isEvery(v.hours) && atMinute:
		parts = append(parts, "of every hour")
	case isEvery(v.hours):
	case isPlainRange(v.hours) && atMinute:
		parts = append(parts, "of every hour", hourSpan(v.hours[0]))
	case isPlainRange(v.hours):
		parts = append(parts, hourSpan(v.hours[0]))
	default:
		parts = append(parts, "of "+unitPhrase(v.hours, "hour", false))
	}
	return strings.Join(parts, " ")
}

// describeHourly describes an expression firing on the hour: "every hour", "every 2 hours".
func (v specView) describeHourly() string {
	switch n, ok := stepFromMin(v.hours, 0); {
	case isEvery(v.hours):
		return "every hour"
	case ok:
		return "every " + plural(n, "hour")
	case isPlainRange(v.hours):
		return "every hour " + hourSpan(v.hours[0])
	}
	return "at minute 0 of " + unitPhrase(v.hours, "hour", false)
}

// clockTimes lists the times of day an expression fires at, when there are at most six.
func (v specView) clockTimes() []string {
	var sets [3]valueSet
	for i, items := range [3][]fieldItem{v.seconds, v.minutes, v.hours} {
		for _, it := range items {
			it.addTo(&quartzFieldInfos[i], &sets[i], 0)
		}
	}
	if sets[0].count()*sets[1].count()*sets[2].count() > 6 {
		return nil
	}
	var times []string
	for _, h := range sets[2].values() {
		for _, m := range sets[1].values() {
			for _, s := range sets[0].values() {
				times = append(times, clock(h, m, s))
			}
		}
	}
	return times
}

func isPlainRange(items []fieldItem) bool {
	return len(items) == 1 && items[0].kind == itemRange && items[0].step == 0 && items[0].start < items[0].end
}

// hourSpan describes a range of hours: "from 09:00 through 17:59".
func hourSpan(it fieldItem) string {
	return fmt.Sprintf("from %s through %s", clock(it.start, 0, 0), clock(it.end, 59, 0))
}

// describeDays describes the day fields and the month: "every day", "on the last day of every month",
// "on Monday through Friday in January".
func (v specView) describeDays() (string, bool) {
	inMonths := ""
	if !isEvery(v.months) {
		inMonths = " in " + v.monthList()
	}
	ofMonths := " of every month"
	if inMonths != "" {
		ofMonths = " of " + v.monthList()
	}
	var dom, dow string
	if !v.dom.unspecified {
		if dom = v.describeDayOfMonth(); dom == "" {
			return "", false
		}
	}
	if !v.dow.unspecified {
		if dow = v.describeDayOfWeek(); dow == "" {
			return "", false
		}
	}
	everyDay := (v.dom.unspecified || isEvery(v.dom.items) && !v.dom.lastDay && !v.dom.nearestWeekday) &&
		(v.dow.unspecified || isEvery(v.dow.items) && v.dow.nth == 0 && !v.dow.lastOfMonth)
	monthly := v.dow.nth != 0 || v.dow.lastOfMonth
	switch {
	case everyDay && v.clockTimes() == nil: // the time already says how often
		return strings.TrimPrefix(inMonths, " "), true
	case everyDay:
		return "every day" + inMonths, true
	case dom != "" && dow != "":
		return "on " + dom + ofMonths + " or on " + dow, true
	case dom != "":
		return "on " + dom + ofMonths, true
	case monthly:
		return "on " + dow + ofMonths, true
	}
	return "on " + dow + inMonths, true
}

func (v specView) describeDayOfMonth() string {
	f := v.dom
	switch {
	case f.lastDay && f.nearestWeekday && f.lastDayOffset == 0:
		return "the last weekday"
	case f.lastDay && f.nearestWeekday:
		return "the weekday nearest the " + ordinal(f.lastDayOffset+1) + "-to-last day"
	case f.lastDay && f.lastDayOffset == 0:
		return "the last day"
	case f.lastDay:
		return "the " + ordinal(f.lastDayOffset+1) + "-to-last day"
	case f.nearestWeekday && len(f.items) == 1:
		return "the weekday nearest the " + dayOrdinal(f.items[0].start)
	}
	if isEvery(f.items) {
		return "every day"
	}
	if list := listItems(f.items, &quartzFieldInfos[3], func(d int) string { return "the " + dayOrdinal(d) }, 8); list != "" {
		return list
	}
	if it := f.items[0]; len(f.items) == 1 && it.step > 1 {
		start, _, _ := it.bounds(&quartzFieldInfos[3])
		return fmt.Sprintf("every %s day from the %s", ordinal(it.step), dayOrdinal(start))
	}
	return ""
}

func (v specView) describeDayOfWeek() string {
	f := v.dow
	name := func(d int) string {
		if d < 0 || d >= len(v.dayNames) {
			return ""
		}
		return v.dayNames[d]
	}
	if len(f.items) == 1 {
		switch d := f.items[0].start; {
		case f.lastOfMonth:
			return "the last " + name(d)
		case f.nth > 0 && f.nth < len(ordinals):
			return "the " + ordinals[f.nth] + " " + name(d)
		}
	}
	if isEvery(f.items) {
		return "every day"
	}
	info := &quartzFieldInfos[5]
	if !v.either {
		return listItems(f.items, info, name, 7)
	}
	return listItems(f.items, &unixFieldInfos[4], name, 7)
}

func (v specView) monthList() string {
	return listItems(v.months, &quartzFieldInfos[4], func(m int) string {
		if m < 1 || m > 12 {
			return ""
		}
		return monthNameList[m]
	}, 12)
}

func (v specView) describeYears() (string, bool) {
	if len(v.years) == 0 || isEvery(v.years) {
		return "", true
	}
	if n, ok := stepFromMin(v.years, -1); ok {
		start, _, _ := v.years[0].bounds(&quartzFieldInfos[6])
		return fmt.Sprintf("in every %s year from %d", ordinal(n), start), true
	}
	list := listItems(v.years, &quartzFieldInfos[6], strconv.Itoa, 6)
	return "in " + list, list != ""
}

// listItems names a field's values: ranges as "a through b", steps and wrapped ranges expanded to their
// values when there are at most limit of them.
func listItems(items []fieldItem, f *fieldInfo, name func(int) string, limit int) string {
	var out []string
	for _, it := range items {
		switch {
		case it.kind == itemValue && it.step == 0:
			out = append(out, name(it.start))
		case it.kind == itemRange && it.step == 0 && it.start != it.end:
			out = append(out, name(it.start)+" through "+name(it.end))
		default:
			values := it.values(f)
			if len(values) > limit {
				return ""
			}
			for _, v := range values {
				out = append(out, name(v))
			}
		}
	}
	for _, s := range out {
		if s == "" || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
			return ""
		}
	}
	return joinAnd(out)
}

// unitPhrase describes a field of seconds, minutes or hours. Leading, it says how often: "every 5 minutes",
// "every 10 seconds from second 5 through 45", "at seconds 1, 2 and 3". Following another unit, it
// restricts: "every 13th minute", "minutes 0 through 30", "hour 6".
func unitPhrase(items []fieldItem, unit string, leading bool) string {
	var out []string
	for _, it := range items {
		every := "every " + plural(it.step, unit)
		if !leading {
			every = "every " + ordinal(it.step) + " " + unit
		}
		switch {
		case it.kind == itemAll && it.step > 1:
			out = append(out, every)
		case it.kind == itemAll:
			out = append(out, "every "+unit)
		case it.kind == itemValue && it.step > 1 && it.start == 0:
			out = append(out, every)
		case it.kind == itemValue && it.step > 1:
			out = append(out, fmt.Sprintf("%s from %s %d", every, unit, it.start))
		case it.kind == itemValue:
			out = append(out, strconv.Itoa(it.start))
		case it.step > 1:
			out = append(out, fmt.Sprintf("%s from %s %d through %d", every, unit, it.start, it.end))
		default:
			out = append(out, fmt.Sprintf("%d through %d", it.start, it.end))
		}
	}
	if len(items) == 1 && (items[0].kind == itemAll || items[0].step > 1) {
		return out[0]
	}
	prefix := unit + "s "
	if len(items) == 1 && items[0].kind == itemValue {
		prefix = unit + " "
	}
	if leading {
		prefix = "at " + prefix
	}
	return prefix + joinAnd(out)
}

// singles returns the values of a field made only of single values.
func singles(items []fieldItem) ([]int, bool) {
	var out []int
	for _, it := range items {
		if it.kind != itemValue || it.step != 0 {
			return nil, false
		}
		out = append(out, it.start)
	}
	return out, len(out) > 0
}

func isEvery(items []fieldItem) bool {
	return len(items) == 1 && items[0].kind == itemAll && items[0].step <= 1
}

// stepFromMin returns n for a field that is "*/n" or "min/n" (min < 0: any start).
func stepFromMin(items []fieldItem, min int) (int, bool) {
	if len(items) != 1 || items[0].step < 2 {
		return 0, false
	}
	it := items[0]
	if it.kind == itemAll || it.kind == itemValue && (min < 0 || it.start == min) {
		return it.step, true
	}
	return 0, false
}

func clock(h, m, s int) string {
	if s != 0 {
		return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", h, m)
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func ordinal(n int) string {
	if n == 2 {
		return "2nd"
	}
	if n == 3 {
		return "3rd"
	}
	return dayOrdinal(n)
}

// dayOrdinal writes 1st, 2nd, 3rd, 4th ... 21st, 22nd, 23rd ... 31st.
func dayOrdinal(d int) string {
	suffix := "th"
	switch {
	case d%100 >= 11 && d%100 <= 13:
	case d%10 == 1:
		suffix = "st"
	case d%10 == 2:
		suffix = "nd"
	case d%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(d) + suffix
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
