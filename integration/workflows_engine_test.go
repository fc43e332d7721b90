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
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) {
		return http.StatusOK, `{}`, 100 * time.Millisecond
	})
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

// Cancelling a run stops its running nodes' items on every peer, as CANCEL_PREVIOUS does: the requests in
// flight are aborted and recorded CANCELLED, the accepted items' leases are cancelled (their heartbeat
// answers 409 execution-cancelled), and no node fires after.
func TestWorkflowCancelStopsTheItemsInFlight(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.JobName == "sb" {
			return http.StatusAccepted, "", 0
		}
		return http.StatusOK, `{}`, time.Minute // sa's items hang until they are aborted
	})
	c := newCluster(t, 3)
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", oneOff("sa", 3, recv.URL), http.StatusCreated, nil)
	async := asyncJob("sb", "", 2, recv.URL, 60)
	async["retry"] = map[string]any{"maxAttempts": 1}
	mustDo(t, p, "POST", "/api/v1/jobs", async, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs", oneOff("sc", 1, recv.URL), http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/workflows", map[string]any{"name": "stopme", "nodes": []any{
		wfNode("a", "sa"), wfNode("b", "sb"), wfNode("c", "sc", edgeOn("a", "always"), edgeOn("b", "always")),
	}}, http.StatusCreated, nil)
	var run wfRun
	mustDo(t, p, "POST", "/api/v1/workflows/stopme/runs", nil, http.StatusAccepted, &run)
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool {
		j := byJob(ds)
		return len(j["sa"]) == 3 && len(j["sb"]) == 2
	})
	if !ok {
		t.Fatalf("the run's roots did not fire: %d deliveries", len(ds))
	}
	waitAccepted(t, p, "sb", 0)
	waitAccepted(t, p, "sb", 1)
	mustDo(t, c.peers[1], "POST", "/api/v1/workflows/stopme/runs/"+run.ID+"/cancel", nil, http.StatusAccepted, nil)
	if got := waitRun(t, c.peers[2], "stopme", run.ID, 20*time.Second); got.State != "CANCELLED" {
		t.Fatalf("run %s after its cancel, want CANCELLED", got.State)
	}
	// each peer keeps the history of the items it ran
	ranOn := func(d harness.Delivery) *harness.Peer {
		for _, q := range c.peers {
			if q.InstanceID() == d.Payload.InstanceID {
				return q
			}
		}
		t.Fatalf("no peer is instance %s", d.Payload.InstanceID)
		return nil
	}
	for _, d := range byJob(ds)["sa"] {
		e := waitExecution(t, ranOn(d), d.Payload.ExecutionID, 30*time.Second, func(e executionRecord) bool { return e.CompletedAt != nil })
		if e.Success || e.State != "CANCELLED" || !strings.Contains(e.FailureCause, "workflow run was cancelled") {
			t.Fatalf("history of an item of the cancelled run's node a: %+v", e)
		}
	}
	for _, d := range byJob(ds)["sb"] {
		// the run is CANCELLED first; each peer's cancel watcher then cancels the leases
		var s int
		var typ string
		if !eventually(20*time.Second, func() bool {
			s, typ, _ = callback(t, p, d.Payload.ExecutionID, "heartbeat", d.Payload.CallbackToken, nil)
			return s == 409 && typ == "execution-cancelled"
		}) {
			t.Fatalf("heartbeat of an accepted item of the cancelled run's node b: %d %s", s, typ)
		}
		e := waitExecution(t, ranOn(d), d.Payload.ExecutionID, 30*time.Second, func(e executionRecord) bool { return e.CompletedAt != nil })
		if e.Success || e.State != "CANCELLED" {
			t.Fatalf("history of an accepted item of the cancelled run's node b: %+v", e)
		}
	}
	if n := len(byJob(recv.Deliveries(nil))["sc"]); n != 0 {
		t.Fatalf("node c fired %d times after its run was cancelled", n)
	}
}
