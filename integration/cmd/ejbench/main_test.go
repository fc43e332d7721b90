package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The completer sends from timers and an HTTP client: nothing of it may outlive a test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
