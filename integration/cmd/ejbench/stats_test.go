package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cronexpr"
)

// Every job's cron expression parses and fires exactly at the seconds the schedule counts (firingAt), over
// two minutes: what the benchmark expects is what the peers are told to fire.
func TestScheduleCronMatchesFiringAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		period time.Duration
		jobs   int
		spread bool
	}{
		{time.Second, 3, true},
		{2 * time.Second, 5, true},
		{10 * time.Second, 25, true},
		{10 * time.Second, 4, false},
		{time.Minute, 130, true},
		{time.Minute, 3, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%d-%t", tt.period, tt.jobs, tt.spread), func(t *testing.T) {
			t.Parallel()
			s := schedule{prefix: "b", jobs: tt.jobs, items: 1, period: tt.period, spread: tt.spread}
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			to := from.Add(2 * time.Minute)
			firing := map[int64]int{}
			for k := range tt.jobs {
				c, err := cronexpr.Parse(s.cron(k), time.UTC)
				if err != nil {
					t.Fatalf("job %d: %v", k, err)
				}
				for at := c.Next(from.Add(-time.Second)); at.Before(to); at = c.Next(at) {
					firing[at.Unix()]++
				}
			}
			for at := from; at.Before(to); at = at.Add(time.Second) {
				if got, want := firing[at.Unix()], s.firingAt(at.Unix()); got != want {
					t.Errorf("second %s: %d jobs fire, the schedule counts %d", at.Format(time.TimeOnly), got, want)
				}
			}
		})
	}
}
