package receiver

import (
	"testing"

	"go.uber.org/goleak"
)

// AsyncHandler starts goroutines: every one of them must be gone when the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
