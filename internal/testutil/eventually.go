package testutil

import (
	"testing"
	"time"
)

// Eventually polls cond every 10 ms until it holds, and fails the test if it does not within limit.
func Eventually(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}
