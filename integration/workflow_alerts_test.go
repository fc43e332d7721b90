package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// wfNotification is what the tests read of a workflow run's notification (a webhook channel's data).
type wfNotification struct {
	Kind       string `json:"kind"`
	Job        string `json:"job"`
	DedupKey   string `json:"dedupKey"`
	Resolve    bool   `json:"resolve"`
	Title      string `json:"title"`
	ConsoleURL string `json:"consoleUrl"`
	Workflow   *struct {
		Name        string `json:"name"`
		RunID       string `json:"runId"`
		FailedNodes []struct {
			Node, Job, Error string
		} `json:"failedNodes"`
	} `json:"workflow"`
}

func wfNotificationsOf(t *testing.T, reqs []captured) []wfNotification {
	t.Helper()
	var out []wfNotification
	for _, r := range reqs {
		var ev struct {
			Data wfNotification `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatalf("channel event %s (%v)", r.Body, err)
		}
		out = append(out, ev.Data)
	}
	return out
}

// TestWorkflowAlertOncePerFailedRun: on 3 peers, a run whose node fails sends exactly one WORKFLOW_FAILED
// through the workflow's rule (not one per peer, not one per failed item), naming the run, the failed node
// and linking to the run's console page; after kill -9 of the engine's peer the next one does not send it
// again, and the run's retry that succeeds sends one RECOVERED on the same dedup key.
func TestWorkflowAlertOncePerFailedRun(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.JobName == "alb" {
			return http.StatusInternalServerError, `{"error":"boom"}`, 0
		}
		return http.StatusOK, `{}`, 0
	})
	ops := newCapture(t, nil)
	c := newCluster(t, 3, withSessionTimeout(2*time.Second))
	p := c.peers[0]
	webhookChannel(t, p, "ops", ops.srv.URL+"/alerts")
	for _, j := range []string{"ala", "alb", "alc"} {
		mustDo(t, p, "POST", "/api/v1/jobs", oneOff(j, 2, recv.URL), http.StatusCreated, nil)
	}
	// a job's event is refused on a workflow's rule, naming the field
	bad := map[string]any{"name": "bad", "nodes": []any{wfNode("a", "ala")},
		"alerts": map[string]any{"rules": []any{map[string]any{"on": []string{"FIRE_FAILED"}, "channels": []string{"ops"}}}}}
	if raw := mustDo(t, p, "POST", "/api/v1/workflows", bad, http.StatusBadRequest, nil); !strings.Contains(string(raw), "alerts.rules[0].on[0]") {
		t.Fatalf("a job's event on a workflow's rule refused as %s", raw)
	}
	wf := map[string]any{"name": "alerting", "nodes": []any{
		wfNode("a", "ala"), wfNode("b", "alb", edgeOn("a", "success")), wfNode("c", "alc", edgeOn("b", "success")),
	}, "alerts": map[string]any{"rules": []any{map[string]any{"on": []string{"WORKFLOW_FAILED", "RECOVERED"}, "channels": []string{"ops"}}}}}
	mustDo(t, p, "POST", "/api/v1/workflows", wf, http.StatusCreated, nil)
	holder := engineHolder(t, c.peers, nil)
	var run wfRun
	mustDo(t, c.peers[1], "POST", "/api/v1/workflows/alerting/runs", nil, http.StatusAccepted, &run)
	if got := waitRun(t, c.peers[2], "alerting", run.ID, 30*time.Second); got.State != "FAILED" {
		t.Fatalf("run %s, want FAILED", got.State)
	}
	ops.wait(t, 1, 20*time.Second)

	// kill -9 the engine's peer: the next one loads the FAILED run again and tells it, and the fence keeps
	// that from sending a second message
	holder.Kill()
	var survivors []*harness.Peer
	for _, q := range c.peers {
		if q != holder {
			survivors = append(survivors, q)
		}
	}
	engineHolder(t, survivors, holder)

	recv.Respond(nil) // b succeeds from now on: the retry recovers
	mustDo(t, survivors[0], "POST", "/api/v1/workflows/alerting/runs/"+run.ID+"/retry", nil, http.StatusAccepted, nil)
	ops.wait(t, 2, 30*time.Second)
	time.Sleep(2 * time.Second) // a bounded wait: a duplicate from another peer would show up
	ns := wfNotificationsOf(t, ops.all())
	if len(ns) != 2 {
		t.Fatalf("%d notifications, want one failure and one recovery: %+v", len(ns), ns)
	}
	f, r := ns[0], ns[1]
	if f.Kind != "WORKFLOW_FAILED" || f.Job != "" || f.Workflow == nil || f.Workflow.Name != "alerting" || f.Workflow.RunID != run.ID ||
		len(f.Workflow.FailedNodes) != 1 || f.Workflow.FailedNodes[0].Node != "b" || f.Workflow.FailedNodes[0].Job != "alb" ||
		!strings.Contains(f.Workflow.FailedNodes[0].Error, "item") || !strings.Contains(f.Title, "failed at node b") {
		t.Fatalf("failure notification %+v", f)
	}
	if !strings.HasSuffix(f.ConsoleURL, "/#/workflows/alerting/runs/"+run.ID) || !strings.HasPrefix(f.ConsoleURL, "http") {
		t.Fatalf("console link %q", f.ConsoleURL)
	}
	if r.Kind != "RECOVERED" || !r.Resolve || r.DedupKey != f.DedupKey || r.Workflow == nil || r.Workflow.RunID != run.ID {
		t.Fatalf("recovery notification %+v (failure's dedup key %q)", r, f.DedupKey)
	}
}

// engineHolder waits for one of peers to log that it took the workflow engine duty, and returns it.
func engineHolder(t *testing.T, peers []*harness.Peer, not *harness.Peer) *harness.Peer {
	t.Helper()
	var holder *harness.Peer
	if !eventually(30*time.Second, func() bool {
		for _, q := range peers {
			if q != not && strings.Contains(q.Log(), "workflow engine duty taken") {
				holder = q
				return true
			}
		}
		return false
	}) {
		t.Fatal("no peer took the workflow engine duty")
	}
	return holder
}
