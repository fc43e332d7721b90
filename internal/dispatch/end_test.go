package dispatch

import (
	"testing"

	"github.com/ejserver/ejserver/internal/cluster"
)

// An item's end that lands at the first try allocates nothing for the lines it did not write: the job, item
// and execution id were boxed into a slice at every end before.
func TestRetryWriteThatLandsAllocatesNoLine(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	e := &Executor{}
	job, item, done := "bench-00001", 300, cluster.Completed{ExecutionID: "0192f5e4-7b1a-7cc3-9d2e-3f4a5b6c7d8e"}
	write := func() error { return nil }
	got := testing.AllocsPerRun(100, func() {
		e.retryWrite("the item's end", write, func() []any { return []any{"job", job, "item", item, "execution_id", done.ExecutionID} })
	})
	if got != 0 {
		t.Errorf("a landed write allocates %.0f times, want 0", got)
	}
}
