package cronexpr

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// javaShortIDs maps the three-letter time-zone ids java.util.TimeZone still accepts (ElasticJob passes its
// timeZone to it) to the IANA zones Java resolves them to. Only ids the IANA database lacks are listed:
// EST, MST, HST and the like load directly.
var javaShortIDs = map[string]string{
	"ACT": "Australia/Darwin",
	"AET": "Australia/Sydney",
	"AGT": "America/Argentina/Buenos_Aires",
	"ART": "Africa/Cairo",
	"AST": "America/Anchorage",
	"BET": "America/Sao_Paulo",
	"BST": "Asia/Dhaka",
	"CAT": "Africa/Harare",
	"CNT": "America/St_Johns",
	"CST": "America/Chicago",
	"CTT": "Asia/Shanghai",
	"EAT": "Africa/Addis_Ababa",
	"ECT": "Europe/Paris",
	"IET": "America/Indiana/Indianapolis",
	"IST": "Asia/Kolkata",
	"JST": "Asia/Tokyo",
	"MIT": "Pacific/Apia",
	"NET": "Asia/Yerevan",
	"NST": "Pacific/Auckland",
	"PLT": "Asia/Karachi",
	"PNT": "America/Phoenix",
	"PRT": "America/Puerto_Rico",
	"PST": "America/Los_Angeles",
	"SST": "Pacific/Guadalcanal",
	"VST": "Asia/Ho_Chi_Minh",
}

// LoadLocation resolves a job's timeZone: "" is UTC; otherwise an IANA name ("Asia/Shanghai"), a Java
// custom id as ElasticJob users write it ("GMT+8", "GMT+08:00", "GMT-0530", "GMT"), "UTC", or one of Java's
// three-letter ids ("CTT", "PST"). Java silently falls back to GMT for an id it does not know; LoadLocation
// returns an error instead, so a typo cannot move a job's schedule by hours.
//
// Jobs with the same timeZone share one *time.Location, and schedules parsed for a location LoadLocation
// returned compute in it without asking package time.
func LoadLocation(tz string) (*time.Location, error) {
	if loc, ok := locations.Load(tz); ok {
		return loc.(*time.Location), nil
	}
	loc, err := loadLocation(tz)
	if err != nil {
		return nil, err
	}
	if loc != time.UTC {
		zoneTables.LoadOrStore(loc, newZoneTable(loc))
	}
	stored, _ := locations.LoadOrStore(tz, loc)
	return stored.(*time.Location), nil
}

// locations holds what LoadLocation returned, by name; errors are not kept.
var locations sync.Map // string -> *time.Location

func loadLocation(tz string) (*time.Location, error) {
	switch tz {
	case "", "UTC":
		return time.UTC, nil
	case "GMT":
		return time.FixedZone("GMT", 0), nil
	case "Local":
		// time.LoadLocation would return the machine's zone: peers must agree on when a job fires.
		return nil, fmt.Errorf("time zone %q is not allowed: name the zone, such as %q", tz, "Asia/Shanghai")
	}
	if rest, ok := strings.CutPrefix(tz, "GMT"); ok && (rest[0] == '+' || rest[0] == '-') {
		offset, ok := parseGMTOffset(rest)
		if !ok {
			return nil, fmt.Errorf("time zone %q: a GMT offset is written GMT+8, GMT+08:00 or GMT-0530 (hours 0-23, minutes 0-59)", tz)
		}
		return time.FixedZone(formatGMTOffset(offset), offset), nil
	}
	if name, ok := javaShortIDs[tz]; ok {
		tz = name
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as %q or a GMT offset such as %q", tz, "Asia/Shanghai", "GMT+8")
	}
	return loc, nil
}

// parseGMTOffset parses what follows "GMT" in a Java custom time-zone id, as java.util.TimeZone does: a sign,
// then H, HH, H:MM, HH:MM, HMM or HHMM. It returns the offset in seconds east of UTC.
func parseGMTOffset(s string) (int, bool) {
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	s = s[1:]
	var hours, minutes string
	switch {
	case strings.Contains(s, ":"):
		hours, minutes, _ = strings.Cut(s, ":")
		if len(minutes) != 2 {
			return 0, false
		}
	case len(s) <= 2:
		hours = s
	default: // HMM or HHMM
		hours, minutes = s[:len(s)-2], s[len(s)-2:]
	}
	if len(hours) < 1 || len(hours) > 2 {
		return 0, false
	}
	h, ok := parseDigits(hours)
	if !ok || h > 23 {
		return 0, false
	}
	m := 0
	if minutes != "" {
		if m, ok = parseDigits(minutes); !ok || m > 59 {
			return 0, false
		}
	}
	return sign * (h*3600 + m*60), true
}

// formatGMTOffset names a fixed zone the way Java normalizes a custom id: "GMT+08:00".
func formatGMTOffset(offset int) string {
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	return fmt.Sprintf("GMT%c%02d:%02d", sign, offset/3600, offset/60%60)
}

// parseDigits parses a short run of ASCII digits; it rejects signs, spaces and anything else strconv allows.
func parseDigits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func isDigits(s string) bool {
	_, ok := parseDigits(s)
	return ok
}
