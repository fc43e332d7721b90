package webhook

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
)

// Jitter chooses how Backoff randomises the exponential back-off.
type Jitter int

const (
	// DecorrelatedJitter waits a random time in [initial, 3 × previous wait], capped at max ("decorrelated
	// jitter"). It never retries sooner than the initial back-off, which is kinder to a struggling receiver.
	DecorrelatedJitter Jitter = iota
	// FullJitter waits a random time in [0, min(max, initial × 2^(n-1))] ("full jitter").
	FullJitter
)

func (j Jitter) String() string {
	if j == FullJitter {
		return "full"
	}
	return "decorrelated"
}

// Rand is Backoff's source of randomness; *math/rand/v2.Rand satisfies it.
type Rand interface {
	// Int64N returns a number in [0, n); n > 0.
	Int64N(n int64) int64
}

// Backoff returns how long to wait after failed attempt n (1-based) before the next one. prev is the wait
// before attempt n (0 after the first attempt); only DecorrelatedJitter uses it. The result is always within
// [0, MaxBackoffMs] (MaxBackoffMs below InitialBackoffMs is taken as InitialBackoffMs).
func Backoff(p ejserver.RetryPolicy, j Jitter, n int, prev time.Duration, r Rand) time.Duration {
	initial := time.Duration(max(p.InitialBackoffMs, 0)) * time.Millisecond
	limit := max(time.Duration(max(p.MaxBackoffMs, 0))*time.Millisecond, initial)
	if initial == 0 {
		return 0
	}
	switch j {
	case FullJitter:
		ceil := limit
		if shift := n - 1; shift >= 0 && shift < 62 && initial <= limit>>shift {
			ceil = initial << shift
		}
		return time.Duration(r.Int64N(int64(ceil) + 1))
	default:
		lo := initial
		if prev < initial {
			prev = initial
		}
		hi := limit
		if prev <= limit/3 {
			hi = 3 * prev
		}
		if hi <= lo {
			return min(lo, limit)
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
}

// ParseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date (relative to now). A date in the
// past gives 0; ok is false for an absent or malformed value.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(ejserver.MaxBackoffMs/1000) { // avoid overflow; the caller caps far lower anyway
			secs = int64(ejserver.MaxBackoffMs / 1000)
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}
