package integration

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// wfRun is what the tests read of a workflow run.
type wfRun struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Nodes []struct {
		Name   string          `json:"name"`
		State  string          `json:"state"`
		Fire   string          `json:"fire"`
		Error  string          `json:"error"`
		Output json.RawMessage `json:"output"`
	} `json:"nodes"`
}

func (r wfRun) node(name string) (state, errText string) {
	for _, n := range r.Nodes {
		if n.Name == name {
			return n.State, n.Error
		}
	}
	return "", ""
}

// wfBody is an item's `workflow` object.
type wfBody struct {
	Name       string          `json:"name"`
	RunID      string          `json:"runId"`
	Node       string          `json:"node"`
	Attempt    int             `json:"attempt"`
	Parameters json.RawMessage `json:"parameters"`
	Parents    []struct {
		Node    string          `json:"node"`
		Outcome string          `json:"outcome"`
		Output  json.RawMessage `json:"output"`
	} `json:"parents"`
}

func wfNode(name, job string, after ...map[string]any) map[string]any {
	n := map[string]any{"name": name, "job": job}
	if len(after) > 0 {
		n["after"] = after
	}
	return n
}

func edgeOn(node, on string) map[string]any { return map[string]any{"node": node, "on": on} }

// oneOff is a job with no cron and no retries beyond the first attempt.
func oneOff(name string, items int, url string) map[string]any {
	j := job(name, "", items, url)
	j["retry"] = map[string]any{"maxAttempts": 1}
	return j
}

// waitRun polls a run until it ended, and returns it.
func waitRun(t *testing.T, p *harness.Peer, wf, id string, timeout time.Duration) wfRun {
	t.Helper()
	var r wfRun
	if !eventually(timeout, func() bool {
		status, _, err := p.Do("GET", "/api/v1/workflows/"+wf+"/runs/"+id, nil, &r)
		return err == nil && status == http.StatusOK && r.State != "PENDING" && r.State != "RUNNING"
	}) {
		t.Fatalf("run %s of %s still %s after %s: %+v", id, wf, r.State, timeout, r)
	}
	return r
}

// byJob groups deliveries by job, each job's in arrival order.
func byJob(ds []harness.Delivery) map[string][]harness.Delivery {
	out := map[string][]harness.Delivery{}
	for _, d := range ds {
		out[d.Payload.JobName] = append(out[d.Payload.JobName], d)
	}
	return out
}

func TestWorkflowDiamondRunsInOrderWithOutputs(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.JobName == "wa" {
			return http.StatusOK, `{"output":{"rows":` + string(rune('0'+d.Payload.ShardingItem)) + `}}`, 300 * time.Millisecond
		}
		return http.StatusOK, `{}`, 300 * time.Millisecond
	})
	c := newCluster(t, 3)
	p := c.peers[0]
	for _, j := range []string{"wa", "wb", "wc", "wd"} {
		mustDo(t, p, "POST", "/api/v1/jobs", oneOff(j, 2, recv.URL), http.StatusCreated, nil)
	}
	wf := map[string]any{"name": "diamond", "nodes": []any{
		wfNode("a", "wa"), wfNode("b", "wb", edgeOn("a", "success")), wfNode("c", "wc", edgeOn("a", "success")),
		wfNode("d", "wd", edgeOn("b", "success"), edgeOn("c", "success")),
	}}
	mustDo(t, p, "POST", "/api/v1/workflows", wf, http.StatusCreated, nil)
	var run wfRun
	mustDo(t, c.peers[1], "POST", "/api/v1/workflows/diamond/runs", map[string]any{"parameters": map[string]any{"day": "2026-11-24"}},
		http.StatusAccepted, &run)
	got := waitRun(t, c.peers[2], "diamond", run.ID, 30*time.Second)
	if got.State != "SUCCEEDED" {
		t.Fatalf("run %s, want SUCCEEDED: %+v", got.State, got)
	}
	jobs := byJob(recv.Deliveries(nil))
	for _, j := range []string{"wa", "wb", "wc", "wd"} {
		if len(jobs[j]) != 2 {
			t.Fatalf("job %s got %d deliveries, want its 2 items once", j, len(jobs[j]))
		}
		for _, d := range jobs[j] {
			var b wfBody
			_ = json.Unmarshal(d.Body, &struct {
				Workflow *wfBody `json:"workflow"`
			}{&b})
			if d.Payload.Source != "WORKFLOW" || b.Name != "diamond" || b.RunID != run.ID || b.Attempt != 1 ||
				!strings.Contains(string(b.Parameters), "2026-11-24") {
				t.Fatalf("job %s item body: source %s, workflow %+v", j, d.Payload.Source, b)
			}
			if j == "wb" && (len(b.Parents) != 1 || b.Parents[0].Node != "a" || b.Parents[0].Outcome != "SUCCEEDED" ||
				string(b.Parents[0].Output) != `{"0":{"rows":0},"1":{"rows":1}}`) {
				t.Fatalf("b's parents %+v: want a SUCCEEDED with its items' outputs", b.Parents)
			}
		}
	}
	// each node's items arrive only after every item of its parents answered (300 ms each)
	last := func(j string) time.Time { return jobs[j][len(jobs[j])-1].ArrivedAt.Add(300 * time.Millisecond) }
	first := func(j string) time.Time { return jobs[j][0].ArrivedAt }
	for _, e := range [][2]string{{"wa", "wb"}, {"wa", "wc"}, {"wb", "wd"}, {"wc", "wd"}} {
		if first(e[1]).Before(last(e[0])) {
			t.Fatalf("%s started at %s, before %s ended at %s", e[1], first(e[1]), e[0], last(e[0]))
		}
	}
}

func TestWorkflowFailureStopsSuccessBranchAndRunsFailureBranch(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.JobName == "fb" && d.Payload.ShardingItem == 1 {
			return http.StatusInternalServerError, `{"error":"boom"}`, 0
		}
		return http.StatusOK, `{}`, 0
	})
	c := newCluster(t, 3)
	p := c.peers[0]
	for _, j := range []string{"fa", "fb", "fd", "fe", "ff"} {
		mustDo(t, p, "POST", "/api/v1/jobs", oneOff(j, 2, recv.URL), http.StatusCreated, nil)
	}
	wf := map[string]any{"name": "branches", "nodes": []any{
		wfNode("a", "fa"), wfNode("b", "fb", edgeOn("a", "success")),
		wfNode("d", "fd", edgeOn("b", "success")), wfNode("e", "fe", edgeOn("b", "failure")),
		wfNode("f", "ff", edgeOn("d", "always")),
	}}
	mustDo(t, p, "POST", "/api/v1/workflows", wf, http.StatusCreated, nil)
	var run wfRun
	mustDo(t, p, "POST", "/api/v1/workflows/branches/runs", nil, http.StatusAccepted, &run)
	got := waitRun(t, c.peers[1], "branches", run.ID, 30*time.Second)
	if got.State != "FAILED" {
		t.Fatalf("run %s, want FAILED (b failed)", got.State)
	}
	want := map[string]string{"a": "SUCCEEDED", "b": "FAILED", "d": "SKIPPED", "e": "SUCCEEDED", "f": "SUCCEEDED"}
	for n, st := range want {
		if s, _ := got.node(n); s != st {
			t.Fatalf("node %s %s, want %s: %+v", n, s, st, got)
		}
	}
	if _, e := got.node("b"); !strings.Contains(e, "item 1") {
		t.Fatalf("b's error %q does not name its failed item", e)
	}
	jobs := byJob(recv.Deliveries(nil))
	if len(jobs["fd"]) != 0 || len(jobs["fe"]) != 2 || len(jobs["ff"]) != 2 {
		t.Fatalf("deliveries: d %d (want 0), e %d (want 2), f %d (want 2)", len(jobs["fd"]), len(jobs["fe"]), len(jobs["ff"]))
	}
	// retry from the failed node: b runs again (now succeeding), then d and f; a is not repeated
	recv.Respond(nil)
	mustDo(t, c.peers[2], "POST", "/api/v1/workflows/branches/runs/"+run.ID+"/retry", nil, http.StatusAccepted, nil)
	if !eventually(30*time.Second, func() bool {
		var r wfRun
		_, _, err := p.Do("GET", "/api/v1/workflows/branches/runs/"+run.ID, nil, &r)
		got = r
		return err == nil && r.State == "SUCCEEDED"
	}) {
		t.Fatalf("retried run %s, want SUCCEEDED: %+v", got.State, got)
	}
	jobs = byJob(recv.Deliveries(nil))
	if len(jobs["fa"]) != 2 || len(jobs["fb"]) != 4 || len(jobs["fd"]) != 2 {
		t.Fatalf("after the retry: a %d (want 2), b %d (want 4), d %d (want 2)", len(jobs["fa"]), len(jobs["fb"]), len(jobs["fd"]))
	}
}

func TestWorkflowContinuesAfterTheAdvancingPeerIsKilled(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		return http.StatusOK, `{}`, 1500 * time.Millisecond
	})
	c := newCluster(t, 3, withSessionTimeout(4*time.Second))
	p := c.peers[0]
	chain := []string{"ka", "kb", "kc", "kd"}
	failoverChain(t, p, "chain", chain, recv.URL) // the killed peer's items of the node in flight are re-POSTed by a survivor
	var holder *harness.Peer
	if !eventually(15*time.Second, func() bool {
		for _, q := range c.peers {
			if strings.Contains(q.Log(), "workflow engine duty taken") {
				holder = q
				return true
			}
		}
		return false
	}) {
		t.Fatal("no peer took the workflow engine duty")
	}
	var others []*harness.Peer
	for _, q := range c.peers {
		if q != holder {
			others = append(others, q)
		}
	}
	var run wfRun
	mustDo(t, others[0], "POST", "/api/v1/workflows/chain/runs", nil, http.StatusAccepted, &run)
	// kill the engine's peer while the second node's items are in flight (each peer runs one of them)
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(byJob(ds)["kb"]) >= 3 }); !ok {
		t.Fatal("the second node never fired")
	}
	holder.Kill()
	got := waitRun(t, others[1], "chain", run.ID, 45*time.Second)
	if got.State != "SUCCEEDED" {
		t.Fatalf("run %s after the kill, want SUCCEEDED: %+v", got.State, got)
	}
	// every node fired once: each item of each job has one execution id (a failover re-POST keeps it)
	jobs := byJob(recv.Deliveries(nil))
	for _, j := range chain {
		ids := map[int][]string{}
		for _, d := range jobs[j] {
			if !slices.Contains(ids[d.Payload.ShardingItem], d.Payload.ExecutionID) {
				ids[d.Payload.ShardingItem] = append(ids[d.Payload.ShardingItem], d.Payload.ExecutionID)
			}
		}
		if len(ids) != 3 {
			t.Fatalf("job %s: items %v ran, want all 3", j, ids)
		}
		for item, list := range ids {
			if len(list) != 1 {
				t.Fatalf("job %s item %d ran as %d executions %v: its node fired more than once", j, item, len(list), list)
			}
		}
	}
}

func TestWorkflowRefusesCyclesAndMissingJobs(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", oneOff("vj", 1, recv.URL), http.StatusCreated, nil)
	tests := []struct {
		name, field, text string
		nodes             []any
	}{
		{"cycle", "nodes[0].after", `node "x" is on a cycle`, []any{wfNode("x", "vj", edgeOn("z", "success")),
			wfNode("y", "vj", edgeOn("x", "success")), wfNode("z", "vj", edgeOn("y", "success"))}},
		{"missing job", "nodes[1].job", `node "y": job "nope" not found`, []any{wfNode("x", "vj"), wfNode("y", "nope", edgeOn("x", "always"))}},
		{"unknown parent", "nodes[0].after[0].node", `"ghost"`, []any{wfNode("x", "vj", edgeOn("ghost", "success"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := mustDo(t, p, "POST", "/api/v1/workflows", map[string]any{"name": "bad", "nodes": tt.nodes}, http.StatusBadRequest, nil)
			var prob struct {
				Field  string `json:"field"`
				Detail string `json:"detail"`
			}
			if err := json.Unmarshal(raw, &prob); err != nil || !strings.HasPrefix(prob.Field, tt.field) || !strings.Contains(prob.Detail, tt.text) {
				t.Fatalf("problem %s: want field %s saying %s", raw, tt.field, tt.text)
			}
		})
	}
	mustDo(t, p, "GET", "/api/v1/workflows/bad", nil, http.StatusNotFound, nil)

	// the CLI: apply a file (created, then replaced), run it to its end, show it; a cycle is refused naming it
	env := []string{"EJ_SERVER=" + p.Addr}
	file := writeFile(t, t.TempDir(), "wf.yaml", "- name: cli-wf\n  nodes:\n    - {name: one, job: vj}\n    - {name: two, job: vj, after: [{node: one}]}\n")
	if out := cliOK(t, env, "workflow", "apply", "-f", file); out != "created workflow cli-wf\n" {
		t.Fatalf("apply: %q", out)
	}
	if out := cliOK(t, env, "workflow", "apply", "-f", file); out != "replaced workflow cli-wf\n" {
		t.Fatalf("apply again: %q", out)
	}
	out := cliOK(t, env, "workflow", "run", "cli-wf", "--parameters", `{"k":1}`, "--wait", "20s")
	if !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "two") {
		t.Fatalf("workflow run --wait: %s", out)
	}
	if out := cliOK(t, env, "workflow", "list"); !strings.Contains(out, "cli-wf") {
		t.Fatalf("workflow list: %s", out)
	}
	cyc := writeFile(t, t.TempDir(), "cyc.yaml", "name: cyc\nnodes:\n  - {name: a, job: vj, after: [{node: b}]}\n  - {name: b, job: vj, after: [{node: a}]}\n")
	if _, errOut, code := cliRun(t, env, "workflow", "apply", "-f", cyc); code == 0 || !strings.Contains(errOut, "cycle") {
		t.Fatalf("a cycle applied: exit %d, %s", code, errOut)
	}
}

// A scheduled workflow runs on its cron, and a run due while the previous one still goes is SKIPPED
// (overlap: skip) and fires nothing.
func TestWorkflowScheduleSkipsOverlappingRuns(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) {
		return http.StatusOK, `{}`, 2500 * time.Millisecond
	})
	c := newCluster(t, 2)
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", oneOff("sj", 1, recv.URL), http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/workflows", map[string]any{"name": "every", "cron": "* * * * * ?", "overlap": "skip",
		"nodes": []any{wfNode("only", "sj")}}, http.StatusCreated, nil)
	var runs struct{ Items []wfRun }
	states := map[string]int{}
	if !eventually(20*time.Second, func() bool {
		if _, _, err := p.Do("GET", "/api/v1/workflows/every/runs", nil, &runs); err != nil {
			return false
		}
		clear(states)
		for _, r := range runs.Items {
			states[r.State]++
		}
		return states["SUCCEEDED"] >= 1 && states["SKIPPED"] >= 1
	}) {
		t.Fatalf("runs by state %v, want a SUCCEEDED one and a SKIPPED one", states)
	}
	// the job ran once per run that was not skipped
	mustDo(t, p, "PUT", "/api/v1/workflows/every", map[string]any{"name": "every", "nodes": []any{wfNode("only", "sj")}},
		http.StatusOK, nil) // no cron: no more runs
	var ran int
	mustDo(t, p, "GET", "/api/v1/workflows/every/runs", nil, http.StatusOK, &runs)
	for _, r := range runs.Items {
		if r.State != "SKIPPED" {
			ran++
		}
	}
	if _, ok := recv.WaitFor(10*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= ran }); !ok || len(recv.Deliveries(nil)) > ran+1 {
		t.Fatalf("%d deliveries for %d runs that were not skipped", len(recv.Deliveries(nil)), ran)
	}
}
