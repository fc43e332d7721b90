package calendar

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cronexpr"
)

// TestQuartzCalendars replays testdata/quartz-calendars.jsonl: what Quartz 2.3.2's HolidayCalendar and
// AnnualCalendar (with their time zones) make of a cron trigger's fires, computed by
// testdata/CalendarOracle.java. A holiday line of more than three days is a run of consecutive days, and is
// given to ejserver as one range, so ranges are checked too.
func TestQuartzCalendars(t *testing.T) {
	f, err := os.Open("testdata/quartz-calendars.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		var v struct {
			Zone, Cron, CalendarZone, Kind string
			From                           int64
			Days                           []string
			Next                           []int64
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		lines++
		cal := Calendar{Name: "oracle", TimeZone: v.CalendarZone}
		switch {
		case v.Kind == "annual":
			cal.Annual = v.Days
		case len(v.Days) > 3:
			cal.Ranges = []DateRange{{From: v.Days[0], To: v.Days[len(v.Days)-1]}}
		default:
			cal.Dates = v.Days
		}
		c, err := Compile(cal)
		if err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		loc, err := cronexpr.LoadLocation(v.Zone)
		if err != nil {
			t.Fatal(err)
		}
		sched, err := cronexpr.Parse(v.Cron, loc)
		if err != nil {
			t.Fatal(err)
		}
		got := Next(sched.Next, Rules{Exclude: []*Compiled{c}}, time.UnixMilli(v.From), len(v.Next), -1)
		if len(got) != len(v.Next) {
			t.Fatalf("%q in %s excluding %s %v: %d fires, Quartz %d", v.Cron, v.Zone, v.Kind, v.Days, len(got), len(v.Next))
		}
		for i, at := range got {
			if at.UnixMilli() != v.Next[i] {
				t.Errorf("%q in %s excluding %s %v in %s: fire %d = %s, Quartz %s", v.Cron, v.Zone, v.Kind, v.Days,
					v.CalendarZone, i+1, at.UTC().Format(time.RFC3339), time.UnixMilli(v.Next[i]).UTC().Format(time.RFC3339))
			}
		}
	}
	if lines < 10 {
		t.Fatalf("only %d oracle lines", lines)
	}
}
