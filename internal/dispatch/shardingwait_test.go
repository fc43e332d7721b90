package dispatch

import (
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/schedule"
)

func TestShardingWait(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	const limit, lead = 30 * time.Second, time.Second
	tests := []struct {
		name    string
		next    time.Time
		misfire bool
		want    time.Duration
	}{
		{"late fires taken: the limit, past a next fire 1 s away", now.Add(time.Second), true, 30 * time.Second},
		{"late fires taken: until the next fire's hand-off, later than the limit", now.Add(time.Minute), true, time.Minute - lead},
		{"late fires taken, the next fire in a day: at most MaxShardingWait", now.Add(24 * time.Hour), true, schedule.MaxShardingWait},
		{"late fires taken, no next fire: the limit", time.Time{}, true, 30 * time.Second},
		{"late fires refused: until the next fire", now.Add(time.Second), false, time.Second},
		{"late fires refused, next fire beyond the limit", now.Add(time.Minute), false, 30 * time.Second},
		{"no next fire", time.Time{}, false, 30 * time.Second},
		{"next fire already due: the least wait", now.Add(-time.Second), false, minShardingWait},
		{"next fire in 10 ms: the least wait", now.Add(10 * time.Millisecond), false, minShardingWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shardingWait(limit, lead, now, tt.next, tt.misfire); got != tt.want {
				t.Fatalf("shardingWait = %s, want %s", got, tt.want)
			}
		})
	}
}
