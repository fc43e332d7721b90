package calendar

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

func mustCompile(t *testing.T, c Calendar) *Compiled {
	t.Helper()
	cc, err := Compile(c)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", c, err)
	}
	return cc
}

func TestCompileRefusesBadInputNamingTheField(t *testing.T) {
	tests := []struct {
		name  string
		cal   Calendar
		field string
	}{
		{"no name", Calendar{Dates: []string{"2026-01-01"}}, "name"},
		{"slash in name", Calendar{Name: "a/b", Dates: []string{"2026-01-01"}}, "name"},
		{"empty", Calendar{Name: "x"}, "dates"},
		{"bad zone", Calendar{Name: "x", TimeZone: "Mars/Olympus", Dates: []string{"2026-01-01"}}, "timeZone"},
		{"bad date", Calendar{Name: "x", Dates: []string{"2026-02-30"}}, "dates[0]"},
		{"date with time", Calendar{Name: "x", Dates: []string{"2026-01-01T00:00:00Z"}}, "dates[0]"},
		{"range reversed", Calendar{Name: "x", Ranges: []DateRange{{"2026-02-02", "2026-02-01"}}}, "ranges[0].to"},
		{"range bad from", Calendar{Name: "x", Ranges: []DateRange{{"nope", "2026-02-01"}}}, "ranges[0].from"},
		{"range too long", Calendar{Name: "x", Ranges: []DateRange{{"2000-01-01", "2026-02-01"}}}, "ranges[0]"},
		{"annual month 13", Calendar{Name: "x", Annual: []string{"13-01"}}, "annual[0]"},
		{"annual 04-31", Calendar{Name: "x", Annual: []string{"04-31"}}, "annual[0]"},
		{"annual full date", Calendar{Name: "x", Annual: []string{"2026-12-25"}}, "annual[0]"},
		{"description", Calendar{Name: "x", Annual: []string{"12-25"}, Description: strings.Repeat("d", MaxDescriptionLen+1)}, "description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.cal)
			e, ok := err.(*ejserver.Error)
			if !ok || e.Code != ejserver.EINVALID {
				t.Fatalf("Compile = %v, want an EINVALID error", err)
			}
			for _, f := range e.Fields {
				if f.Field == tt.field {
					return
				}
			}
			t.Fatalf("fields %+v do not name %q", e.Fields, tt.field)
		})
	}
}

func TestContains(t *testing.T) {
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	c := mustCompile(t, Calendar{Name: "cn", TimeZone: "Asia/Shanghai", Dates: []string{"2026-01-01"},
		Ranges: []DateRange{{"2026-10-01", "2026-10-07"}}, Annual: []string{"02-29", "12-25"}})
	tests := []struct {
		at   time.Time
		want bool
	}{
		{time.Date(2026, 1, 1, 0, 0, 0, 0, shanghai), true},
		{time.Date(2026, 1, 1, 23, 59, 59, 0, shanghai), true},
		{time.Date(2026, 1, 2, 0, 0, 0, 0, shanghai), false},
		{time.Date(2025, 12, 31, 16, 0, 0, 0, time.UTC), true},   // 2026-01-01 00:00 in Shanghai
		{time.Date(2025, 12, 31, 15, 59, 0, 0, time.UTC), false}, // still 2025-12-31 there
		{time.Date(2026, 9, 30, 12, 0, 0, 0, shanghai), false},
		{time.Date(2026, 10, 1, 0, 0, 0, 0, shanghai), true},
		{time.Date(2026, 10, 7, 23, 0, 0, 0, shanghai), true},
		{time.Date(2026, 10, 8, 0, 0, 0, 0, shanghai), false},
		{time.Date(2031, 12, 25, 9, 0, 0, 0, shanghai), true},
		{time.Date(2028, 2, 29, 9, 0, 0, 0, shanghai), true},
		{time.Date(2027, 3, 1, 9, 0, 0, 0, shanghai), false},
	}
	for _, tt := range tests {
		if got := c.Contains(tt.at); got != tt.want {
			t.Errorf("Contains(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
}

// every returns a schedule firing every step from a whole step.
func every(step time.Duration) func(time.Time) time.Time {
	return func(t time.Time) time.Time { return t.Truncate(step).Add(step) }
}

func TestDecideAndNext(t *testing.T) {
	hol := mustCompile(t, Calendar{Name: "hol", Dates: []string{"2026-01-03"}})
	wk := mustCompile(t, Calendar{Name: "wk", Ranges: []DateRange{{"2026-01-02", "2026-01-04"}}})
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name      string
		r         Rules
		remaining int
		want      []time.Time
	}{
		{"plain", Rules{}, -1, []time.Time{day(2), day(3), day(4), day(5)}},
		{"exclude", Rules{Exclude: []*Compiled{hol}}, -1, []time.Time{day(2), day(4), day(5), day(6)}},
		{"include", Rules{Include: []*Compiled{wk}}, -1, []time.Time{day(2), day(3), day(4)}},
		{"include minus exclude", Rules{Include: []*Compiled{wk}, Exclude: []*Compiled{hol}}, -1, []time.Time{day(2), day(4)}},
		{"endAt inclusive", Rules{EndAt: day(3)}, -1, []time.Time{day(2), day(3)}},
		{"remaining", Rules{}, 3, []time.Time{day(2), day(3), day(4)}},
		{"remaining 0", Rules{}, 0, nil},
		{"paused", Rules{Paused: true}, -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Next(every(24*time.Hour), tt.r, from, 4, tt.remaining)
			if len(got) != len(tt.want) {
				t.Fatalf("Next = %v, want %v", got, tt.want)
			}
			for i := range got {
				if !got[i].Equal(tt.want[i]) {
					t.Fatalf("Next = %v, want %v", got, tt.want)
				}
			}
		})
	}
	v := Rules{Paused: true, Exclude: []*Compiled{hol}}.Decide(day(3))
	if v.Run || v.Reason != ReasonPaused {
		t.Errorf("paused Decide = %+v", v)
	}
	if v := (Rules{Exclude: []*Compiled{hol}}).Decide(day(3)); v.Run || !strings.HasPrefix(v.Reason, ReasonCalendar+": hol") {
		t.Errorf("excluded Decide = %+v", v)
	}
	if v := (Rules{Include: []*Compiled{wk}}).Decide(day(9)); v.Run || !strings.Contains(v.Reason, "none of wk") {
		t.Errorf("not included Decide = %+v", v)
	}
	if v := (Rules{EndAt: day(3)}).Decide(day(4)); v.Run || !strings.HasPrefix(v.Reason, ReasonEnded) {
		t.Errorf("ended Decide = %+v", v)
	}
	if !(Rules{Paused: true}).Fires(day(3)) {
		t.Errorf("Fires ignores the pause: it answers for calendars and endAt only")
	}
}

func TestNextStopsAfterMaxScan(t *testing.T) {
	feb29 := mustCompile(t, Calendar{Name: "leap", Annual: []string{"02-29"}})
	got := Next(every(time.Second), Rules{Include: []*Compiled{feb29}}, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 5, -1)
	if len(got) != 0 {
		t.Fatalf("Next = %v, want none within MaxScan fires", got)
	}
}

func TestCount(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	t2 := t1.Add(time.Second)
	tests := []struct {
		name       string
		cur        *Counter
		limit      int
		at         time.Time
		next       Counter
		write, run bool
	}{
		{"first fire", nil, 2, t1, Counter{2, 1, t1}, true, true},
		{"counted by another peer", &Counter{2, 1, t1}, 2, t1, Counter{2, 1, t1}, false, true},
		{"second fire", &Counter{2, 1, t1}, 2, t2, Counter{2, 0, t2}, true, true},
		{"used up", &Counter{2, 0, t1}, 2, t2, Counter{2, 0, t1}, false, false},
		{"last fire counted elsewhere", &Counter{2, 0, t2}, 2, t2, Counter{2, 0, t2}, false, true},
		{"older than counted", &Counter{2, 1, t2}, 2, t1, Counter{2, 1, t2}, false, false},
		{"new limit starts again", &Counter{2, 0, t1}, 5, t2, Counter{5, 4, t2}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, write, run := Count(tt.cur, tt.limit, tt.at)
			if next != tt.next || write != tt.write || run != tt.run {
				t.Fatalf("Count = %+v %v %v, want %+v %v %v", next, write, run, tt.next, tt.write, tt.run)
			}
		})
	}
}

// FuzzCompile: any calendar JSON either compiles or is refused with fields named; a compiled calendar
// answers Contains for any time, and Next's fires are increasing, after from and all allowed.
func FuzzCompile(f *testing.F) {
	f.Add(`{"name":"a","dates":["2026-01-01"],"annual":["12-25"],"ranges":[{"from":"2026-01-01","to":"2026-01-09"}]}`, int64(0))
	f.Add(`{"name":"b","timeZone":"GMT+8","annual":["02-29"]}`, int64(1e9))
	f.Fuzz(func(t *testing.T, js string, unix int64) {
		var c Calendar
		if json.Unmarshal([]byte(js), &c) != nil {
			return
		}
		cc, err := Compile(c)
		if err != nil {
			if e, ok := err.(*ejserver.Error); !ok || len(e.Fields) == 0 {
				t.Fatalf("refusal %v names no field", err)
			}
			return
		}
		from := time.Unix(unix%(1<<34), 0).UTC()
		r := Rules{Exclude: []*Compiled{cc}}
		prev := from
		for _, at := range Next(every(7*time.Hour), r, from, 5, -1) {
			if !at.After(prev) || cc.Contains(at) || !r.Fires(at) {
				t.Fatalf("fire %v after %v: contained %v", at, prev, cc.Contains(at))
			}
			prev = at
		}
	})
}
