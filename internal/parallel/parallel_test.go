package parallel

import (
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestForCallsEachIndexOnceWithinTheBound(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {10, 1}, {100, 8}, {3, 32}} {
		var calls [100]atomic.Int32
		var running, peak atomic.Int32
		err := For(tc.n, tc.workers, func(i int) error {
			now := running.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			calls[i].Add(1)
			running.Add(-1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range tc.n {
			if calls[i].Load() != 1 {
				t.Fatalf("n=%d: index %d called %d times", tc.n, i, calls[i].Load())
			}
		}
		if int(peak.Load()) > max(tc.workers, 1) {
			t.Fatalf("n=%d: %d calls at once, bound %d", tc.n, peak.Load(), tc.workers)
		}
	}
}

func TestForReturnsTheFirstErrorAndStops(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	err := For(1000, 4, func(i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if calls.Load() == 1000 {
		t.Fatal("kept going after the error")
	}
}
