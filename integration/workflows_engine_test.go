package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// The workflow engine's guarantees under faults: cancel ends the items in flight (the engine's peer killed
// at each stage of a run's advance: workflow_kill_test.go).

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
