package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWorkflowCalendarsSteerScheduledRuns: a workflow excluding today's calendar makes no scheduled run,
// one restricted to it runs; a workflow naming an unknown calendar is refused naming the field and the
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

	runs := func(name string) []wfRun {
		var out struct {
			Items []wfRun `json:"items"`
		}
		mustDo(t, c.peers[1], "GET", "/api/v1/workflows/"+name+"/runs", nil, http.StatusOK, &out)
		return out.Items
	}
	if !eventually(30*time.Second, func() bool { return len(runs("incl")) >= 3 }) {
		t.Fatalf("the workflow restricted to today's calendar made %d runs, want 3", len(runs("incl")))
	}
	if n := len(runs("excl")); n != 0 {
		t.Fatalf("the workflow excluding today made %d scheduled runs", n)
	}
	// a triggered run is never held back by the calendars
	mustDo(t, p, "POST", "/api/v1/workflows/excl/runs", nil, http.StatusAccepted, nil)

	raw = mustDo(t, p, "DELETE", "/api/v1/calendars/wf-today", nil, http.StatusConflict, nil)
	if !strings.Contains(string(raw), "workflow(s) excl, incl") {
		t.Fatalf("delete of a calendar workflows name refused as %s", raw)
	}
}
