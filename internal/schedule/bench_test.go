package schedule

import (
	"testing"
	"time"
)

// BenchmarkJitter is the cost a jittered fire adds per item run (steady-10k: 10,000 a second).
func BenchmarkJitter(b *testing.B) {
	at := t0
	for b.Loop() {
		at = at.Add(time.Second)
		_ = Jitter("settle.daily_v2-eu", at, 30000)
	}
}

// BenchmarkMissedAllDay plans a day's outage of a 1-second job (86,400 missed fires, 1,000 kept).
func BenchmarkMissedAllDay(b *testing.B) {
	next := every(time.Second)
	for b.Loop() {
		_ = Missed(next, t0, t0.Add(24*time.Hour), CatchUpAll, 0)
	}
}
