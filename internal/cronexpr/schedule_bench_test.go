package cronexpr

import (
	"testing"
	"time"
)

// BenchmarkNext measures one Next call, each from the fire time before, for typical expressions.
func BenchmarkNext(b *testing.B) {
	benchmarks := []struct {
		name, zone, expr string
	}{
		{"every5s", "UTC", "0/5 * * * * ?"},
		{"daily", "Asia/Shanghai", "0 30 2 * * ?"},
		{"weekdays", "America/New_York", "0 0 9 ? * MON-FRI"},
		{"lastDay", "Europe/London", "0 15 10 L * ?"},
		{"thirdFriday", "GMT+8", "0 0 12 ? * 6#3"},
		{"nearestWeekday", "UTC", "0 0 12 15W * ?"},
		{"unixEvery5m", "America/New_York", "*/5 * * * *"},
		{"unixWeekdays", "UTC", "0 9 * * 1-5"},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			loc, err := LoadLocation(bm.zone)
			if err != nil {
				b.Fatal(err)
			}
			s, err := Parse(bm.expr, loc)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			t := start
			for b.Loop() {
				if t = s.Next(t); t.IsZero() {
					t = start
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("0 0/15 8-18 ? * MON-FRI", time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}
