package integration

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// The engine's peer is killed (SIGKILL, by the fault point EJ_TEST_KILL_AT, once in the cluster) at each
// stage of a run's advance; a survivor takes the engine duty and carries the run on: it ends SUCCEEDED with
// every node fired once (one fire in the run's record, each item of each job delivered as one execution, for
// that run and node) and none skipped.
//
//   - run-started: the start is written with the root's triggers, the start message not dropped; the dead
//     peer's trigger is handed on.
//   - inbox-read:hb: hb's end is read from the inbox, not applied: the survivor applies it (fires hc once).
//   - step-written:hb: hb's end is applied and hc's triggers written, the inbox message not dropped: the
//     survivor drops it as stale (hc is not fired again) and hands on the dead peer's trigger of hc.
//   - fired:hb: the step that fires hb is written, no instance took its triggers: the dead peer's is handed on.
//   - run-ending: hc, the last node, ended; the run's close is not written: the survivor closes it.
//   - trigger-read:ha: not the engine's peer but the first peer to read its trigger of ha dies, before it
//     records its items' start (its trigger is consumed only with that record): the trigger still waits,
//     and the engine hands it on.
func TestWorkflowRunSurvivesTheEnginePeerKilledAtEachStage(t *testing.T) {
	t.Parallel()
	stages := []struct {
		at     string
		handOn bool // the dead peer left a trigger waiting that a survivor must hand on
	}{
		{"run-started", true},
		{"inbox-read:hb", false},
		{"step-written:hb", true},
		{"fired:hb", true},
		{"run-ending", false},
		{"trigger-read:ha", true},
	}
	for _, st := range stages {
		t.Run(strings.ReplaceAll(st.at, ":", "-"), func(t *testing.T) {
			t.Parallel()
			recv := newReceiver(t)
			recv.Respond(func(harness.Delivery) (int, string, time.Duration) {
				return http.StatusOK, `{}`, 100 * time.Millisecond
			})
			c := newCluster(t, 3, withSessionTimeout(2*time.Second),
				withEnv("EJ_TEST_KILL_AT="+st.at, "EJ_TEST_KILL_ONCE="+filepath.Join(t.TempDir(), "killed")))
			chain := []string{"ha", "hb", "hc"}
			p := c.peers[0]
			// failover: an item the dead peer had started (if its instance won the race) is re-POSTed
			failoverChain(t, p, "stages", chain, recv.URL)
			var run wfRun
			mustDo(t, p, "POST", "/api/v1/workflows/stages/runs", nil, http.StatusAccepted, &run)

			var dead *harness.Peer
			var alive []*harness.Peer
			if !eventually(30*time.Second, func() bool {
				dead, alive = nil, nil
				for _, q := range c.peers {
					if q.Exited() {
						dead = q
					} else {
						alive = append(alive, q)
					}
				}
				return dead != nil
			}) {
				t.Fatalf("no peer hit the fault point %s", st.at)
			}
			if !strings.Contains(dead.Log(), "test fault point: killing this peer") || len(alive) != 2 {
				t.Fatalf("%d peers alive; the dead one's log does not show the fault point", len(alive))
			}
			got := waitRun(t, alive[0], "stages", run.ID, 45*time.Second)
			if got.State != "SUCCEEDED" {
				t.Fatalf("run %s after the peer died at %s, want SUCCEEDED: %+v", got.State, st.at, got)
			}
			for _, n := range got.Nodes {
				if n.State != "SUCCEEDED" || n.Fire == "" {
					t.Fatalf("node %s %s (fire %q) in the run's record, want SUCCEEDED with a fire: %+v", n.Name, n.State, n.Fire, got)
				}
			}
			if st.handOn && !strings.Contains(alive[0].Log()+alive[1].Log(), "trigger of a vanished instance handed on") {
				t.Fatal("the survivors' logs do not show the hand-on of the dead peer's trigger")
			}
			ds := recv.Deliveries(nil)
			jobs := byJob(ds)
			for _, j := range chain {
				ids := map[int]map[string]bool{}
				for _, d := range jobs[j] {
					var b struct {
						Workflow wfBody `json:"workflow"`
					}
					if err := json.Unmarshal(d.Body, &b); err != nil || b.Workflow.RunID != run.ID || b.Workflow.Node != j {
						t.Fatalf("job %s item %d delivered for workflow %+v, want run %s node %s", j, d.Payload.ShardingItem, b.Workflow, run.ID, j)
					}
					if ids[d.Payload.ShardingItem] == nil {
						ids[d.Payload.ShardingItem] = map[string]bool{}
					}
					ids[d.Payload.ShardingItem][d.Payload.ExecutionID] = true
				}
				if len(ids) != 3 {
					t.Fatalf("job %s: items %v ran, want all 3: node %s skipped or cut short", j, ids, j)
				}
				for item, set := range ids {
					if len(set) != 1 {
						t.Fatalf("job %s item %d ran as %d executions %v: node %s fired more than once", j, item, len(set), set, j)
					}
				}
			}
		})
	}
}

// failoverChain makes one-off jobs of 3 items with failover on, and a workflow that runs them one after
// another.
func failoverChain(t *testing.T, p *harness.Peer, name string, jobs []string, url string) {
	t.Helper()
	var nodes []any
	for i, j := range jobs {
		jc := oneOff(j, 3, url)
		jc["failover"] = true
		mustDo(t, p, "POST", "/api/v1/jobs", jc, http.StatusCreated, nil)
		if i == 0 {
			nodes = append(nodes, wfNode(j, j))
		} else {
			nodes = append(nodes, wfNode(j, j, edgeOn(jobs[i-1], "success")))
		}
	}
	mustDo(t, p, "POST", "/api/v1/workflows", map[string]any{"name": name, "nodes": nodes}, http.StatusCreated, nil)
}
