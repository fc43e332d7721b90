package cronexpr

import (
	"strings"
	"time"
)

// quartzField is one field of a Quartz expression as parsed: the list of items, or one of the special
// day forms.
type quartzField struct {
	text        string
	items       []fieldItem
	unspecified bool // "?"

	// Day-of-month forms.
	lastDay        bool // "L", "L-n", "LW", "L-nW"
	lastDayOffset  int
	nearestWeekday bool // "nW", "LW", "L-nW"

	// Day-of-week forms; the weekday is items[0].start.
	lastOfMonth bool // "nL": the last one of the month
	nth         int  // "n#k": the k-th one of the month
}

// parseQuartz parses the 6 or 7 fields of a Quartz expression.
func parseQuartz(expr string, texts []string, loc *time.Location) (*quartzSchedule, error) {
	s := &quartzSchedule{loc: loc, zones: zoneTableOf(loc)}
	if len(texts) == 6 {
		texts = append(texts, "*")
	}
	for i, text := range texts {
		f := &quartzFieldInfos[i]
		field, err := parseQuartzField(f, text)
		if err != nil {
			value := err.value
			if value == "" {
				value = text
			}
			return nil, &ParseError{Expr: expr, Field: f.name, Value: value, Msg: err.msg}
		}
		s.fields[i] = field
	}
	dom, dow := &s.fields[3], &s.fields[5]
	switch {
	case dom.unspecified && dow.unspecified:
		return nil, &ParseError{Expr: expr, Field: FieldDayOfWeek, Value: dow.text,
			Msg: `"?" goes in day-of-month or day-of-week, not both`}
	case !dom.unspecified && !dow.unspecified:
		if dom.text != "*" || dow.text != "*" {
			return nil, &ParseError{Expr: expr, Field: FieldDayOfWeek, Value: dow.text,
				Msg: `day-of-month and day-of-week are both set: put "?" in one of them`}
		}
		// ejserver's one extension to Quartz: "*" in both day fields means every day.
		*dow = quartzField{text: "?", unspecified: true}
	}
	s.compile()
	return s, nil
}

// compile fills in the value sets and flags Next works from.
func (s *quartzSchedule) compile() {
	sets := [7]*valueSet{&s.seconds, &s.minutes, &s.hours, &s.daysOfMonth, &s.months, &s.daysOfWeek, &s.years}
	for i := range s.fields {
		offset := 0
		if i == 6 {
			offset = minYear
		}
		for _, it := range s.fields[i].items {
			it.addTo(&quartzFieldInfos[i], sets[i], offset)
		}
	}
	dom, dow := &s.fields[3], &s.fields[5]
	s.domUnspecified, s.dowUnspecified = dom.unspecified, dow.unspecified
	s.lastDayOfMonth, s.lastDayOffset, s.nearestWeekday = dom.lastDay, dom.lastDayOffset, dom.nearestWeekday
	s.lastDayOfWeek, s.nthDayOfWeek = dow.lastOfMonth, dow.nth
}

// parseQuartzField parses one field. It accepts what Quartz 2.3.2 accepts, with Quartz's meaning, except text
// Quartz silently ignores (trailing characters, empty list elements, a step of 0) and forms it accepts but
// cannot evaluate ("L" outside the day fields, "W" after a list or range, "#" or "L" with a list): those are
// errors here.
func parseQuartzField(f *fieldInfo, text string) (quartzField, *itemError) {
	field := quartzField{text: text}
	upper := strings.ToUpper(text)
	for i := 0; i < len(upper); i++ {
		if c := upper[i]; !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || strings.IndexByte("*?/,#-", c) >= 0) {
			return field, errorf(text, "unexpected character %q", text[i:i+1])
		}
	}
	isDay := f.name == FieldDayOfMonth || f.name == FieldDayOfWeek
	switch {
	case upper == "?":
		if !isDay {
			return field, errorf(text, `"?" is only allowed in day-of-month and day-of-week`)
		}
		field.unspecified = true
		return field, nil
	case strings.Contains(upper, "?"):
		if !isDay {
			return field, errorf(text, `"?" is only allowed in day-of-month and day-of-week`)
		}
		return field, errorf(text, `"?" stands alone in its field`)
	case f.name == FieldDayOfMonth:
		if done, err := parseDayOfMonthForm(f, upper, text, &field); done || err != nil {
			return field, err
		}
	case f.name == FieldDayOfWeek:
		if done, err := parseDayOfWeekForm(f, upper, text, &field); done || err != nil {
			return field, err
		}
	case strings.Contains(upper, "#"):
		return field, errorf(text, `"#" is only allowed in day-of-week`)
	}
	origItems := strings.Split(text, ",")
	for i, s := range strings.Split(upper, ",") {
		it, err := parseItem(f, s, origItems[i])
		if err != nil {
			if err.value == "" {
				err.value = text
			}
			return field, err
		}
		field.items = append(field.items, it)
	}
	return field, nil
}

// parseDayOfMonthForm parses the day-of-month forms with "L" and "W": L, L-n, LW, L-nW and nW. done reports
// that the field was one of them.
func parseDayOfMonthForm(f *fieldInfo, upper, text string, field *quartzField) (done bool, err *itemError) {
	if strings.Contains(upper, "#") {
		return false, errorf(text, `"#" is only allowed in day-of-week`)
	}
	if rest, ok := strings.CutPrefix(upper, "L"); ok {
		if strings.Contains(rest, ",") {
			return false, errorf(text, `"L" cannot be combined with other days`)
		}
		field.lastDay = true
		if r, ok := strings.CutSuffix(rest, "W"); ok {
			field.nearestWeekday, rest = true, r
		}
		if rest == "" {
			return true, nil
		}
		r, ok := strings.CutPrefix(rest, "-")
		if !ok {
			return false, errorf(text, `"L" in day-of-month is written L, L-n, LW or L-nW`)
		}
		n, ok := parseDigits(r)
		if !ok || n > 30 {
			return false, errorf(text, `the offset in "L-n" must be a number from 0 to 30`)
		}
		if n > 27 && field.nearestWeekday {
			// February has no such day: Quartz then moves between January and February forever.
			return false, errorf(text, `the offset in "L-nW" must be a number from 0 to 27`)
		}
		field.lastDayOffset = n
		return true, nil
	}
	if strings.Contains(upper, "L") {
		return false, errorf(text, `"L" in day-of-month is written L, L-n, LW or L-nW, alone in its field`)
	}
	if day, ok := strings.CutSuffix(upper, "W"); ok && !strings.ContainsAny(day, "W,-/*") {
		v, ok := parseDigits(day)
		if !ok || v < f.min || v > f.max {
			return false, errorf(text, `"W" must follow a single day of month, 1-31`)
		}
		field.nearestWeekday = true
		field.items = []fieldItem{{kind: itemValue, start: v}}
		return true, nil
	}
	if strings.Contains(upper, "W") {
		return false, errorf(text, `"W" must follow a single day of month, alone in its field, such as 15W`)
	}
	return false, nil
}

// parseDayOfWeekForm parses the day-of-week forms with "L" and "#": L (Saturday, as Quartz reads it), nL and
// n#k, where n is 1-7 or a name. done reports that the field was one of them.
func parseDayOfWeekForm(f *fieldInfo, upper, text string, field *quartzField) (done bool, err *itemError) {
	if upper == "L" {
		field.items = []fieldItem{{kind: itemValue, start: 7}}
		return true, nil
	}
	day, nth, isNth := strings.Cut(upper, "#")
	day, isLast := strings.CutSuffix(day, "L")
	if !isNth && !isLast {
		if strings.Contains(upper, "L") {
			return false, errorf(text, `"L" in day-of-week is written L or nL (such as 6L or FRIL), alone in its field`)
		}
		return false, nil
	}
	if strings.ContainsAny(day, ",-/*L#") || strings.ContainsAny(nth, ",-/*L#") {
		if isNth {
			return false, errorf(text, `"#" is written n#k (such as 6#3 or FRI#3), alone in its field`)
		}
		return false, errorf(text, `"L" in day-of-week is written L or nL (such as 6L or FRIL), alone in its field`)
	}
	if _, known := f.names[day]; isLast && !isNth && !known && !isDigits(day) {
		return false, nil // not nL: a name such as JUL, which the item parser reports
	}
	v, rest, _, err := parseValue(f, day, text)
	if err != nil {
		return false, err
	}
	if rest != "" {
		return false, errorf(text, "unexpected %q", rest[:1])
	}
	field.items = []fieldItem{{kind: itemValue, start: v}}
	if isLast {
		if isNth {
			return false, errorf(text, `"L" and "#" cannot be combined`)
		}
		field.lastOfMonth = true
		return true, nil
	}
	k, ok := parseDigits(nth)
	if !ok || k < 1 || k > 5 {
		return false, errorf(text, `"#" must be followed by a number from 1 to 5`)
	}
	field.nth = k
	return true, nil
}
