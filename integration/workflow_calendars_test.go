package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWorkflowCalendarsSteerScheduledRuns: a workflow excluding today's calendar runs no scheduled run (each
// is recorded SKIPPED, naming the calendar, and counted), one restricted to it runs; a workflow naming an unknown calendar is refused naming the field and the
// calendar; deleting a calendar a workflow names is refused (409) naming the workflow.
func TestWorkflowCalendarsSteerScheduledRuns(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	p := c.peers[0]
	zone, loc := noonZone(time.Now())
	today := time.Now().In(loc).Format(time.DateOnly)
	mustDo(t, p, "POST", "/api/v1/calendars", map[string]any{"name": "wf-today", "timeZone": zone, "dates": []string{today}}, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs", oneOff("calj", 1, recv.URL), http.StatusCreated, nil)
	wf := func(name, field, cal string) map[string]any {
		return map[string]any{"name": name, "cron": "* * * * * ?", "overlap": "allow", field: []string{cal},
			"nodes": []any{wfNode("a", "calj")}}
	}
	raw := mustDo(t, p, "POST", "/api/v1/workflows", wf("ghost", "excludeCalendars", "no-such-calendar"), http.StatusBadRequest, nil)
	if !strings.Contains(string(raw), "excludeCalendars") || !strings.Contains(string(raw), "no-such-calendar") {
		t.Fatalf("unknown calendar refused as %s", raw)
	}
	mustDo(t, p, "POST", "/api/v1/workflows", wf("excl", "excludeCalendars", "wf-today"), http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/workflows", wf("incl", "includeCalendars", "wf-today"), http.StatusCreated, nil)

	type calRun struct {
		wfRun
		Trigger string `json:"trigger"`
		Reason  string `json:"reason"`
	}
	runs := func(name string) []calRun {
		var out struct {
			Items []calRun `json:"items"`
		}
		mustDo(t, c.peers[1], "GET", "/api/v1/workflows/"+name+"/runs", nil, http.StatusOK, &out)
		return out.Items
	}
	if !eventually(30*time.Second, func() bool { return len(runs("incl")) >= 3 && len(runs("excl")) >= 2 }) {
		t.Fatalf("the workflow restricted to today's calendar made %d runs (want 3), the one excluding it %d (want 2 SKIPPED)",
			len(runs("incl")), len(runs("excl")))
	}
	// the runs the calendar leaves out are recorded SKIPPED, naming the calendar, and fire nothing
	for _, r := range runs("excl") {
		if r.State != "SKIPPED" || r.Trigger != "SCHEDULE" || r.Reason != "calendar: wf-today excludes the day" {
			t.Fatalf("a scheduled run of the workflow excluding today: %s %s %q, want SKIPPED naming wf-today", r.State, r.Trigger, r.Reason)
		}
		for _, n := range r.Nodes {
			if n.State != "SKIPPED" || n.Fire != "" {
				t.Fatalf("node %s of a calendar-skipped run: %s, fire %q", n.Name, n.State, n.Fire)
			}
		}
	}
	for _, r := range runs("incl") {
		if r.State == "SKIPPED" {
			t.Fatalf("a run of the workflow restricted to today was skipped: %q", r.Reason)
		}
	}
	// and counted by the peer holding the engine duty
	if !eventually(10*time.Second, func() bool {
		var sum float64
		for _, q := range c.peers {
			sum += counterSum(t, q, `ejserver_workflow_runs_skipped_total{reason="calendar",workflow="excl"}`)
		}
		return sum >= 2
	}) {
		t.Fatal("the calendar-skipped runs are not in ejserver_workflow_runs_skipped_total")
	}
	// a triggered run is never held back by the calendars
	mustDo(t, p, "POST", "/api/v1/workflows/excl/runs", nil, http.StatusAccepted, nil)

	raw = mustDo(t, p, "DELETE", "/api/v1/calendars/wf-today", nil, http.StatusConflict, nil)
	if !strings.Contains(string(raw), "workflow(s) excl, incl") {
		t.Fatalf("delete of a calendar workflows name refused as %s", raw)
	}
}
