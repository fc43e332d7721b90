package history

import (
	"encoding/json"
	"testing"
	"time"
)

// A workflow run is upserted by id (started, then ended), listed newest first per workflow, and pruned with
// the history.
func TestWorkflowRuns(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		ctx := testCtx(t)
		run := func(id, wf, state string, at time.Time) WorkflowRun {
			return WorkflowRun{ID: id, Workflow: wf, State: state, Trigger: "MANUAL", Attempt: 1, Created: at,
				Run: json.RawMessage(`{"id":"` + id + `","state":"` + state + `"}`)}
		}
		for i, r := range []WorkflowRun{run("r1", "a", "RUNNING", t0), run("r2", "a", "RUNNING", t0.Add(time.Second)),
			run("r3", "b", "RUNNING", t0.Add(2*time.Second))} {
			if err := s.WriteWorkflowRun(ctx, r); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		ended := run("r1", "a", "FAILED", t0)
		ended.Ended = t0.Add(3 * time.Second)
		if err := s.WriteWorkflowRun(ctx, ended); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListWorkflowRuns(ctx, "a", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || string(got[0]) != `{"id":"r2","state":"RUNNING"}` || string(got[1]) != `{"id":"r1","state":"FAILED"}` {
			t.Fatalf("runs of a: %s", got)
		}
		if _, err := s.ListWorkflowRuns(ctx, "a", MaxLimit+1); err == nil {
			t.Fatal("a limit over MaxLimit was accepted")
		}
		if _, err := s.Prune(ctx, t0.Add(500*time.Millisecond), 100); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ListWorkflowRuns(ctx, "a", 10); len(got) != 1 || string(got[0]) != `{"id":"r2","state":"RUNNING"}` {
			t.Fatalf("after the prune: %s", got)
		}
	})
}
