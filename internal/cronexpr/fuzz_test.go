package cronexpr

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var fuzzZones = func() []*time.Location {
	var locs []*time.Location
	for _, tz := range []string{"UTC", "GMT+8", "America/New_York", "Europe/London", "Australia/Lord_Howe",
		"America/Santiago", "Pacific/Chatham"} {
		loc, err := LoadLocation(tz)
		if err != nil {
			panic(err)
		}
		locs = append(locs, loc)
	}
	return locs
}()

// FuzzParse checks that Parse and Describe never panic, that Parse fails only with a *ParseError, and that
// a parsed schedule's Next moves forward: Next(t) is after t, and for t1 < t2 Next(t1) <= Next(t2), with
// nothing between t1 and Next(t1). The last two exclude instants in the first pass of a fall-back repeat,
// which Quartz reads as the second pass (see TestNextQuartzDST).
func FuzzParse(f *testing.F) {
	seeds := []string{
		"0/5 * * * * ?", "0 15 10 L * ?", "0 15 10 ? * 6#3", "0 0 12 15W * ?", "0 0 12 * * ? 2030", "0 0 12 * * *",
		"0 0 12 LW * ?", "0 0 12 L-3W * ?", "0 0 12 ? * FRIL", "0 0 0 ? JAN-MAR/2 TUE#2", "0 0 0 31W * ?",
		"0 0 0 31 2 ?", "0 0 0 1 1 ? 2099", "0 0 22-2 ? * SAT-SUN", "0 0-59/100 * * * ?", "59 59 23 L * ? 2099",
		"*/5 * * * *", "0 9 * * 1-5", "0 0 1 * 1", "30 2 * * 7", "0 12 31 2 *", "@hourly", "@daily", "@weekly",
		"@monthly", "@yearly", "@every 90s", "@every 1h30m", "@every 0s", "@bogus",
		"", " ", "?", "0 0 *", "0 0 0 * * ? 2030 x", "CRON_TZ=UTC * * * * *", "60 * * * * ?", "0 0 0 ? * 9#3",
		"0 0 0 L-29W * ?", "0 0 0 0W * ?", "L * * * * ?", "0 0 0 ?,5 * ?", "0 0 0 ? * 1#1,2", "*/0 * * * * ?",
		"0 0 0 ? * MONDAY", "0 5x * * * ?", "0 0 0 1-15W * ?", "0 0 0 L,5 * ?", "99 * * * * ?", "0 0 0 * * ? 1969",
		"0 0 0 ? * L", "0 0 0 ? * 7-1", "0 0 0 25-5 * ?", "0 0 0 ? 12-2 *", "0 0 0 ? * 2-1/2", "\t0\t0 0 * * ?",
		"0 0 0 * * \xff", "0 0 0 ? * 6#", "0 0 0 L- * ?", "0 0 0 ? * #3", "0 0 0 ? * L#3", "0 0 0 W * ?",
	}
	for _, v := range readVectors(f, filepath.Join("testdata", "quartz-vectors.jsonl")) {
		seeds = append(seeds, v.Cron)
	}
	for i, s := range seeds {
		f.Add(s, int64(1_700_000_000+i*7_919_111), int64(i*86_413), uint8(i))
	}
	f.Fuzz(func(t *testing.T, expr string, from, delta int64, zone uint8) {
		desc := Describe(expr)
		loc := fuzzZones[int(zone)%len(fuzzZones)]
		s, err := Parse(expr, loc)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !validFields[pe.Field] || pe.Msg == "" || pe.Expr != strings.TrimSpace(expr) {
				t.Fatalf("Parse(%q) error %#v is not a complete *ParseError", expr, err)
			}
			if desc != "" {
				t.Errorf("Describe(%q) = %q for an expression that does not parse", expr, desc)
			}
			return
		}
		// from within 1965-2105, to reach past both ends of the year range.
		const span = 140 * 365 * 86400
		t1 := time.Unix(-5*365*86400+mod(from, span), 0).In(loc)
		t2 := t1.Add(time.Duration(mod(delta, 400*86400)) * time.Second)
		n1 := s.Next(t1)
		if n1.IsZero() {
			return
		}
		if !n1.After(t1) {
			t.Fatalf("%q in %v: Next(%v) = %v, not after", expr, loc, t1, n1)
		}
		if n := s.Next(n1); !n.IsZero() && !n.After(n1) {
			t.Fatalf("%q in %v: Next(%v) = %v, not after", expr, loc, n1, n)
		}
		if inFirstPass(t1) || inFirstPass(t2) {
			return
		}
		n2 := s.Next(t2)
		if !n2.IsZero() && n2.Before(n1) {
			t.Fatalf("%q in %v: Next(%v) = %v but Next(%v) = %v: not monotonic", expr, loc, t1, n1, t2, n2)
		}
		if _, every := s.(everySchedule); !every && t2.Before(n1) && !n2.Equal(n1) {
			t.Fatalf("%q in %v: Next(%v) = %v but Next(%v) = %v: a fire time between", expr, loc, t1, n1, t2, n2)
		}
	})
}

func mod(a, b int64) int64 {
	return (a%b + b) % b
}

// inFirstPass reports whether t is in a stretch of wall-clock time that will repeat when clocks are set back.
func inFirstPass(t time.Time) bool {
	_, end := t.ZoneBounds()
	if end.IsZero() {
		return false
	}
	_, offset := t.Zone()
	_, after := end.Zone()
	return after < offset && end.Sub(t) <= time.Duration(offset-after)*time.Second
}
