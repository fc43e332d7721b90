package backfill

import (
	"os"
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestMain starts the shared ZooKeeper (the runner's tests use it) and checks for leaked goroutines.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
