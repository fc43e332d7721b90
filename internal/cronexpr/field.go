package cronexpr

import (
	"fmt"
	"iter"
	"slices"
	"strings"
)

// fieldInfo describes one field of an expression: its bounds, the names it accepts and how Quartz treats
// steps and ranges written high-low in it.
type fieldInfo struct {
	name     string
	min, max int
	// maxStep is the largest step Quartz accepts after "*/" or "v/" (it does not check "a-b/n"); 0 means
	// no limit.
	maxStep int
	// wrap is the modulus that makes a range written high-low wrap around ("22-2" in hours, "NOV-FEB");
	// 0 means such a range is an error.
	wrap  int
	names map[string]int
	// stepAfterName is set where a step after a name counts (Unix); Quartz ignores it.
	stepAfterName bool
}

var monthNames = map[string]int{
	"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
	"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
}

// quartzDayNames numbers the days of the week as Quartz does, Sunday first.
var quartzDayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

// The fields of a Quartz expression, in order.
var quartzFieldInfos = [7]fieldInfo{
	{name: FieldSecond, min: 0, max: 59, maxStep: 59, wrap: 60},
	{name: FieldMinute, min: 0, max: 59, maxStep: 59, wrap: 60},
	{name: FieldHour, min: 0, max: 23, maxStep: 23, wrap: 24},
	{name: FieldDayOfMonth, min: 1, max: 31, maxStep: 31, wrap: 31},
	{name: FieldMonth, min: 1, max: 12, maxStep: 12, wrap: 12, names: monthNames},
	{name: FieldDayOfWeek, min: 1, max: 7, maxStep: 7, wrap: 7, names: quartzDayNames},
	{name: FieldYear, min: minYear, max: maxYear},
}

// itemKind tells the forms of one element of a comma-separated field apart.
type itemKind int

const (
	itemAll   itemKind = iota // "*" or "*/n"
	itemValue                 // "v" or "v/n" (from v to the field's maximum)
	itemRange                 // "a-b" or "a-b/n"
)

// fieldItem is one element of a comma-separated field.
type fieldItem struct {
	kind       itemKind
	start, end int // the value for itemValue; the bounds as written for itemRange
	step       int // 0 when none was written, or when Quartz ignores it (after a name)
}

// bounds returns the values the item covers before wrapping: start, stop and step.
func (it fieldItem) bounds(f *fieldInfo) (start, stop, step int) {
	step = max(it.step, 1)
	switch it.kind {
	case itemAll:
		return f.min, f.max, step
	case itemValue:
		if it.step > 0 {
			return it.start, f.max, step
		}
		return it.start, it.start, step
	}
	return it.start, it.end, step
}

// all yields the item's values as Quartz's addToSet computes them; a range written high-low wraps. It
// allocates nothing, so that compiling an expression (a year field spans 230 values) stays cheap when a
// caller parses 100,000 of them (internal/loadahead).
func (it fieldItem) all(f *fieldInfo) iter.Seq[int] {
	return func(yield func(int) bool) {
		start, stop, step := it.bounds(f)
		wrap := 0
		if stop < start {
			wrap = f.wrap
			stop += wrap
		}
		for i := start; i <= stop; i += step {
			v := i
			if wrap > 0 {
				v = i % wrap
				if v == 0 && f.min == 1 { // day of month, month and day of week count from 1
					v = wrap
				}
			}
			if !yield(v) {
				return
			}
		}
	}
}

// values lists the item's values (all's, as a slice).
func (it fieldItem) values(f *fieldInfo) []int { return slices.Collect(it.all(f)) }

// addTo adds the item's values, less offset (minYear for years, 0 otherwise), to set.
func (it fieldItem) addTo(f *fieldInfo, set *valueSet, offset int) {
	for v := range it.all(f) {
		set.add(v - offset)
	}
}

// itemError is a problem with one element of a field, before it is given its expression and field.
type itemError struct {
	value string // the offending text; empty for the whole field
	msg   string
}

func errorf(value, format string, args ...any) *itemError {
	return &itemError{value: value, msg: fmt.Sprintf(format, args...)}
}

// parseItem parses one element of a Quartz field: "*", "*/n", "v", "v/n", "a-b" or "a-b/n", where a value
// is a number or, in month and day of week, a three-letter name. s is upper case; orig is as written.
func parseItem(f *fieldInfo, s, orig string) (fieldItem, *itemError) {
	if s == "" {
		return fieldItem{}, errorf("", "empty element in a list")
	}
	if rest, ok := strings.CutPrefix(s, "*"); ok {
		it := fieldItem{kind: itemAll}
		if rest == "" {
			return it, nil
		}
		if rest[0] != '/' {
			return it, errorf(orig, "unexpected %q after \"*\"", rest[:1])
		}
		step, err := parseStep(f, rest[1:], orig, true)
		it.step = step
		return it, err
	}
	start, rest, named, err := parseValue(f, s, orig)
	if err != nil {
		return fieldItem{}, err
	}
	it := fieldItem{kind: itemValue, start: start}
	if r, ok := strings.CutPrefix(rest, "-"); ok {
		end, r, endNamed, err := parseValue(f, r, orig)
		if err != nil {
			return it, err
		}
		if named != endNamed {
			return it, errorf(orig, "a range is written with two numbers or two names")
		}
		if end < start && f.wrap == 0 {
			return it, errorf(orig, "range start %d is after its end %d", start, end)
		}
		it.kind, it.end, rest = itemRange, end, r
	}
	if rest == "" {
		return it, nil
	}
	if rest[0] != '/' {
		return it, errorf(orig, "unexpected %q", rest[:1])
	}
	step, err := parseStep(f, rest[1:], orig, it.kind == itemValue)
	if err != nil {
		return it, err
	}
	if !named || f.stepAfterName { // Quartz ignores a step after a name: JAN-MAR/2 is January to March
		it.step = step
	}
	return it, nil
}

// parseValue parses the number or name at the start of s and returns what follows it.
func parseValue(f *fieldInfo, s, orig string) (v int, rest string, named bool, err *itemError) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 {
		v, ok := parseDigits(s[:n])
		if !ok || v < f.min || v > f.max {
			return 0, "", false, errorf(orig, "value out of range %d-%d", f.min, f.max)
		}
		return v, s[n:], false, nil
	}
	for n < len(s) && s[n] >= 'A' && s[n] <= 'Z' {
		n++
	}
	if n == 0 {
		if s == "" {
			return 0, "", false, errorf(orig, "missing value")
		}
		return 0, "", false, errorf(orig, "unexpected %q", s[:1])
	}
	if f.names == nil {
		return 0, "", false, errorf(orig, "unexpected letters %q: names are only allowed in month and day-of-week", s[:n])
	}
	v, ok := f.names[s[:n]]
	if !ok {
		return 0, "", false, errorf(orig, "unknown name %q: use %s", s[:n], nameHint(f))
	}
	return v, s[n:], true, nil
}

func nameHint(f *fieldInfo) string {
	if f.name == FieldMonth {
		return "JAN-DEC or 1-12"
	}
	return fmt.Sprintf("SUN-SAT or %d-%d", f.min, f.max)
}

// parseStep parses the number after "/". Quartz limits it for "*/n" and "v/n" (checked), not for "a-b/n".
func parseStep(f *fieldInfo, s, orig string, checked bool) (int, *itemError) {
	step, ok := parseDigits(s)
	switch {
	case !ok:
		return 0, errorf(orig, "\"/\" must be followed by a number")
	case checked && f.maxStep > 0 && (step < 1 || step > f.maxStep):
		return 0, errorf(orig, "step out of range 1-%d", f.maxStep)
	case step < 1:
		return 0, errorf(orig, "step must be at least 1")
	}
	return step, nil
}
