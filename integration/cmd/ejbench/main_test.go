package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// asMain makes the test binary run ejbench itself (the interrupt test's child process, and the baseline loop
// that child runs as a process of its own).
const asMain = "EJBENCH_TEST_AS_MAIN"

// The completer sends from timers and an HTTP client: nothing of it may outlive a test.
func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(command(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
