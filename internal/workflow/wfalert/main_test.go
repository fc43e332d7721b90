package wfalert

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStopSafe: Stop is safe before Start and twice, and a Start after Stop starts nothing.
func TestStopSafe(t *testing.T) {
	s := New(Config{})
	s.Stop()
	s.Start()
	s.Stop()
	s2 := New(Config{})
	s2.Start()
	s2.Stop()
	s2.Stop()
}
