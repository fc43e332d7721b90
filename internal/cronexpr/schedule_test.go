package cronexpr

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// nextTimes asks s for n fire times, each after the one before, starting after from.
func nextTimes(s Schedule, from time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		from = s.Next(from)
		if from.IsZero() {
			break
		}
		out = append(out, from)
	}
	return out
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type nextTest struct {
	zone string
	from string // RFC 3339
	expr string
	want []string // RFC 3339; fewer than asked for means no further fire time
}

func runNextTests(t *testing.T, tests []nextTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.zone+"/"+tt.expr+"/"+tt.from, func(t *testing.T) {
			t.Parallel()
			loc, err := LoadLocation(tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(tt.expr, loc)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.expr, err)
			}
			got := nextTimes(s, mustTime(t, tt.from), len(tt.want)+1)
			if len(got) > len(tt.want) && len(tt.want) >= 4 {
				got = got[:len(tt.want)] // asked for one more to see that there is none; none was expected
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d fire times %v, want %d %v", len(got), got, len(tt.want), tt.want)
			}
			for i, g := range got {
				if w := mustTime(t, tt.want[i]); !g.Equal(w) {
					t.Errorf("fire %d = %s, want %s", i+1, g.Format(time.RFC3339), tt.want[i])
				}
				if g.Location() != loc {
					t.Errorf("fire %d in %v, want %v", i+1, g.Location(), loc)
				}
			}
		})
	}
}

// TestNextQuartz checks Quartz expressions against what Quartz 2.3.2 computes (tools/CronOracle.java).
func TestNextQuartz(t *testing.T) {
	t.Parallel()
	runNextTests(t, []nextTest{
		{"UTC", "2026-01-01T00:00:00Z", "0 15 10 L * ?", []string{"2026-01-31T10:15:00Z", "2026-02-28T10:15:00Z", "2026-03-31T10:15:00Z", "2026-04-30T10:15:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 15 10 ? * 6#3", []string{"2026-01-16T10:15:00Z", "2026-02-20T10:15:00Z", "2026-03-20T10:15:00Z", "2026-04-17T10:15:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 12 15W * ?", []string{"2026-01-15T12:00:00Z", "2026-02-16T12:00:00Z", "2026-03-16T12:00:00Z", "2026-04-15T12:00:00Z"}},
		{"UTC", "2026-07-01T00:00:00Z", "0 0 12 15W * ?", []string{"2026-07-15T12:00:00Z", "2026-08-14T12:00:00Z", "2026-09-15T12:00:00Z", "2026-10-15T12:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 12 * * ? 2030", []string{"2030-01-01T12:00:00Z", "2030-01-02T12:00:00Z", "2030-01-03T12:00:00Z", "2030-01-04T12:00:00Z"}},
		{"UTC", "2026-03-01T10:00:02.5Z", "0/5 * * * * ?", []string{"2026-03-01T10:00:05Z", "2026-03-01T10:00:10Z", "2026-03-01T10:00:15Z", "2026-03-01T10:00:20Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 12 1W * ?", []string{"2026-01-01T12:00:00Z", "2026-02-02T12:00:00Z", "2026-03-02T12:00:00Z", "2026-04-01T12:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 12 LW * ?", []string{"2026-01-30T12:00:00Z", "2026-02-27T12:00:00Z", "2026-03-31T12:00:00Z", "2026-04-30T12:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 15 10 L-2 * ?", []string{"2026-01-29T10:15:00Z", "2026-02-26T10:15:00Z", "2026-03-29T10:15:00Z", "2026-04-28T10:15:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 15 10 ? * 6L", []string{"2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z", "2026-03-27T10:15:00Z", "2026-04-24T10:15:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 0 ? * 2#5", []string{"2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z", "2026-08-31T00:00:00Z", "2026-11-30T00:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 0 29 2 ?", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z", "2040-02-29T00:00:00Z"}},
		{"UTC", "2026-01-01T21:00:00Z", "0 0 22-2 * * ?", []string{"2026-01-01T22:00:00Z", "2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z", "2026-01-02T01:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 9 ? NOV-FEB MON", []string{"2026-01-05T09:00:00Z", "2026-01-12T09:00:00Z", "2026-01-19T09:00:00Z", "2026-01-26T09:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 8-18/4 ? * MON-FRI", []string{"2026-01-01T08:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T16:00:00Z", "2026-01-02T08:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "10-40/10 5,7 3 1 1 ? 2027", []string{"2027-01-01T03:05:10Z", "2027-01-01T03:05:20Z", "2027-01-01T03:05:30Z", "2027-01-01T03:05:40Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 15 10 l * ?", []string{"2026-01-31T10:15:00Z", "2026-02-28T10:15:00Z", "2026-03-31T10:15:00Z", "2026-04-30T10:15:00Z"}},
		// Quartz's own readings, kept: a step after a name is ignored, "L" alone in day-of-week is Saturday,
		// and 31W in a 30-day month looks at the 1st of the next.
		{"UTC", "2026-01-01T00:00:00Z", "0 0 0 ? JAN-MAR/2 TUE#2", []string{"2026-01-13T00:00:00Z", "2026-02-10T00:00:00Z", "2026-03-10T00:00:00Z", "2027-01-12T00:00:00Z"}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 0 ? * L", []string{"2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z", "2026-01-17T00:00:00Z", "2026-01-24T00:00:00Z"}},
		{"UTC", "2026-04-01T00:00:00Z", "0 0 0 31W * ?", []string{"2026-05-29T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z", "2026-10-30T00:00:00Z"}},
		// ejserver's extension: "*" in both day fields is every day.
		{"UTC", "2026-01-30T23:00:00Z", "0 0 12 * * *", []string{"2026-01-31T12:00:00Z", "2026-02-01T12:00:00Z", "2026-02-02T12:00:00Z", "2026-02-03T12:00:00Z"}},
		// A time zone in Java's custom-id form.
		{"GMT+8", "2026-01-01T00:00:00+08:00", "0 0 9 * * ?", []string{"2026-01-01T09:00:00+08:00", "2026-01-02T09:00:00+08:00", "2026-01-03T09:00:00+08:00", "2026-01-04T09:00:00+08:00"}},
		{"GMT-0530", "2026-01-01T00:00:00Z", "0 0 9 * * ?", []string{"2026-01-01T09:00:00-05:30", "2026-01-02T09:00:00-05:30", "2026-01-03T09:00:00-05:30", "2026-01-04T09:00:00-05:30"}},
		// The last fire times: the year field ends in 2099.
		{"UTC", "2026-01-01T00:00:00Z", "0 0 0 1 1 ? 2099", []string{"2099-01-01T00:00:00Z"}},
		{"UTC", "2099-06-01T00:00:00Z", "0 0 0 1 1 ?", []string{}},
		{"UTC", "2026-01-01T00:00:00Z", "0 0 0 31 2 ?", []string{}},
	})
}

// TestNextQuartzDST checks what Quartz does around DST transitions: a fire time in a spring-forward gap is
// skipped (except that an hour a gap swallows moves the minutes after it: 0/15 at 02:00 in Lord Howe's
// 30-minute gap gives 02:30), and in a fall-back repeat Quartz reads wall times as the second, standard-time
// pass, so a daily 01:30 fires once, at 01:30 standard time.
func TestNextQuartzDST(t *testing.T) {
	t.Parallel()
	runNextTests(t, []nextTest{
		{"America/New_York", "2026-03-08T00:00:00-05:00", "0 30 2 * * ?", []string{"2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00", "2026-03-11T02:30:00-04:00", "2026-03-12T02:30:00-04:00"}},
		{"America/New_York", "2026-03-08T00:00:00-05:00", "0 30 * * * ?", []string{"2026-03-08T00:30:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00", "2026-03-08T04:30:00-04:00"}},
		{"America/New_York", "2026-11-01T00:00:00-04:00", "0 30 1 * * ?", []string{"2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00", "2026-11-03T01:30:00-05:00", "2026-11-04T01:30:00-05:00"}},
		{"America/New_York", "2026-11-01T00:00:00-04:00", "0 0/30 * * * ?", []string{"2026-11-01T00:30:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"America/New_York", "2026-11-01T01:10:00-04:00", "0 * * * * ?", []string{"2026-11-01T01:11:00-05:00", "2026-11-01T01:12:00-05:00", "2026-11-01T01:13:00-05:00", "2026-11-01T01:14:00-05:00"}},
		{"Europe/London", "2026-03-29T00:00:00Z", "0 30 1 * * ?", []string{"2026-03-30T01:30:00+01:00", "2026-03-31T01:30:00+01:00", "2026-04-01T01:30:00+01:00", "2026-04-02T01:30:00+01:00"}},
		{"Europe/London", "2026-03-29T00:00:00Z", "0 0/20 0-2 * * ?", []string{"2026-03-29T00:20:00Z", "2026-03-29T00:40:00Z", "2026-03-29T02:00:00+01:00", "2026-03-29T02:20:00+01:00"}},
		{"Europe/London", "2026-10-25T00:00:00+01:00", "0 30 1 * * ?", []string{"2026-10-25T01:30:00Z", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z"}},
		{"Europe/London", "2026-10-25T00:00:00+01:00", "0 0/20 0-2 * * ?", []string{"2026-10-25T00:20:00+01:00", "2026-10-25T00:40:00+01:00", "2026-10-25T01:00:00Z", "2026-10-25T01:20:00Z"}},
		{"Australia/Lord_Howe", "2026-10-04T00:00:00+10:30", "0 0/15 2 * * ?", []string{"2026-10-04T02:30:00+11:00", "2026-10-04T02:45:00+11:00", "2026-10-05T02:00:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"Australia/Lord_Howe", "2026-10-04T00:00:00+10:30", "0 15 2 * * ?", []string{"2026-10-05T02:15:00+11:00", "2026-10-06T02:15:00+11:00", "2026-10-07T02:15:00+11:00", "2026-10-08T02:15:00+11:00"}},
		{"Australia/Lord_Howe", "2026-04-05T01:00:00+11:00", "0 45 1 * * ?", []string{"2026-04-05T01:45:00+10:30", "2026-04-06T01:45:00+10:30", "2026-04-07T01:45:00+10:30", "2026-04-08T01:45:00+10:30"}},
		{"Australia/Lord_Howe", "2026-04-05T01:00:00+11:00", "0 0/20 1-2 * * ?", []string{"2026-04-05T01:20:00+11:00", "2026-04-05T01:40:00+10:30", "2026-04-05T02:00:00+10:30", "2026-04-05T02:20:00+10:30"}},
	})
}

// TestNextUnix checks 5-field expressions and descriptors, which robfig/cron evaluates: day of week 0-7
// (Sunday 0 or 7), names, and the Vixie rule that with both day fields restricted either one matches.
func TestNextUnix(t *testing.T) {
	t.Parallel()
	runNextTests(t, []nextTest{
		{"UTC", "2026-11-20T10:07:00Z", "*/15 * * * *", []string{"2026-11-20T10:15:00Z", "2026-11-20T10:30:00Z", "2026-11-20T10:45:00Z", "2026-11-20T11:00:00Z"}},
		{"UTC", "2026-11-20T10:00:00Z", "0 9 * * 1-5", []string{"2026-11-23T09:00:00Z", "2026-11-24T09:00:00Z", "2026-11-25T09:00:00Z", "2026-11-26T09:00:00Z"}},
		{"UTC", "2026-11-21T00:00:00Z", "0 0 1 * 1", []string{"2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-07T00:00:00Z"}},
		{"UTC", "2026-11-21T00:00:00Z", "30 2 * * 7", []string{"2026-11-22T02:30:00Z", "2026-11-29T02:30:00Z", "2026-12-06T02:30:00Z", "2026-12-13T02:30:00Z"}},
		{"UTC", "2026-11-21T00:00:00Z", "0 0 * * 5-7", []string{"2026-11-22T00:00:00Z", "2026-11-27T00:00:00Z", "2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z"}},
		{"UTC", "2026-11-21T00:00:00Z", "0 12 * jan,jul mon", []string{"2027-01-04T12:00:00Z", "2027-01-11T12:00:00Z", "2027-01-18T12:00:00Z", "2027-01-25T12:00:00Z"}},
		{"UTC", "2026-11-21T00:00:00Z", "0 0 1 1-12/3 ?", []string{"2027-01-01T00:00:00Z", "2027-04-01T00:00:00Z", "2027-07-01T00:00:00Z", "2027-10-01T00:00:00Z"}},
		{"GMT+8", "2026-11-21T00:00:00+08:00", "0 9 * * *", []string{"2026-11-21T09:00:00+08:00", "2026-11-22T09:00:00+08:00", "2026-11-23T09:00:00+08:00", "2026-11-24T09:00:00+08:00"}},
		{"UTC", "2026-11-21T00:00:00Z", "0 12 31 2 *", []string{}},
		{"UTC", "2026-11-21T10:20:00Z", "@hourly", []string{"2026-11-21T11:00:00Z", "2026-11-21T12:00:00Z", "2026-11-21T13:00:00Z", "2026-11-21T14:00:00Z"}},
		{"UTC", "2026-11-21T10:20:00Z", "@daily", []string{"2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"}},
		{"UTC", "2026-11-21T10:20:00Z", "@midnight", []string{"2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"}},
		{"UTC", "2026-11-21T10:20:00Z", "@weekly", []string{"2026-11-22T00:00:00Z", "2026-11-29T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z"}},
		{"UTC", "2026-11-21T10:20:00Z", "@monthly", []string{"2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z", "2027-03-01T00:00:00Z"}},
		{"UTC", "2026-11-21T10:20:00Z", "@yearly", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z", "2030-01-01T00:00:00Z"}},
		{"Asia/Shanghai", "2026-11-21T10:20:00+08:00", "@annually", []string{"2027-01-01T00:00:00+08:00", "2028-01-01T00:00:00+08:00", "2029-01-01T00:00:00+08:00", "2030-01-01T00:00:00+08:00"}},
		{"GMT+8", "2026-11-21T10:00:00.5+08:00", "@every 90s", []string{"2026-11-21T10:01:30+08:00", "2026-11-21T10:03:00+08:00", "2026-11-21T10:04:30+08:00", "2026-11-21T10:06:00+08:00"}},
	})
}

// TestNextUnixDST checks 5-field expressions around DST: a fire time in a spring-forward gap is skipped,
// as by robfig/cron and Quartz; in a fall-back repeat a schedule with a fixed minute and hour fires once, in
// the first pass, and one whose minute or hour starts with "*" fires in both, as Vixie cron does.
func TestNextUnixDST(t *testing.T) {
	t.Parallel()
	runNextTests(t, []nextTest{
		{"America/New_York", "2026-03-07T12:00:00-05:00", "30 2 * * *", []string{"2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00", "2026-03-11T02:30:00-04:00", "2026-03-12T02:30:00-04:00"}},
		{"America/New_York", "2026-03-08T00:00:00-05:00", "30 * * * *", []string{"2026-03-08T00:30:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00", "2026-03-08T04:30:00-04:00"}},
		{"America/New_York", "2026-10-31T12:00:00-04:00", "30 1 * * *", []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00", "2026-11-03T01:30:00-05:00", "2026-11-04T01:30:00-05:00"}},
		{"America/New_York", "2026-11-01T00:45:00-04:00", "*/30 * * * *", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00"}},
		{"America/New_York", "2026-11-01T00:45:00-04:00", "0,30 1 * * *", []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:00:00-05:00", "2026-11-02T01:30:00-05:00"}},
		{"Europe/London", "2026-03-28T12:00:00Z", "30 1 * * *", []string{"2026-03-30T01:30:00+01:00", "2026-03-31T01:30:00+01:00", "2026-04-01T01:30:00+01:00", "2026-04-02T01:30:00+01:00"}},
		{"Europe/London", "2026-10-24T12:00:00+01:00", "30 1 * * *", []string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z", "2026-10-27T01:30:00Z", "2026-10-28T01:30:00Z"}},
		{"Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", "15 2 * * *", []string{"2026-10-05T02:15:00+11:00", "2026-10-06T02:15:00+11:00", "2026-10-07T02:15:00+11:00", "2026-10-08T02:15:00+11:00"}},
		{"Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", "45 1 * * *", []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30", "2026-04-07T01:45:00+10:30", "2026-04-08T01:45:00+10:30"}},
		{"America/New_York", "2026-10-31T12:00:00-04:00", "@daily", []string{"2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00", "2026-11-03T00:00:00-05:00", "2026-11-04T00:00:00-05:00"}},
	})
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr, field, value, msg string
	}{
		{"", FieldExpression, "", "empty expression"},
		{"0 0 *", FieldExpression, "", "found 3"},
		{"0 0 0 * * ? 2030 x", FieldExpression, "", "found 8"},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", FieldExpression, "CRON_TZ=Asia/Tokyo", "set the job's timeZone"},
		{"TZ=UTC 0 9 * * *", FieldExpression, "TZ=UTC", "time-zone prefix"},
		{"@fortnightly", FieldExpression, "@fortnightly", "unknown descriptor"},
		{"@every fast", FieldExpression, "fast", "duration"},
		{"@every 500ms", FieldExpression, "500ms", "at least 1s"},
		{"@every 1.5s", FieldExpression, "1.5s", "whole number of seconds"},
		{"60 0 0 * * ?", FieldSecond, "60", "value out of range 0-59"},
		{"0 60 0 * * ?", FieldMinute, "60", "value out of range 0-59"},
		{"0 0 25 * * ?", FieldHour, "25", "value out of range 0-23"},
		{"0 0 1,25 * * ?", FieldHour, "25", "value out of range 0-23"},
		{"0 0 0 32 * ?", FieldDayOfMonth, "32", "value out of range 1-31"},
		{"0 0 0 0 * ?", FieldDayOfMonth, "0", "value out of range 1-31"},
		{"0 0 0 ? 13 *", FieldMonth, "13", "value out of range 1-12"},
		{"0 0 0 ? JANUARY *", FieldMonth, "JANUARY", `unknown name "JANUARY"`},
		{"0 0 0 ? * 8", FieldDayOfWeek, "8", "value out of range 1-7"},
		{"0 0 0 ? * 0", FieldDayOfWeek, "0", "value out of range 1-7"},
		{"0 0 0 ? * MONDAY", FieldDayOfWeek, "MONDAY", `unknown name "MONDAY"`},
		{"0 0 0 * * ? 1969", FieldYear, "1969", "value out of range 1970-2099"},
		{"0 0 0 * * ? 2100", FieldYear, "2100", "value out of range 1970-2099"},
		{"0 0 0 * * ? 2030-2020", FieldYear, "2030-2020", "range start 2030 is after its end 2020"},
		{"*/60 * * * * ?", FieldSecond, "*/60", "step out of range 1-59"},
		{"0 0 */24 * * ?", FieldHour, "*/24", "step out of range 1-23"},
		{"0 0/0 * * * ?", FieldMinute, "0/0", "step out of range 1-59"},
		{"0 0-30/0 * * * ?", FieldMinute, "0-30/0", "step must be at least 1"},
		{"0 0/ * * * ?", FieldMinute, "0/", `"/" must be followed by a number`},
		{"0 5x * * * ?", FieldMinute, "5x", `unexpected "X"`},
		{"0 *x * * * ?", FieldMinute, "*x", `unexpected "X" after "*"`},
		{"0 1,,2 * * * ?", FieldMinute, "1,,2", "empty element"},
		{"0 0 MON * * ?", FieldHour, "MON", "names are only allowed in month and day-of-week"},
		{"0 0 0 ? JAN-3 *", FieldMonth, "JAN-3", "two numbers or two names"},
		{"0 0 0 ? * ?", FieldDayOfWeek, "?", `"?" goes in day-of-month or day-of-week, not both`},
		{"? 0 0 * * ?", FieldSecond, "?", `"?" is only allowed in day-of-month and day-of-week`},
		{"0 0 0 ?,5 * ?", FieldDayOfMonth, "?,5", `"?" stands alone`},
		{"0 0 0 15W * MON", FieldDayOfWeek, "MON", "both set"},
		{"0 0 0 * * 1-7", FieldDayOfWeek, "1-7", "both set"},
		{"0 0 0 L-31 * ?", FieldDayOfMonth, "L-31", "from 0 to 30"},
		{"0 0 0 L-28W * ?", FieldDayOfMonth, "L-28W", "from 0 to 27"},
		{"0 0 0 L-W * ?", FieldDayOfMonth, "L-W", "L-n"},
		{"0 0 0 L,5 * ?", FieldDayOfMonth, "L,5", `"L" cannot be combined`},
		{"0 0 0 5L * ?", FieldDayOfMonth, "5L", `"L" in day-of-month`},
		{"L 0 0 * * ?", FieldSecond, "L", "unexpected letters"},
		{"0 0 0 32W * ?", FieldDayOfMonth, "32W", `"W" must follow a single day of month, 1-31`},
		{"0 0 0 0W * ?", FieldDayOfMonth, "0W", `"W" must follow a single day of month, 1-31`},
		{"0 0 0 1-15W * ?", FieldDayOfMonth, "1-15W", `"W" must follow a single day`},
		{"0 0 0 ? * 6#6", FieldDayOfWeek, "6#6", "from 1 to 5"},
		{"0 0 0 ? * 9#3", FieldDayOfWeek, "9#3", "value out of range 1-7"},
		{"0 0 0 ? * 1#1,2", FieldDayOfWeek, "1#1,2", `"#" is written n#k`},
		{"0 0 0 5#3 * ?", FieldDayOfMonth, "5#3", `"#" is only allowed in day-of-week`},
		{"0 0 0 ? * 8L", FieldDayOfWeek, "8L", "value out of range 1-7"},
		{"0 0 0 ? * 6L,5", FieldDayOfWeek, "6L,5", `"L" in day-of-week`},
		{"0 0 0 ? * 6L#2", FieldDayOfWeek, "6L#2", `"L" and "#" cannot be combined`},
		{"0 0 0\n* * ?", FieldDayOfMonth, "0\n*", "unexpected character"}, // five fields: Unix
		{"60 * * * *", FieldMinute, "60", "value out of range 0-59"},
		{"0 24 * * *", FieldHour, "24", "value out of range 0-23"},
		{"0 0 * * 8", FieldDayOfWeek, "8", "value out of range 0-7"},
		{"0 0 L * *", FieldDayOfMonth, "L", "Quartz syntax"},
		{"0 0 15W * *", FieldDayOfMonth, "15W", "Quartz syntax"},
		{"0 0 * * 6#3", FieldDayOfWeek, "6#3", "Quartz syntax"},
		{"0 0 * * 5L", FieldDayOfWeek, "5L", "Quartz syntax"},
		{"0 0 * * 5-1", FieldDayOfWeek, "5-1", "range start 5 is after its end 1"},
		{"0 0 * * MON-7", FieldDayOfWeek, "MON-7", "two numbers or two names"},
		{"0 ? * * *", FieldHour, "?", `"?" is only allowed in day-of-month and day-of-week`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tt.expr, time.UTC)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %v, %v; want a *ParseError", tt.expr, s, err)
			}
			if pe.Field != tt.field || pe.Value != tt.value || !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("Parse(%q) = %#v; want field %q, value %q, message containing %q", tt.expr, pe, tt.field, tt.value, tt.msg)
			}
			if pe.Expr != strings.TrimSpace(tt.expr) {
				t.Errorf("Expr = %q, want %q", pe.Expr, tt.expr)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Parse("  0 0 25 * * ? ", time.UTC)
	const want = `cron "0 0 25 * * ?": hour "25": value out of range 0-23`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %s", err, want)
	}
	_, err = Parse("0 0 *", time.UTC)
	if err == nil || !strings.HasPrefix(err.Error(), `cron "0 0 *": expression: expected 5 fields`) {
		t.Errorf("Parse error = %v", err)
	}
}

func TestParseAcceptsWhatQuartzUsersWrite(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		"0 0/5 * * * ?", "0 0 12 ? * MON-FRI", "0 0 12 ? * mon-fri", "0\t0\t12\t*\t*\t?", "  0 0 12 * * ?  ",
		"0 0 12 ? JAN,JUL MON#1", "0 0 12 ? * FRIL", "0 0 12 L-3W * ?", "0 0 12 lw * ?", "0 0 12 15w * ?",
		"0 0 12 * * ? *", "0 0 12 * * ? 2026/2", "0 0 12 05 * ?", "0 0 22-2 ? * SAT-SUN", "0 0 0 ? NOV-FEB *",
		"0 0-59/100 * * * ?", "0 0 0 ? * 1-7", "0 0 0 1 1 ? 1970-2099",
		"0 0 ? * ?", "0 0 * * 0-7", "0 0 * * sun-sat", "0 0 1-31/2 */2 *", "@every 1h",
	} {
		if _, err := Parse(expr, time.UTC); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
}

func TestParseNilLocationIsUTC(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 0 9 * * ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Next = %v, want %v", got, want)
	}
}

func TestNextOutsideTheYearRange(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 0 12 * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		from time.Time
		want time.Time
	}{
		{time.Date(1900, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 12, 0, 0, 0, time.UTC)},
		{time.Time{}, time.Date(1970, 1, 1, 12, 0, 0, 0, time.UTC)},
		{time.Date(2099, 12, 31, 12, 0, 0, 0, time.UTC), time.Time{}},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		{time.Unix(1<<62, 0), time.Time{}},
	}
	for _, tt := range tests {
		if got := s.Next(tt.from); !got.Equal(tt.want) {
			t.Errorf("Next(%v) = %v, want %v", tt.from, got, tt.want)
		}
	}
}

func TestLoadLocation(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		tz     string
		offset int // seconds east of UTC on 2026-07-01
		name   string
	}{
		{"", 0, "UTC"},
		{"UTC", 0, "UTC"},
		{"GMT", 0, "GMT"},
		{"GMT+8", 8 * 3600, "GMT+08:00"},
		{"GMT+08:00", 8 * 3600, "GMT+08:00"},
		{"GMT+8:30", 8*3600 + 1800, "GMT+08:30"},
		{"GMT-0530", -(5*3600 + 1800), "GMT-05:30"},
		{"GMT-5", -5 * 3600, "GMT-05:00"},
		{"GMT+123", 3600 + 23*60, "GMT+01:23"},
		{"GMT+23:59", 23*3600 + 59*60, "GMT+23:59"},
		{"Asia/Shanghai", 8 * 3600, "CST"},
		{"America/New_York", -4 * 3600, "EDT"},
		{"Etc/GMT-8", 8 * 3600, "+08"},
		{"CTT", 8 * 3600, "CST"},
		{"PST", -7 * 3600, "PDT"},
		{"EST", -5 * 3600, "EST"},
	}
	for _, tt := range tests {
		t.Run(tt.tz, func(t *testing.T) {
			t.Parallel()
			loc, err := LoadLocation(tt.tz)
			if err != nil {
				t.Fatal(err)
			}
			name, offset := at.In(loc).Zone()
			if offset != tt.offset || name != tt.name {
				t.Errorf("zone on %v = %s %d, want %s %d", at, name, offset, tt.name, tt.offset)
			}
		})
	}
	for _, tz := range []string{"GMT+24", "GMT+0860", "GMT+1:5", "GMT+", "GMT-", "GMT+ 8", "GMT+08:0", "GMT+12345",
		"GMT+08:00:00", "gmt+8", "UTC+8", "GMT8x", "Local", "Asia/Nowhere", "asia/shanghai", "../etc/passwd", "Z"} {
		if loc, err := LoadLocation(tz); err == nil {
			t.Errorf("LoadLocation(%q) = %v, want an error", tz, loc)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct{ expr, want string }{
		{"0/5 * * * * ?", "every 5 seconds"},
		{"* * * * * ?", "every second"},
		{"0 * * * * ?", "every minute"},
		{"0 */5 * * * ?", "every 5 minutes"},
		{"*/5 * * * *", "every 5 minutes"},
		{"0 0 * * * ?", "every hour"},
		{"0 0 0/2 * * ?", "every 2 hours"},
		{"0 30 * * * ?", "at minute 30 of every hour"},
		{"0 0/15 1-3 * * ?", "every 15 minutes from 01:00 through 03:59"},
		{"0 30 9-17 * * ?", "at minute 30 of every hour from 09:00 through 17:59"},
		{"*/7 */13 */5 * * ?", "every 7 seconds of every 13th minute of every 5th hour"},
		{"0 15 10 L * ?", "at 10:15 on the last day of every month"},
		{"0 15 10 L-2 * ?", "at 10:15 on the 3rd-to-last day of every month"},
		{"0 0 0 LW * ?", "at 00:00 on the last weekday of every month"},
		{"0 0 12 ? * 6#3", "at 12:00 on the third Friday of every month"},
		{"0 15 10 ? * 6L", "at 10:15 on the last Friday of every month"},
		{"0 0 12 15W * ?", "at 12:00 on the weekday nearest the 15th of every month"},
		{"0 0 12 * * ? 2030", "at 12:00 every day in 2030"},
		{"0 0 12 * * ? 2026-2028", "at 12:00 every day in 2026 through 2028"},
		{"0 0 12 ? * * 2028/2", "at 12:00 every day in every 2nd year from 2028"},
		{"0 0 9 ? * MON-FRI", "at 09:00 on Monday through Friday"},
		{"0 0 8-18/4 ? * MON,WED,FRI", "at 08:00, 12:00 and 16:00 on Monday, Wednesday and Friday"},
		{"0 0,30 9,17 * * ?", "at 09:00, 09:30, 17:00 and 17:30 every day"},
		{"0 0 0 1 1 ?", "at 00:00 on the 1st of January"},
		{"0 0 0 L JAN,JUN ?", "at 00:00 on the last day of January and June"},
		{"0 0 0 ? JAN-MAR/2 TUE#2", "at 00:00 on the second Tuesday of January through March"},
		{"0 0 0 ? * L", "at 00:00 on Saturday"},
		{"0 0 12 * * *", "at 12:00 every day"},
		{"0 9 * * 1-5", "at 09:00 on Monday through Friday"},
		{"30 2 * * 7", "at 02:30 on Sunday"},
		{"0 0 1 * 1", "at 00:00 on the 1st of every month or on Monday"},
		{"0 0 1,15 * *", "at 00:00 on the 1st and the 15th of every month"},
		{"@hourly", "every hour"},
		{"@daily", "at 00:00 every day"},
		{"@weekly", "at 00:00 on Sunday"},
		{"@monthly", "at 00:00 on the 1st of every month"},
		{"@yearly", "at 00:00 on January 1"},
		{"@every 90s", "every 90 seconds"},
		{"@every 2h", "every 2 hours"},
		{"@every 1h30m", "every 90 minutes"},
		{"0 0 25 * * ?", ""},
		{"", ""},
		{"@every", ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			if got := Describe(tt.expr); got != tt.want {
				t.Errorf("Describe(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}
