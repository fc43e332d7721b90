package wfalert

import (
	"os"
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestMain starts (or finds) the shared ZooKeeper and fails the run if goroutines leaked.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

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
