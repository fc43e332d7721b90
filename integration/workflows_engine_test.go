package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// The workflow engine's guarantees under faults: no node skipped or repeated when the engine's peer dies
// between a step and its items' sends; cancel ends the items in flight.

// chainWorkflow makes jobs (items each, no retries) and a workflow that runs them one after another.
func chainWorkflow(t *testing.T, p *harness.Peer, name string, jobs []string, items int, url string) {
	t.Helper()
	var nodes []any
	for i, j := range jobs {
		mustDo(t, p, "POST", "/api/v1/jobs", oneOff(j, items, url), http.StatusCreated, nil)
		if i == 0 {
			nodes = append(nodes, wfNode(j, j))
		} else {
			nodes = append(nodes, wfNode(j, j, edgeOn(jobs[i-1], "success")))
		}
	}
	mustDo(t, p, "POST", "/api/v1/workflows", map[string]any{"name": name, "nodes": nodes}, http.StatusCreated, nil)
}

// The engine's peer is killed (SIGKILL, by the fault point EJ_TEST_KILL_AFTER_FIRING) right after it wrote
// the step that fires node hb, before its own instance took its trigger: that trigger waits for a dead
// instance. The survivor that takes the engine duty hands it on to the items' new owners: every item of
// every node runs exactly once and the run succeeds (without the hand-on, hb's item ends LOST and the run
// FAILED after the alert service's lost grace).
func TestWorkflowNodeFiredJustBeforeTheEnginePeerDiesRunsOnce(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) { return http.StatusOK, `{}`, 100 * time.Millisecond })
	c := newCluster(t, 3, withSessionTimeout(2*time.Second), withEnv("EJ_TEST_KILL_AFTER_FIRING=hb"))
	chain := []string{"ha", "hb", "hc"}
	chainWorkflow(t, c.peers[0], "handon", chain, 3, recv.URL)
	var run wfRun
	mustDo(t, c.peers[0], "POST", "/api/v1/workflows/handon/runs", nil, http.StatusAccepted, &run)
	var dead *harness.Peer
	var alive []*harness.Peer
	if !eventually(30*time.Second, func() bool {
		dead, alive = nil, nil
		for _, p := range c.peers {
			if p.Exited() {
				dead = p
			} else {
				alive = append(alive, p)
			}
		}
		return dead != nil
	}) {
		t.Fatal("no peer hit the fault point after firing hb")
	}
	if !strings.Contains(dead.Log(), "test fault point: killing this peer") || len(alive) != 2 {
		t.Fatalf("%d peers alive; the dead one's log does not show the fault point", len(alive))
	}
	got := waitRun(t, alive[0], "handon", run.ID, 40*time.Second)
	if got.State != "SUCCEEDED" {
		t.Fatalf("run %s after the engine's peer died right after firing hb, want SUCCEEDED: %+v", got.State, got)
	}
	if !strings.Contains(alive[0].Log()+alive[1].Log(), "trigger of a vanished instance handed on") {
		t.Fatal("the survivors' logs do not show the hand-on")
	}
	jobs := byJob(recv.Deliveries(nil))
	for _, j := range chain {
		per := map[int]int{}
		for _, d := range jobs[j] {
			per[d.Payload.ShardingItem]++
		}
		if len(per) != 3 {
			t.Fatalf("job %s: items %v ran, want all 3", j, per)
		}
		for item, n := range per {
			if n != 1 {
				t.Fatalf("job %s item %d was delivered %d times, want once", j, item, n)
			}
		}
	}
}
