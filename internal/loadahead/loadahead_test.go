package loadahead

import (
	"fmt"
	"testing"
	"time"
)

var from = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestCompute(t *testing.T) {
	tests := []struct {
		name    string
		jobs    []Job
		cfg     Config
		seconds map[int]int64 // the non-zero seconds
		want    Load          // the counts (Items, From, Peak, PeakAt not compared)
	}{
		{"a minute herd", []Job{{Cron: "0 * * * * ?", Items: 3}, {Cron: "0 * * * * ?", Items: 2}}, Config{Horizon: 3 * time.Minute},
			map[int]int64{0: 5, 60: 5, 120: 5}, Load{Jobs: 2, Schedules: 1}},
		{"every 20 s and a unix hourly", []Job{{Cron: "0/20 * * * * ?", Items: 1}, {Cron: "0 * * * *", Items: 10}}, Config{Horizon: time.Minute},
			map[int]int64{0: 11, 20: 1, 40: 1}, Load{Jobs: 2, Schedules: 2}},
		{"time zone", []Job{{Cron: "0 30 18 * * ?", TimeZone: "Asia/Shanghai", Items: 4}}, Config{Horizon: time.Hour},
			map[int]int64{30 * 60: 4}, Load{Jobs: 1, Schedules: 1}},
		{"invalid ones are counted apart", []Job{{Cron: "nope", Items: 1}, {Cron: "0 * * * * ?", TimeZone: "Mars/Base", Items: 1}}, Config{Horizon: time.Minute},
			map[int]int64{}, Load{Invalid: 2, Schedules: 2}},
		{"the budget skips the lighter schedule", []Job{{Cron: "* * * * * ?", Items: 2}, {Cron: "0 * * * * ?", Items: 1}}, Config{Horizon: 10 * time.Second, Budget: 11},
			map[int]int64{0: 2, 1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 7: 2, 8: 2, 9: 2}, Load{Jobs: 1, Schedules: 2, Skipped: 1}},
		{"the budget cuts a walk", []Job{{Cron: "* * * * * ?", Items: 1}}, Config{Horizon: 10 * time.Second, Budget: 3},
			map[int]int64{0: 1, 1: 1, 2: 1}, Load{Jobs: 1, Schedules: 1, Partial: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(tt.jobs, from.Add(300*time.Millisecond), tt.cfg)
			if !got.From.Equal(from) || len(got.Items) != int(tt.cfg.Horizon/time.Second) {
				t.Fatalf("from %s, %d seconds", got.From, len(got.Items))
			}
			for i, v := range got.Items {
				if v != tt.seconds[i] {
					t.Errorf("second %d: %d items, want %d", i, v, tt.seconds[i])
				}
			}
			if got.Jobs != tt.want.Jobs || got.Schedules != tt.want.Schedules || got.Invalid != tt.want.Invalid ||
				got.Skipped != tt.want.Skipped || got.Partial != tt.want.Partial {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPeak(t *testing.T) {
	got := Compute([]Job{{Cron: "15 * * * * ?", Items: 7}, {Cron: "0/30 * * * * ?", Items: 1}}, from, Config{Horizon: time.Minute})
	if got.Peak != 7 || !got.PeakAt.Equal(from.Add(15*time.Second)) {
		t.Errorf("peak %d at %s", got.Peak, got.PeakAt)
	}
}

// FuzzCompute: whatever the expressions, the sum of the load is at most the items times the seconds, every
// second is non-negative, and the same input gives the same output.
func FuzzCompute(f *testing.F) {
	f.Add("0 * * * * ?", "", 3)
	f.Add("*/5 * * * *", "America/New_York", 1)
	f.Add("@every 7s", "GMT+8", 2)
	f.Fuzz(func(t *testing.T, expr, tz string, items int) {
		items = items % 1000
		jobs := []Job{{Cron: expr, TimeZone: tz, Items: items}}
		cfg := Config{Horizon: 2 * time.Minute, Budget: 1000}
		a, b := Compute(jobs, from, cfg), Compute(jobs, from, cfg)
		var sum int64
		for i, v := range a.Items {
			if v < 0 || v != b.Items[i] {
				t.Fatalf("second %d: %d vs %d", i, v, b.Items[i])
			}
			sum += v
		}
		if sum > int64(max(items, 0))*120 {
			t.Fatalf("sum %d over %d items", sum, items)
		}
	})
}

// BenchmarkCompute100kJobs is the overview page's load ahead at 100,000 jobs: 90,000 jobs with distinct
// expressions (a second, a minute and a day-of-month range: 90,000 parses, one fire each), and 10,000 on
// 55 shared every-N-seconds schedules (up to 720 fires each).
func BenchmarkCompute100kJobs(b *testing.B) {
	jobs := make([]Job, 0, 100_000)
	for i := range 90_000 {
		jobs = append(jobs, Job{Cron: fmt.Sprintf("%d %d * %d-31 * ?", i%60, (i/60)%60, 1+(i/3600)%28), Items: 1 + i%8})
	}
	for i := range 10_000 {
		jobs = append(jobs, Job{Cron: fmt.Sprintf("0/%d * * * * ?", 5+i%55), Items: 1 + i%4})
	}
	b.ReportAllocs()
	for b.Loop() {
		l := Compute(jobs, from, Config{Horizon: time.Hour})
		if l.Jobs+l.Skipped != len(jobs) {
			b.Fatalf("%+v", l.Jobs)
		}
	}
}
