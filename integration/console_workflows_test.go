package integration

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejserver/ejserver/integration/harness"
)

// dagNode is one node box of a run's SVG graph as the page drew it, with dagre's layout of it.
type dagNode struct {
	Name      string  `json:"name"`
	State     string  `json:"state"`
	Transform string  `json:"transform"`
	Fill      string  `json:"fill"`
	X, Y      float64 // the box's centre as drawn (its translate plus half its size)
	DagreX    float64 `json:"dagreX"`
	DagreY    float64 `json:"dagreY"`
	W         float64 `json:"w"`
	H         float64 `json:"h"`
}

var translate = regexp.MustCompile(`^translate\(([-\d.]+),([-\d.]+)\)$`)

// TestConsoleWorkflows drives the workflow pages in headless Chromium: the list, a diamond workflow's page
// (its definition drawn, a parameter that is not a JSON object refused next to the field, a run triggered
// from the form), and the run's page: the SVG has the 4 nodes where dagre laid them out (parents above
// children), each coloured by its state, the failed node red, the `always` edge labelled; retry offered.
// Then a workflow is created from the console's form (field errors next to the fields), listed, edited and
// deleted.
func TestConsoleWorkflows(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.JobName == "cw-c" {
			return http.StatusInternalServerError, `{"error":"ledger locked"}`, 0
		}
		return http.StatusOK, `{}`, 0
	})
	c := newCluster(t, 1)
	p := c.peers[0]
	for _, j := range []string{"cw-a", "cw-b", "cw-c", "cw-d"} {
		mustDo(t, p, "POST", "/api/v1/jobs", oneOff(j, 1, recv.URL), http.StatusCreated, nil)
	}
	wf := map[string]any{"name": "diamond", "nodes": []any{
		wfNode("extract", "cw-a"), wfNode("load-east", "cw-b", edgeOn("extract", "success")),
		wfNode("load-west", "cw-c", edgeOn("extract", "success")),
		wfNode("report", "cw-d", edgeOn("load-east", "success"), edgeOn("load-west", "always")),
	}}
	mustDo(t, p, "POST", "/api/v1/workflows", wf, http.StatusCreated, nil)

	b := newBrowser(t, p.URL("/"))
	b.do("open the workflows", 20*time.Second, chromedp.Navigate(p.URL("/#/workflows")))
	b.waitText("main h1", "Workflows", 10*time.Second)
	b.waitText("#wf-table tbody", "diamond", 10*time.Second)

	b.route("#/workflows/diamond", "Workflow diamond")
	b.waitFor("the definition's graph", `document.querySelectorAll("#wf-graph g.dag-node").length === 4`, 10*time.Second)
	b.set("wf-params", `["not", "an object"]`)
	eval[chromedp.Void](b, `document.querySelector("#wf-trigger-btn").click()`)
	b.waitText("#wf-params-error", "parameters: must be a JSON object", 5*time.Second)
	b.set("wf-params", `{"day": "2026-11-24"}`)
	eval[chromedp.Void](b, `document.querySelector("#wf-trigger-btn").click()`)
	b.waitFor("the run in the runs list", `document.querySelectorAll("#wf-runs tbody tr").length === 1`, 10*time.Second)

	var runs struct {
		Items []struct {
			ID         string          `json:"id"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"items"`
	}
	mustDo(t, p, "GET", "/api/v1/workflows/diamond/runs", nil, http.StatusOK, &runs)
	if len(runs.Items) != 1 || string(runs.Items[0].Parameters) != `{"day":"2026-11-24"}` {
		t.Fatalf("runs after the console's trigger: %+v", runs.Items)
	}
	id := runs.Items[0].ID
	run := waitRun(t, p, "diamond", id, 30*time.Second)
	if run.State != "FAILED" {
		t.Fatalf("run %s, want FAILED (load-west's item answers 500): %+v", run.State, run)
	}

	b.route("#/workflows/diamond/runs/"+id, "Run "+id[:8]+" of diamond")
	b.waitFor("the run's graph with its ended states", `(() => { const s = document.querySelector("#run-graph svg");
		return !!s && !!s.dag && s.querySelectorAll("g.dag-node").length === 4 && !s.querySelector('g.dag-node[data-state="PENDING"], g.dag-node[data-state="RUNNING"]'); })()`, 15*time.Second)
	raw := eval[string](b, `JSON.stringify([...document.querySelectorAll("#run-graph g.dag-node")].map((g) => {
		const svg = g.ownerSVGElement, n = svg.dag.node(g.dataset.node), r = g.querySelector("rect");
		return {name: g.dataset.node, state: g.dataset.state, transform: g.getAttribute("transform"), fill: getComputedStyle(r).fill,
			dagreX: n.x, dagreY: n.y, w: Number(r.getAttribute("width")), h: Number(r.getAttribute("height"))};
	}))`)
	var nodes []dagNode
	if err := json.Unmarshal([]byte(raw), &nodes); err != nil {
		t.Fatal(err)
	}
	byName := map[string]dagNode{}
	for _, n := range nodes {
		m := translate.FindStringSubmatch(n.Transform)
		if m == nil {
			t.Fatalf("node %s: transform %q", n.Name, n.Transform)
		}
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		n.X, n.Y = x+n.W/2, y+n.H/2
		if d := n.X - n.DagreX; d > 0.1 || d < -0.1 || n.Y-n.DagreY > 0.1 || n.Y-n.DagreY < -0.1 {
			t.Errorf("node %s drawn at (%.1f, %.1f), dagre laid it out at (%.1f, %.1f)", n.Name, n.X, n.Y, n.DagreX, n.DagreY)
		}
		byName[n.Name] = n
	}
	if len(byName) != 4 {
		t.Fatalf("the graph has nodes %v, want the diamond's 4", nodes)
	}
	want := map[string]string{"extract": "SUCCEEDED", "load-east": "SUCCEEDED", "load-west": "FAILED", "report": "SUCCEEDED"}
	for name, st := range want {
		if api, _ := run.node(name); api != st || byName[name].State != st {
			t.Errorf("node %s: API %s, graph %s, want %s", name, api, byName[name].State, st)
		}
	}
	for _, e := range [][2]string{{"extract", "load-east"}, {"extract", "load-west"}, {"load-east", "report"}, {"load-west", "report"}} {
		if byName[e[0]].Y >= byName[e[1]].Y {
			t.Errorf("parent %s at y %.1f is not above child %s at y %.1f", e[0], byName[e[0]].Y, e[1], byName[e[1]].Y)
		}
	}
	// colours by state: the failed node red, the succeeded ones green, and the two differ
	if f := byName["load-west"].Fill; f != "rgb(255, 235, 233)" {
		t.Errorf("the failed node's fill %s, want the failure colour rgb(255, 235, 233)", f)
	}
	if f := byName["extract"].Fill; f != "rgb(218, 251, 225)" || byName["report"].Fill != f {
		t.Errorf("succeeded nodes' fill %s and %s, want rgb(218, 251, 225)", f, byName["report"].Fill)
	}
	if on := eval[string](b, `(document.querySelector('#run-graph g.dag-edge[data-from="load-west"][data-to="report"] text') || {}).textContent || ""`); on != "always" {
		t.Errorf("the edge load-west -> report is labelled %q, want always", on)
	}
	if n := b.count(`#run-graph g.dag-edge`); n != 4 {
		t.Errorf("%d edges drawn, want 4", n)
	}
	b.waitText("#run-nodes tbody", "item 0: FAILED", 5*time.Second)
	if b.count(`#run-controls [data-wf-action="retry"]`) != 1 {
		t.Error("a failed run offers no retry")
	}
	b.screenshot("workflow-run.png", true)

	// retry from the failed node: the page follows the run to its new end
	recv.Respond(nil)
	eval[chromedp.Void](b, `document.querySelector('#run-controls [data-wf-action="retry"]').click()`)
	b.waitFor("the retried run to succeed", `document.querySelector("#run-state") && document.querySelector("#run-state").textContent.includes("SUCCEEDED")`, 30*time.Second)
	if st := eval[string](b, `document.querySelector('#run-graph g.dag-node[data-node="load-west"]').dataset.state`); st != "SUCCEEDED" {
		t.Errorf("after the retry load-west is %s, want SUCCEEDED", st)
	}
	// the one peer holds the engine duty: it counted the run's start, its failed end and its retried end,
	// and the node fires' start delays (4 first, then load-west and report below it again)
	var text string
	if !eventually(10*time.Second, func() bool {
		_, body, err := p.Do("GET", "/metrics", nil, nil)
		text = string(body)
		return err == nil && strings.Contains(text, `ejserver_workflow_runs_ended_total{outcome="SUCCEEDED",workflow="diamond"} 1`)
	}) {
		t.Fatalf("no retried run's end in the metrics:\n%s", grepLines(text, "ejserver_workflow_"))
	}
	for _, line := range []string{
		`ejserver_workflow_runs_started_total{workflow="diamond"} 1`,
		`ejserver_workflow_runs_ended_total{outcome="FAILED",workflow="diamond"} 1`,
		`ejserver_workflow_run_duration_seconds_count{workflow="diamond"} 2`,
		`ejserver_workflow_node_start_delay_seconds_count{workflow="diamond"} 6`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("metrics lack %s:\n%s", line, grepLines(text, "ejserver_workflow_"))
		}
	}

	// a workflow made in the console: a missing job is refused next to the Nodes box, then it is created and
	// listed, and its page shows its alert rules; an unknown calendar is refused next to its field; deleted
	b.route("#/workflows", "Workflows")
	b.do("open the new workflow form", 10*time.Second, chromedp.Click(chromedp.ID("wf-new")), chromedp.WaitVisible(chromedp.ID("wf-f-nodes")))
	b.waitText("main h1", "New workflow", 5*time.Second)
	b.set("wf-f-name", "console-made")
	b.set("wf-f-nodes", `[{"name": "one", "job": "cw-a"}, {"name": "two", "job": "nope", "after": [{"node": "one"}]}]`)
	b.set("wf-f-alerts", `{"rules": [{"on": ["WORKFLOW_FAILED", "RECOVERED"], "channels": ["oncall"]}]}`)
	eval[chromedp.Void](b, `document.querySelector("#wf-f-save").click()`)
	b.waitText("#wf-f-nodes-error", `job "nope" not found`, 10*time.Second)
	b.set("wf-f-nodes", `[{"name": "one", "job": "cw-a"}, {"name": "two", "job": "cw-b", "after": [{"node": "one", "on": "always"}]}]`)
	b.waitFor("the typed nodes' graph", `document.querySelectorAll("#wf-f-graph g.dag-node").length === 2`, 5*time.Second)
	eval[chromedp.Void](b, `document.querySelector("#wf-f-save").click()`)
	b.waitText("main h1", "Workflow console-made", 10*time.Second)
	b.waitText("#wf-alert-rules", "WORKFLOW_FAILED RECOVERED -> oncall", 10*time.Second)
	b.waitFor("the created workflow's graph", `document.querySelectorAll("#wf-graph g.dag-node").length === 2`, 10*time.Second)
	var made struct {
		Overlap string `json:"overlap"`
		Nodes   []struct {
			Name, Job string
			After     []struct{ Node, On string }
		} `json:"nodes"`
	}
	mustDo(t, p, "GET", "/api/v1/workflows/console-made", nil, http.StatusOK, &made)
	if made.Overlap != "skip" || len(made.Nodes) != 2 || made.Nodes[1].Job != "cw-b" || len(made.Nodes[1].After) != 1 || made.Nodes[1].After[0].On != "always" {
		t.Fatalf("the workflow made in the console: %+v", made)
	}
	b.route("#/workflows", "Workflows")
	b.waitText("#wf-table tbody", "console-made", 10*time.Second)
	b.route("#/workflows/console-made/edit", "Edit workflow console-made")
	b.waitFor("the edit form", `!!document.querySelector("#wf-f-exclude")`, 10*time.Second)
	b.set("wf-f-cron", "0 0 2 * * ?")
	b.set("wf-f-exclude", "no-such-calendar")
	eval[chromedp.Void](b, `document.querySelector("#wf-f-save").click()`)
	b.waitText("#wf-f-exclude-error", "no-such-calendar", 10*time.Second)
	b.route("#/workflows/console-made", "Workflow console-made")
	b.do("delete it", 10*time.Second, chromedp.Click(chromedp.ID("wf-delete")), chromedp.Click(chromedp.CSS("#dialog button.danger")))
	b.waitText("main h1", "Workflows", 10*time.Second)
	mustDo(t, p, "GET", "/api/v1/workflows/console-made", nil, http.StatusNotFound, nil)

	if probs := b.problems(); len(probs) > 0 {
		t.Errorf("console problems: %v", probs)
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
