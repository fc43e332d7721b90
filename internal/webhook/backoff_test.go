package webhook

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// edgeRand returns the smallest (0) or largest (n-1) value Int64N may return.
type edgeRand struct{ high bool }

func (r edgeRand) Int64N(n int64) int64 {
	if r.high {
		return n - 1
	}
	return 0
}

func TestBackoff(t *testing.T) {
	policy := ejserver.RetryPolicy{MaxAttempts: 10, InitialBackoffMs: 1000, MaxBackoffMs: 30000}
	s := time.Second
	tests := []struct {
		name   string
		p      ejserver.RetryPolicy
		jitter Jitter
		n      int
		prev   time.Duration
		high   bool
		want   time.Duration
	}{
		{"full, attempt 1, low", policy, FullJitter, 1, 0, false, 0},
		{"full, attempt 1, high", policy, FullJitter, 1, 0, true, 1 * s},
		{"full, attempt 2, high", policy, FullJitter, 2, 0, true, 2 * s},
		{"full, attempt 4, high", policy, FullJitter, 4, 0, true, 8 * s},
		{"full, attempt 5, high", policy, FullJitter, 5, 0, true, 16 * s},
		{"full, attempt 6, capped", policy, FullJitter, 6, 0, true, 30 * s},
		{"full, attempt 200, no overflow", policy, FullJitter, 200, 0, true, 30 * s},
		{"decorrelated, first, low", policy, DecorrelatedJitter, 1, 0, false, 1 * s},
		{"decorrelated, first, high", policy, DecorrelatedJitter, 1, 0, true, 3 * s},
		{"decorrelated, after 3s, high", policy, DecorrelatedJitter, 2, 3 * s, true, 9 * s},
		{"decorrelated, after 3s, low", policy, DecorrelatedJitter, 2, 3 * s, false, 1 * s},
		{"decorrelated, after 20s, capped", policy, DecorrelatedJitter, 5, 20 * s, true, 30 * s},
		{"decorrelated, prev beyond cap", policy, DecorrelatedJitter, 9, time.Hour, true, 30 * s},
		{"zero initial: retry at once", ejserver.RetryPolicy{InitialBackoffMs: 0, MaxBackoffMs: 5000}, FullJitter, 3, 0, true, 0},
		{"max below initial: initial", ejserver.RetryPolicy{InitialBackoffMs: 2000, MaxBackoffMs: 500}, DecorrelatedJitter, 3, 0, true, 2 * s},
		{"negative fields", ejserver.RetryPolicy{InitialBackoffMs: -5, MaxBackoffMs: -5}, DecorrelatedJitter, 1, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Backoff(tt.p, tt.jitter, tt.n, tt.prev, edgeRand{tt.high}); got != tt.want {
				t.Fatalf("Backoff = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzBackoff: whatever the inputs, the wait is within [0, max(initial, max)], and decorrelated never
// waits less than the initial back-off.
func FuzzBackoff(f *testing.F) {
	f.Add(1000, 30000, 3, int64(2000), uint64(1), false)
	f.Add(0, 0, 1, int64(0), uint64(7), true)
	f.Fuzz(func(t *testing.T, initial, maxB, n int, prev int64, seed uint64, full bool) {
		initial, maxB = initial%(ejserver.MaxBackoffMs+1), maxB%(ejserver.MaxBackoffMs+1)
		p := ejserver.RetryPolicy{InitialBackoffMs: initial, MaxBackoffMs: maxB}
		j := DecorrelatedJitter
		if full {
			j = FullJitter
		}
		got := Backoff(p, j, n, time.Duration(prev), rand.New(rand.NewPCG(seed, seed)))
		hi := time.Duration(max(initial, maxB, 0)) * time.Millisecond
		if got < 0 || got > hi {
			t.Fatalf("Backoff(%+v, %v, %d, %d) = %v, outside [0, %v]", p, j, n, prev, got, hi)
		}
		if j == DecorrelatedJitter && initial > 0 && got < time.Duration(initial)*time.Millisecond {
			t.Fatalf("decorrelated waited %v, below the initial %dms", got, initial)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{" 0 ", 0, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"Sat, 21 Nov 2026 09:00:00 GMT", 0, true},                   // in the past
		{"Saturday, 21-Nov-26 10:00:30 GMT", 30 * time.Second, true}, // RFC 850, still legal
		{"Sat Nov 21 10:00:45 2026", 45 * time.Second, true},         // asctime
		{"99999999999999", time.Duration(ejserver.MaxBackoffMs) * time.Millisecond, true},
		{"-3", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
