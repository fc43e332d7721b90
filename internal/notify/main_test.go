package notify

import (
	"os"
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestMain starts the shared ZooKeeper (the store tests) and checks for leaked goroutines.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
