package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejserver/ejserver/integration/harness"
)

// The six kinds of token: each role unscoped, then each role limited to the jobs named team-a-... or
// labelled payments.
var scopeGrants = []struct{ name, role, secret string }{
	{"ops", "admin", "scopes-admin-token-0001"},
	{"oncall", "operator", "scopes-operator-token-0001"},
	{"grafana", "viewer", "scopes-viewer-token-0001"},
	{"a-admin", "admin", "scopes-a-admin-token-0001"},
	{"a-op", "operator", "scopes-a-operator-token-0001"},
	{"a-view", "viewer", "scopes-a-viewer-token-0001"},
}

const teamScope = "prefix:team-a-|label:payments"

func scopedTokensFile(t *testing.T) string {
	var b strings.Builder
	for i, g := range scopeGrants {
		fmt.Fprintf(&b, "%s %s %s", g.role, g.name, g.secret)
		if i >= 3 {
			b.WriteString(" scope=" + teamScope)
		}
		b.WriteString("\n")
	}
	return writeFile(t, t.TempDir(), "tokens", b.String())
}

func as(i int) []string { return []string{"Authorization", "Bearer " + scopeGrants[i].secret} }

// Every endpoint against every role and scope on a real peer (real ZooKeeper, real history store): the
// statuses, the list filters and the 404s that hide other teams' jobs. The jobs: team-a-1 (in scope by
// its name), team-b-1 (in scope by its label, payments) and team-b-2 (outside).
func TestEveryEndpointForEveryRoleAndScope(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--api-tokens", scopedTokensFile(t), "--metrics-auth"))
	p := c.peers[0]
	admin := as(0)
	spec := func(name, label string) map[string]any {
		j := job(name, "@yearly", 2, recv.URL)
		if label != "" {
			j["label"] = label
		}
		return j
	}
	labels := map[string]string{"team-a-1": "", "team-b-1": "payments", "team-b-2": ""}
	for name, label := range labels {
		mustDo(t, p, "POST", "/api/v1/jobs", spec(name, label), http.StatusCreated, nil, admin...)
	}
	// one execution of each job, by the admin, for the history routes
	execOf := map[string]string{}
	for name := range labels {
		if !eventually(30*time.Second, func() bool {
			s, _, _ := p.Do("POST", "/api/v1/jobs/"+name+"/trigger", nil, nil, admin...)
			return s == http.StatusAccepted
		}) {
			t.Fatalf("trigger %s", name)
		}
	}
	if !eventually(30*time.Second, func() bool {
		var page struct {
			Items []struct{ ID, JobName string }
		}
		if s, _, err := p.Do("GET", "/api/v1/executions?limit=500", nil, &page, admin...); err != nil || s != 200 {
			return false
		}
		for _, e := range page.Items {
			execOf[e.JobName] = e.ID
		}
		return len(execOf) == 3
	}) {
		t.Fatalf("executions: %v", execOf)
	}

	// The table: a row is one request; want is the status for ops, oncall, grafana | a-admin, a-op, a-view.
	// {job} is filled with each of the row's jobs.
	type row struct {
		method, path string // path as the OpenAPI document writes it
		jobs         []string
		body         func(grant int, job string) any
		want         map[string]string // by job ("" for a row without one)
		setup        func(grant int, job string)
		backfill     func(job string) string // the id that fills {backfillId}
	}
	const (
		reads    = "200 200 200 | 200 200 200"
		hidden   = "200 200 200 | 404 404 404"
		operate  = "200 200 403 | 200 200 403"
		operateB = "200 200 403 | 404 404 403"
		item     = "204 204 403 | 204 204 403"
		itemB    = "204 204 403 | 404 404 403"
	)
	abl := []string{"team-a-1", "team-b-1", "team-b-2"}
	byJob := func(visible, outside string) map[string]string {
		return map[string]string{"team-a-1": visible, "team-b-1": visible, "team-b-2": outside}
	}
	fresh := func(prefix string) func(int, string) string { // a job name of its own for each token
		return func(grant int, _ string) string { return fmt.Sprintf("%s%d", prefix, grant) }
	}
	created := func(name func(int, string) string) func(int, string) {
		return func(grant int, j string) {
			mustDo(t, p, "POST", "/api/v1/jobs", spec(name(grant, j), ""), http.StatusCreated, nil, admin...)
		}
	}
	channel := func(g int, name string) any {
		if strings.HasSuffix(name, "-") { // a POST's fresh name per token
			name += fmt.Sprint(g)
		}
		return map[string]any{"name": name, "kind": "webhook", "webhook": map[string]any{"url": recv.URL}}
	}
	mustDo(t, p, "POST", "/api/v1/channels", channel(0, "ops-ch"), http.StatusCreated, nil, admin...)
	// workflows are cluster-wide (they reach jobs across scopes): like channels, with runs operated by operators
	workflowOf := func(g int, name string) any {
		if strings.HasSuffix(name, "-") {
			name += fmt.Sprint(g)
		}
		return map[string]any{"name": name, "nodes": []any{map[string]any{"name": "n", "job": "team-a-1"}}}
	}
	mustDo(t, p, "POST", "/api/v1/workflows", workflowOf(0, "ops-wf"), http.StatusCreated, nil, admin...)
	var wfRun struct{ ID, State string }
	mustDo(t, p, "POST", "/api/v1/workflows/ops-wf/runs", nil, http.StatusAccepted, &wfRun, admin...)
	if !eventually(20*time.Second, func() bool {
		_, _, err := p.Do("GET", "/api/v1/workflows/ops-wf/runs/"+wfRun.ID, nil, &wfRun, admin...)
		return err == nil && wfRun.State == "SUCCEEDED"
	}) {
		t.Fatalf("the workflow run is %s, want SUCCEEDED", wfRun.State)
	}
	const wfEnded = "409 409 403 | 404 404 403" // cancel or retry of a run that succeeded
	// a range without an @yearly fire: the backfills end at once and add no executions to the lists below
	backfillRange := func(int, string) any {
		return map[string]any{"from": "2024-06-01T00:00:00Z", "to": "2024-12-01T00:00:00Z"}
	}
	newBackfill := func(j string) string {
		var b struct{ ID string }
		mustDo(t, p, "POST", "/api/v1/jobs/"+j+"/backfill", backfillRange(0, j), http.StatusAccepted, &b, admin...)
		return b.ID
	}
	backfillOf := map[string]string{}
	for _, j := range abl {
		backfillOf[j] = newBackfill(j)
	}
	// a running backfill to cancel: of a disabled job of its own, where it waits for the job and stays RUNNING
	runningBackfill := func(g int, j string) {
		name := j + fmt.Sprint(g)
		s := spec(name, "")
		s["disabled"] = true
		mustDo(t, p, "POST", "/api/v1/jobs", s, http.StatusCreated, nil, admin...)
		var b struct{ ID string }
		mustDo(t, p, "POST", "/api/v1/jobs/"+name+"/backfill", map[string]any{"from": "2020-06-01T00:00:00Z", "to": "2025-06-01T00:00:00Z"},
			http.StatusAccepted, &b, admin...)
		backfillOf[name] = b.ID
	}
	cal := func(g int, name string) any {
		if strings.HasSuffix(name, "-") { // a POST's fresh name per token
			name += fmt.Sprint(g)
		}
		return map[string]any{"name": name, "annual": []string{"12-25"}}
	}
	mustDo(t, p, "POST", "/api/v1/calendars", cal(0, "ops-cal"), http.StatusCreated, nil, admin...)
	rows := []row{
		{method: "GET", path: "/api/v1/jobs/{jobName}", jobs: abl, want: byJob(reads, hidden)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/sharding", jobs: abl, want: byJob(reads, hidden)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/executions", jobs: abl, want: byJob(reads, hidden)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/traces", jobs: abl, want: byJob(reads, hidden)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/dump", jobs: abl, want: byJob(reads, hidden)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/stats", jobs: abl, want: byJob(reads, hidden)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/points", jobs: abl, want: byJob(reads, hidden)},
		{method: "POST", path: "/api/v1/jobs/{jobName}/trigger", jobs: abl,
			want: byJob("202 202 403 | 202 202 403", "202 202 403 | 404 404 403")},
		{method: "POST", path: "/api/v1/jobs/{jobName}/disable", jobs: abl, want: byJob(operate, operateB)},
		{method: "POST", path: "/api/v1/jobs/{jobName}/enable", jobs: abl, want: byJob(operate, operateB)},
		{method: "POST", path: "/api/v1/jobs/{jobName}/sharding/1/disable", jobs: abl, want: byJob(item, itemB)},
		{method: "POST", path: "/api/v1/jobs/{jobName}/sharding/1/enable", jobs: abl, want: byJob(item, itemB)},
		{method: "POST", path: "/api/v1/jobs/{jobName}/servers/127.0.0.1/disable", jobs: abl, want: byJob(item, itemB)},
		{method: "POST", path: "/api/v1/jobs/{jobName}/servers/127.0.0.1/enable", jobs: abl, want: byJob(item, itemB)},
		{method: "PUT", path: "/api/v1/jobs/{jobName}", jobs: abl, body: func(_ int, j string) any { return spec(j, labels[j]) },
			want: byJob("200 403 403 | 200 403 403", "200 403 403 | 404 403 403")},
		{method: "DELETE", path: "/api/v1/jobs/{jobName}", jobs: []string{"team-a-del-", "team-c-del-"},
			setup: created(func(g int, j string) string { return j + fmt.Sprint(g) }),
			want:  map[string]string{"team-a-del-": "204 403 403 | 204 403 403", "team-c-del-": "204 403 403 | 404 403 403"}},
		{method: "POST", path: "/api/v1/jobs", jobs: []string{"team-a-new-", "team-c-new-"},
			body: func(g int, j string) any { return spec(fresh(j)(g, j), "") },
			want: map[string]string{"team-a-new-": "201 403 403 | 201 403 403", "team-c-new-": "201 403 403 | 403 403 403"}},
		{method: "POST", path: "/api/v1/jobs/{jobName}/backfill", jobs: abl, body: backfillRange,
			want: byJob("202 202 403 | 202 202 403", "202 202 403 | 404 404 403")},
		{method: "GET", path: "/api/v1/jobs/{jobName}/backfill", jobs: abl, want: byJob(reads, hidden)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/backfill/{backfillId}", jobs: abl, want: byJob(reads, hidden),
			backfill: func(j string) string { return backfillOf[j] }},
		{method: "POST", path: "/api/v1/jobs/{jobName}/backfill/{backfillId}/cancel", jobs: []string{"team-a-bfc-", "team-c-bfc-"},
			setup: runningBackfill, backfill: func(name string) string { return backfillOf[name] },
			want: map[string]string{"team-a-bfc-": operate, "team-c-bfc-": operateB}},
		{method: "GET", path: "/api/v1/jobs", want: map[string]string{"": reads}},
		{method: "GET", path: "/api/v1/executions", want: map[string]string{"": reads}},
		{method: "GET", path: "/api/v1/executions/{id}", jobs: abl, want: byJob(reads, hidden)},
		// the executions are successes: a replay is refused (409) once the caller may see and operate the job
		{method: "POST", path: "/api/v1/executions/{id}/replay", jobs: abl,
			want: byJob("409 409 403 | 409 409 403", "409 409 403 | 404 404 403")},
		{method: "GET", path: "/api/v1/servers", want: map[string]string{"": hidden}},
		{method: "GET", path: "/api/v1/instances", want: map[string]string{"": hidden}},
		{method: "GET", path: "/api/v1/cron/next?cron=@hourly", want: map[string]string{"": reads}},
		// the console's charts over every job: each token sees its jobs' rows (checkScopedStats)
		{method: "GET", path: "/api/v1/stats", want: map[string]string{"": reads}},
		{method: "GET", path: "/api/v1/schedule/load", want: map[string]string{"": reads}},
		{method: "GET", path: "/api/v1/auth/whoami", want: map[string]string{"": reads}},
		{method: "GET", path: "/metrics", want: map[string]string{"": hidden}},
		{method: "POST", path: "/api/v1/servers/127.0.0.1/disable", want: map[string]string{"": "200 403 403 | 404 403 403"}},
		{method: "POST", path: "/api/v1/servers/127.0.0.1/enable", want: map[string]string{"": "200 403 403 | 404 403 403"}},
		// alert channels are cluster-wide: unscoped tokens read them, unscoped admins write them, scoped tokens
		// are told they do not exist; the notification history shows a scoped token its jobs' rows only
		{method: "GET", path: "/api/v1/channels", want: map[string]string{"": hidden}},
		{method: "GET", path: "/api/v1/channels/{name}", jobs: []string{"ops-ch"}, want: map[string]string{"ops-ch": hidden}},
		{method: "POST", path: "/api/v1/channels", jobs: []string{"new-ch-"}, body: channel,
			want: map[string]string{"new-ch-": "201 403 403 | 404 403 403"}},
		{method: "PUT", path: "/api/v1/channels/{name}", jobs: []string{"ops-ch"}, body: channel,
			want: map[string]string{"ops-ch": "200 403 403 | 404 403 403"}},
		{method: "POST", path: "/api/v1/channels/{name}/test", jobs: []string{"ops-ch"},
			want: map[string]string{"ops-ch": "200 403 403 | 404 403 403"}},
		{method: "DELETE", path: "/api/v1/channels/{name}", jobs: []string{"del-ch-"},
			setup: func(g int, j string) {
				mustDo(t, p, "POST", "/api/v1/channels", channel(g, j+fmt.Sprint(g)), http.StatusCreated, nil, admin...)
			},
			want: map[string]string{"del-ch-": "204 403 403 | 404 403 403"}},
		{method: "GET", path: "/api/v1/workflows", want: map[string]string{"": hidden}},
		{method: "GET", path: "/api/v1/workflows/{name}", jobs: []string{"ops-wf"}, want: map[string]string{"ops-wf": hidden}},
		{method: "POST", path: "/api/v1/workflows", jobs: []string{"new-wf-"}, body: workflowOf,
			want: map[string]string{"new-wf-": "201 403 403 | 404 403 403"}},
		{method: "PUT", path: "/api/v1/workflows/{name}", jobs: []string{"ops-wf"}, body: workflowOf,
			want: map[string]string{"ops-wf": "200 403 403 | 404 403 403"}},
		{method: "DELETE", path: "/api/v1/workflows/{name}", jobs: []string{"del-wf-"},
			setup: func(g int, j string) {
				mustDo(t, p, "POST", "/api/v1/workflows", workflowOf(g, j), http.StatusCreated, nil, admin...)
			},
			want: map[string]string{"del-wf-": "204 403 403 | 404 403 403"}},
		{method: "POST", path: "/api/v1/workflows/{name}/runs", jobs: []string{"ops-wf"},
			want: map[string]string{"ops-wf": "202 202 403 | 404 404 403"}},
		{method: "GET", path: "/api/v1/workflows/{name}/runs", jobs: []string{"ops-wf"}, want: map[string]string{"ops-wf": hidden}},
		{method: "GET", path: "/api/v1/workflows/{name}/runs/{run}", jobs: []string{"ops-wf"}, want: map[string]string{"ops-wf": hidden}},
		{method: "POST", path: "/api/v1/workflows/{name}/runs/{run}/cancel", jobs: []string{"ops-wf"}, want: map[string]string{"ops-wf": wfEnded}},
		{method: "POST", path: "/api/v1/workflows/{name}/runs/{run}/retry", jobs: []string{"ops-wf"}, want: map[string]string{"ops-wf": wfEnded}},
		{method: "GET", path: "/api/v1/notifications", want: map[string]string{"": reads}},
		// calendars are cluster-wide like channels; pause and resume are operator actions like disable
		{method: "GET", path: "/api/v1/calendars", want: map[string]string{"": hidden}},
		{method: "GET", path: "/api/v1/calendars/{name}", jobs: []string{"ops-cal"}, want: map[string]string{"ops-cal": hidden}},
		{method: "POST", path: "/api/v1/calendars", jobs: []string{"new-cal-"}, body: cal,
			want: map[string]string{"new-cal-": "201 403 403 | 404 403 403"}},
		{method: "PUT", path: "/api/v1/calendars/{name}", jobs: []string{"ops-cal"}, body: cal,
			want: map[string]string{"ops-cal": "200 403 403 | 404 403 403"}},
		{method: "DELETE", path: "/api/v1/calendars/{name}", jobs: []string{"del-cal-"},
			setup: func(g int, j string) {
				mustDo(t, p, "POST", "/api/v1/calendars", cal(g, j+fmt.Sprint(g)), http.StatusCreated, nil, admin...)
			},
			want: map[string]string{"del-cal-": "204 403 403 | 404 403 403"}},
		{method: "POST", path: "/api/v1/jobs/{jobName}/pause", jobs: abl, body: func(int, string) any { return map[string]string{"note": "table"} },
			want: byJob(operate, operateB)},
		{method: "POST", path: "/api/v1/jobs/{jobName}/resume", jobs: abl, want: byJob(operate, operateB)},
		{method: "GET", path: "/api/v1/jobs/{jobName}/next", jobs: abl, want: byJob(reads, hidden)},
		// the audit trail: every token reads it, a scoped token only its jobs' entries (checked below)
		{method: "GET", path: "/api/v1/audit", want: map[string]string{"": reads}},
		{method: "GET", path: "/api/v1/audit?job=team-b-2", want: map[string]string{"": reads}},
		{method: "GET", path: "/api/v1/alerts/defaults", want: map[string]string{"": hidden}},
		{method: "PUT", path: "/api/v1/alerts/defaults", body: func(int, string) any { return map[string]any{"rules": []any{}} },
			want: map[string]string{"": "200 403 403 | 404 403 403"}},
	}
	k := newContract(t, p)
	exercised := map[string]bool{}
	for _, r := range rows {
		jobs := r.jobs
		if jobs == nil {
			jobs = []string{""}
		}
		exercised[r.method+" "+strings.SplitN(r.path, "?", 2)[0]] = true
		for _, j := range jobs {
			want := strings.Fields(strings.ReplaceAll(r.want[j], "|", ""))
			if len(want) != len(scopeGrants) {
				t.Fatalf("%s %s %s: want %q", r.method, r.path, j, r.want[j])
			}
			for g := range scopeGrants {
				name := j
				if r.setup != nil || r.method == "POST" && r.path == "/api/v1/jobs" {
					name = j + fmt.Sprint(g)
				}
				if r.setup != nil {
					r.setup(g, j)
				}
				path := strings.ReplaceAll(r.path, "{jobName}", url.PathEscape(name))
				path = strings.ReplaceAll(path, "{id}", execOf[j])
				if r.backfill != nil {
					path = strings.ReplaceAll(path, "{backfillId}", r.backfill(name))
				}
				path = strings.ReplaceAll(path, "{name}", url.PathEscape(name))
				path = strings.ReplaceAll(path, "{run}", wfRun.ID)
				var body any
				if r.body != nil {
					body = r.body(g, j)
				}
				wantStatus, _ := strconv.Atoi(want[g])
				var raw []byte
				if path == "/metrics" { // not in the OpenAPI document
					raw = mustDo(t, p, r.method, path, body, wantStatus, nil, as(g)...)
				} else { // every answer, 403s and 404s included, is checked against the OpenAPI document
					raw = k.do(call{method: r.method, path: path, token: scopeGrants[g].secret, body: body}, wantStatus)
				}
				status := wantStatus
				if status == http.StatusNotFound && j == "team-b-2" && strings.Contains(string(raw), "scope") {
					t.Errorf("%s %s as %s: the 404 talks of scopes, telling the job exists: %s", r.method, path, scopeGrants[g].name, raw)
				}
			}
		}
	}

	// every operation of the OpenAPI document is in the table, but health, the spec and the callbacks (which
	// take an execution's callback token, not an API token)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	mustDo(t, p, "GET", "/openapi/openapi3.json", nil, http.StatusOK, &doc)
	for path, ops := range doc.Paths {
		for method := range ops {
			key := strings.ToUpper(method) + " " + path
			if path == "/healthz" || path == "/readyz" || strings.HasSuffix(path, "/heartbeat") || strings.HasSuffix(path, "/complete") {
				continue
			}
			tmpl := regexpReplaceConcrete(key)
			if !exercised[tmpl] {
				t.Errorf("%s is not in the role-and-scope table", key)
			}
		}
	}

	checkScopedLists(t, p, execOf)
	checkScopedStats(t, p)
	checkScopedAudit(t, p)
	checkScopeMoves(t, p, spec)
}

// The audit trail holds the table's changes; a scoped token reads only its jobs' entries (none of another
// team's, none of cluster-wide objects), and no token can delete or change an entry.
func checkScopedAudit(t *testing.T, p *harness.Peer) {
	t.Helper()
	for g := range scopeGrants {
		var page struct {
			Items []struct {
				Job, Actor, Action, Outcome string
			}
		}
		mustDo(t, p, "GET", "/api/v1/audit?limit=500", nil, http.StatusOK, &page, as(g)...)
		scoped := g >= 3
		jobs := map[string]bool{}
		for _, e := range page.Items {
			jobs[e.Job] = true
			if scoped && !strings.HasPrefix(e.Job, "team-a-") && e.Job != "team-b-1" {
				t.Errorf("%s reads the audit entry %+v", scopeGrants[g].name, e)
			}
		}
		if !jobs["team-a-1"] || !jobs["team-b-1"] || jobs["team-b-2"] == scoped {
			t.Errorf("%s reads the entries of %v", scopeGrants[g].name, jobs)
		}
		mustDo(t, p, "GET", "/api/v1/audit?job=team-b-2&action=job.disable", nil, http.StatusOK, &page, as(g)...)
		if scoped != (len(page.Items) == 0) {
			t.Errorf("%s: %d job.disable entries of team-b-2", scopeGrants[g].name, len(page.Items))
		}
		for _, m := range []string{"DELETE", "PUT", "POST", "PATCH"} {
			s, raw, err := p.Do(m, "/api/v1/audit", nil, nil, as(g)...)
			if err != nil || s != http.StatusNotFound && s != http.StatusMethodNotAllowed && s != http.StatusForbidden {
				t.Errorf("%s /api/v1/audit as %s: %d %s %v", m, scopeGrants[g].name, s, raw, err)
			}
		}
	}
}

// regexpReplaceConcrete maps a document's path to the table's: the table writes a concrete item and IP.
func regexpReplaceConcrete(key string) string {
	key = strings.ReplaceAll(key, "{item}", "1")
	return strings.ReplaceAll(key, "{ip}", "127.0.0.1")
}

// Lists keep to the scope: the jobs list and its total, the executions list and its pages, a job filter
// naming another team's job.
func checkScopedLists(t *testing.T, p *harness.Peer, execOf map[string]string) {
	t.Helper()
	visible := []string{"team-a-1", "team-b-1"}
	for g := range scopeGrants {
		var jobs struct {
			Items []struct{ JobName string }
			Total int
		}
		mustDo(t, p, "GET", "/api/v1/jobs?limit=1000", nil, http.StatusOK, &jobs, as(g)...)
		var names []string
		for _, j := range jobs.Items {
			names = append(names, j.JobName)
		}
		scoped := g >= 3
		for _, n := range names {
			if scoped && !strings.HasPrefix(n, "team-a-") && n != "team-b-1" {
				t.Errorf("%s lists %s", scopeGrants[g].name, n)
			}
		}
		if slices.Contains(names, "team-b-2") == scoped || jobs.Total != len(names) {
			t.Errorf("%s lists %v (total %d)", scopeGrants[g].name, names, jobs.Total)
		}

		// executions, one per page: every page full, only visible jobs, nothing skipped
		var seen []string
		cursor := ""
		for range 50 {
			var page struct {
				Items      []struct{ ID, JobName string }
				NextCursor string
			}
			mustDo(t, p, "GET", "/api/v1/executions?limit=1&cursor="+url.QueryEscape(cursor), nil, http.StatusOK, &page, as(g)...)
			for _, e := range page.Items {
				seen = append(seen, e.JobName)
			}
			if page.NextCursor != "" && len(page.Items) != 1 {
				t.Errorf("%s: a page of %d before the last", scopeGrants[g].name, len(page.Items))
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		sort.Strings(seen)
		seen = slices.Compact(seen)
		want := []string{"team-a-1", "team-b-1", "team-b-2"}
		if scoped {
			want = visible
		}
		if !slices.Equal(seen, want) {
			t.Errorf("%s: executions of %v, want %v", scopeGrants[g].name, seen, want)
		}
		var filtered struct{ Items []any }
		mustDo(t, p, "GET", "/api/v1/executions?job=team-b-2", nil, http.StatusOK, &filtered, as(g)...)
		if (len(filtered.Items) == 0) != scoped {
			t.Errorf("%s: executions?job=team-b-2 gives %d", scopeGrants[g].name, len(filtered.Items))
		}
		var who struct {
			Role, Scope string
			Can         struct{ Operate, Manage, Cluster, Administer bool }
		}
		mustDo(t, p, "GET", "/api/v1/auth/whoami", nil, http.StatusOK, &who, as(g)...)
		if who.Role != scopeGrants[g].role || (who.Scope == teamScope) != scoped || who.Can.Cluster == scoped ||
			who.Can.Administer != (g == 0) || who.Can.Manage != (who.Role == "admin") {
			t.Errorf("%s: whoami %+v", scopeGrants[g].name, who)
		}
	}
	// a job outside the scope is answered word for word as one that does not exist
	var hiddenJob, missing struct{ Type, Title, Detail string }
	mustDo(t, p, "GET", "/api/v1/jobs/team-b-2", nil, http.StatusNotFound, &hiddenJob, as(5)...)
	mustDo(t, p, "GET", "/api/v1/jobs/team-b-9", nil, http.StatusNotFound, &missing, as(5)...)
	if hiddenJob.Type != missing.Type || strings.ReplaceAll(hiddenJob.Detail, "team-b-2", "X") != strings.ReplaceAll(missing.Detail, "team-b-9", "X") {
		t.Errorf("a hidden job %+v, a missing one %+v", hiddenJob, missing)
	}
	var hiddenExec, missingExec struct{ Type, Detail string }
	mustDo(t, p, "GET", "/api/v1/executions/"+execOf["team-b-2"], nil, http.StatusNotFound, &hiddenExec, as(5)...)
	mustDo(t, p, "GET", "/api/v1/executions/nosuchexecution", nil, http.StatusNotFound, &missingExec, as(5)...)
	if hiddenExec.Type != missingExec.Type {
		t.Errorf("a hidden execution %+v, a missing one %+v", hiddenExec, missingExec)
	}
}

// A scoped admin can't move a job out of its scope nor into it, and the job is left as it was.
func checkScopeMoves(t *testing.T, p *harness.Peer, spec func(name, label string) map[string]any) {
	t.Helper()
	scopedAdmin := as(3)
	mustDo(t, p, "PUT", "/api/v1/jobs/team-b-1", spec("team-b-1", "other"), http.StatusForbidden, nil, scopedAdmin...)
	mustDo(t, p, "PUT", "/api/v1/jobs/team-b-2", spec("team-b-2", "payments"), http.StatusNotFound, nil, scopedAdmin...)
	var b1, b2 struct{ Label string }
	mustDo(t, p, "GET", "/api/v1/jobs/team-b-1", nil, http.StatusOK, &b1, as(0)...)
	mustDo(t, p, "GET", "/api/v1/jobs/team-b-2", nil, http.StatusOK, &b2, as(0)...)
	if b1.Label != "payments" || b2.Label != "" {
		t.Fatalf("labels after refused moves: %q %q", b1.Label, b2.Label)
	}
	// within the scope a label may change: team-a-1 stays in by its name
	mustDo(t, p, "PUT", "/api/v1/jobs/team-a-1", spec("team-a-1", "other"), http.StatusOK, nil, scopedAdmin...)
}

// The console shows a scoped operator its jobs only, the actions it may take (trigger, enable, disable) and
// none it may not (new job, edit, delete, the servers page), and its scope next to its name.
func TestConsoleForAScopedOperator(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--api-tokens", scopedTokensFile(t)))
	p := c.peers[0]
	for _, name := range []string{"team-a-1", "team-b-2"} {
		mustDo(t, p, "POST", "/api/v1/jobs", job(name, "@yearly", 2, recv.URL), http.StatusCreated, nil, as(0)...)
	}
	b := newBrowser(t, p.URL("/"))
	b.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/")), chromedp.WaitVisible(chromedp.ID("signin-token")))
	b.do("sign in as a scoped operator", 10*time.Second, chromedp.SendKeys(chromedp.ID("signin-token"), scopeGrants[4].secret),
		chromedp.Click(chromedp.CSS(`#signin-form button[type="submit"]`)))
	b.waitText(`#jobs-table tbody tr[data-key="team-a-1"]`, "team-a-1", 10*time.Second)
	b.waitText("#who", "operator", 5*time.Second)
	b.waitText("#who", teamScope, 5*time.Second)
	if n := b.count(`#jobs-table tbody tr`); n != 1 {
		t.Fatalf("the scoped operator sees %d jobs", n)
	}
	if b.count(`a[href="#/create"]`) != 0 || b.count(`#jobs-table [data-action="trigger"]`) != 1 || b.count(`#jobs-table [data-action="disable-job"]`) != 1 {
		t.Fatal("the jobs page: want trigger and disable, no new job")
	}
	if eval[bool](b, `!document.querySelector('[data-nav="servers"]').closest('li').hidden`) {
		t.Fatal("the servers page is offered")
	}
	b.route("#/jobs/team-a-1", "team-a-1")
	b.waitFor("the job's actions", `!!document.querySelector('#job-actions [data-action="trigger"]')`, 10*time.Second)
	b.waitFor("the item actions", `!!document.querySelector('#items-table [data-action="disable-item"]')`, 10*time.Second)
	if b.count(`#job-actions [data-action="delete-job"], a[href$="/edit"]`) != 0 {
		t.Fatal("an operator is offered edit or delete")
	}
	b.route("#/create", "New job")
	b.waitText("main", "not create them", 5*time.Second)
	b.route("#/servers", "Servers and instances")
	b.waitText("main", "sees only the jobs of its scope", 5*time.Second)
	b.route("#/jobs/team-b-2", "team-b-2")
	b.waitText("main", "not found", 10*time.Second)
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
}

// The console's cluster-wide charts keep to the scope: the cluster stats count exactly the executions the
// token lists, and the load ahead counts exactly the enabled jobs it lists.
func checkScopedStats(t *testing.T, p *harness.Peer) {
	t.Helper()
	for g := range scopeGrants {
		var listed, counted int
		if !eventually(30*time.Second, func() bool {
			var page struct{ Items []struct{ ID string } }
			mustDo(t, p, "GET", "/api/v1/executions?limit=500", nil, http.StatusOK, &page, as(g)...)
			var st struct {
				Total struct{ Items int }
				Peers []struct{ Items int }
			}
			mustDo(t, p, "GET", "/api/v1/stats?window=2h&bucket=1m", nil, http.StatusOK, &st, as(g)...)
			listed, counted = len(page.Items), st.Total.Items
			return listed == counted && len(st.Peers) == 1 && st.Peers[0].Items == counted
		}) {
			t.Errorf("%s: the cluster stats count %d items, the token lists %d", scopeGrants[g].name, counted, listed)
		}
		var jobs struct {
			Items []struct{ Disabled bool }
		}
		mustDo(t, p, "GET", "/api/v1/jobs?limit=1000", nil, http.StatusOK, &jobs, as(g)...)
		enabled := 0
		for _, j := range jobs.Items {
			if !j.Disabled {
				enabled++
			}
		}
		var load struct {
			Jobs  int
			Items []int
		}
		mustDo(t, p, "GET", "/api/v1/schedule/load?horizon=10m", nil, http.StatusOK, &load, as(g)...)
		if load.Jobs != enabled || len(load.Items) != 600 {
			t.Errorf("%s: the load ahead counts %d jobs over %d s, the token lists %d enabled", scopeGrants[g].name, load.Jobs, len(load.Items), enabled)
		}
	}
}
