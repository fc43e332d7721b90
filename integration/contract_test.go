package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/ejserver/ejserver/api"
	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/tools/openapi/spec"
	"github.com/ejserver/ejserver/openapi"
)

const (
	adminToken  = "it-admin-token-0123456789"
	viewerToken = "it-viewer-token-0123456789"
)

// tokensFile writes a tokens file with an admin token (stored as its hash) and a viewer token (in clear).
func tokensFile(t *testing.T) string {
	t.Helper()
	sum := sha256Hex(adminToken)
	path := filepath.Join(t.TempDir(), "tokens")
	body := "# role name token\nadmin ops sha256:" + sum + "\nviewer grafana " + viewerToken + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// contract calls a peer and checks every answer against each document ejserver publishes: openapi3.json,
// and swagger.json and swagger.yaml read as a Swagger 2.0 client reads them (spec.LoadSwagger). The status
// must be documented for the operation, the Content-Type must be one the document gives it, and the body
// must match its schema, with objects closed (a field the spec doesn't document fails). It records which
// operations were exercised and with which statuses.
type contract struct {
	t       *testing.T
	p       *harness.Peer
	docs    []publishedDoc
	covered map[string][]int // "GET /api/v1/jobs" -> statuses seen
}

// publishedDoc is one of the documents answers are validated against.
type publishedDoc struct {
	name   string
	router routers.Router
}

func newContract(t *testing.T, p *harness.Peer) *contract {
	t.Helper()
	ctx := context.Background()
	loads := []struct {
		name string
		load func() (*openapi3.T, error)
	}{
		{"openapi3.json", func() (*openapi3.T, error) { return spec.Load(ctx, openapi.OpenAPI3JSON) }},
		{"swagger.json", func() (*openapi3.T, error) { return spec.LoadSwagger(ctx, openapi.SwaggerJSON) }},
		{"swagger.yaml", func() (*openapi3.T, error) { return spec.LoadSwagger(ctx, openapi.SwaggerYAML) }},
	}
	k := &contract{t: t, p: p, covered: map[string][]int{}}
	for _, l := range loads {
		doc, err := l.load()
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		closeObjects(doc)
		doc.Servers = openapi3.Servers{{URL: "http://" + p.Addr}}
		router, err := legacy.NewRouter(doc)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		k.docs = append(k.docs, publishedDoc{name: l.name, router: router})
	}
	return k
}

// closeObjects sets additionalProperties: false on every object schema with properties and no
// additionalProperties of its own, so an undocumented response field fails validation.
func closeObjects(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(s *openapi3.SchemaRef)
	walk = func(s *openapi3.SchemaRef) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		v := s.Value
		seen[v] = true
		if len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
			no := false
			v.AdditionalProperties.Has = &no
		}
		for _, p := range v.Properties {
			walk(p)
		}
		walk(v.Items)
		walk(v.AdditionalProperties.Schema)
		for _, x := range v.AllOf {
			walk(x)
		}
	}
	for _, s := range doc.Components.Schemas {
		walk(s)
	}
}

type call struct {
	method, path string
	token        string
	body         any
	header       map[string]string
}

// do makes the call, validates the answer against the spec, checks the status, and returns the body.
func (c *contract) do(rq call, want int) []byte {
	c.t.Helper()
	var rd io.Reader
	switch b := rq.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(rq.method, c.p.URL(rq.path), rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rq.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if rq.token != "" {
		req.Header.Set("Authorization", "Bearer "+rq.token)
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", rq.method, rq.path, resp.StatusCode, want, body)
	}
	var key string
	for _, d := range c.docs {
		route, params, err := d.router.FindRoute(req)
		if err != nil {
			c.t.Fatalf("%s %s: not in %s: %v", rq.method, rq.path, d.name, err)
		}
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
			Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		}
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			c.t.Fatalf("%s %s -> %d does not match %s: %v\nbody: %s", rq.method, rq.path, resp.StatusCode, d.name, err, body)
		}
		key = rq.method + " " + route.Path
	}
	if !slices.Contains(c.covered[key], resp.StatusCode) {
		c.covered[key] = append(c.covered[key], resp.StatusCode)
	}
	if resp.StatusCode >= 400 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			c.t.Fatalf("%s %s -> %d: Content-Type %q", rq.method, rq.path, resp.StatusCode, ct)
		}
	}
	for _, secret := range []string{adminToken, viewerToken, testSecret} {
		if bytes.Contains(body, []byte(secret)) {
			c.t.Fatalf("%s %s: the answer holds a secret: %s", rq.method, rq.path, body)
		}
	}
	return body
}

// problem calls and returns the problem details of an error answer.
func (c *contract) problem(rq call, want int) problemBody {
	c.t.Helper()
	var p problemBody
	if err := json.Unmarshal(c.do(rq, want), &p); err != nil {
		c.t.Fatal(err)
	}
	if p.Status != want || p.Type == "" || p.Title == "" || p.Detail == "" {
		c.t.Fatalf("%s %s: incomplete problem %+v", rq.method, rq.path, p)
	}
	return p
}

type problemBody struct {
	Type, Title, Detail, Field, Instance string
	Status                               int
	Errors                               []struct{ Field, Message string }
}

// a webhook secret the tests set; no answer may ever contain it.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="

// Every operation of the spec, called on a real peer with tokens: success and error statuses (at least one
// 4xx each), problem bodies naming fields, roles, paging, ETag conflicts; every answer validated against
// each published document.
func TestAPIContract(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--api-tokens", tokensFile(t)))
	p := c.peers[0]
	k := newContract(t, p)
	A, V := adminToken, viewerToken
	ip := p.Config.ServerIP

	// ops endpoints are open
	k.do(call{method: "GET", path: "/healthz"}, 200)
	k.do(call{method: "GET", path: "/readyz"}, 200)

	// who am I: the web console shows a viewer no action buttons
	k.problem(call{method: "GET", path: "/api/v1/auth/whoami"}, 401)
	for token, want := range map[string]api.Caller{
		A: {Authenticated: true, Name: "ops", Role: api.RoleAdmin, CanWrite: true,
			Can: api.Abilities{Operate: true, Manage: true, Cluster: true, Administer: true}},
		V: {Authenticated: true, Name: "grafana", Role: api.RoleViewer, Can: api.Abilities{Cluster: true}},
	} {
		var me api.Caller
		json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/auth/whoami", token: token}, 200), &me)
		if me != want {
			t.Fatalf("whoami %+v, want %+v", me, want)
		}
	}

	// create: auth first, then the body
	alphaJob := job("alpha", "0 0 3 * * ?", 3, recv.URL)
	alphaJob["webhook"] = map[string]any{"url": recv.URL, "secret": testSecret}
	k.problem(call{method: "POST", path: "/api/v1/jobs", body: alphaJob}, 401)
	k.problem(call{method: "POST", path: "/api/v1/jobs", token: "wrong-token-0123456789", body: alphaJob}, 401)
	if pr := k.problem(call{method: "POST", path: "/api/v1/jobs", token: V, body: alphaJob}, 403); pr.Type != "https://ejserver.dev/problems/forbidden" {
		t.Fatalf("viewer create: %+v", pr)
	}
	var created map[string]any
	json.Unmarshal(k.do(call{method: "POST", path: "/api/v1/jobs", token: A, body: alphaJob}, 201), &created)
	if wh := created["webhook"].(map[string]any); wh["hasSecret"] != true || wh["secret"] != nil {
		t.Fatalf("created webhook %v", wh)
	}
	k.problem(call{method: "POST", path: "/api/v1/jobs", token: A, body: alphaJob}, 409)
	if pr := k.problem(call{method: "POST", path: "/api/v1/jobs", token: A, body: `{"jobName":"x","shardingTotalCount":"3"}`}, 400); pr.Field != "shardingTotalCount" {
		t.Fatalf("wrong type: %+v", pr)
	}
	if pr := k.problem(call{method: "POST", path: "/api/v1/jobs", token: A, body: `{"jobName":"x","shards":3}`}, 400); pr.Field != "shards" {
		t.Fatalf("unknown field: %+v", pr)
	}
	k.problem(call{method: "POST", path: "/api/v1/jobs", token: A, body: `{"jobName":"big","description":"` + strings.Repeat("x", 2<<20) + `"}`}, 413)
	k.problem(call{method: "POST", path: "/api/v1/jobs", token: A, body: "jobName: x", header: map[string]string{"Content-Type": "application/yaml"}}, 415)
	gen := job("beta", "", 2, recv.URL)
	gen["webhook"] = map[string]any{"url": recv.URL, "generateSecret": true}
	var genRes map[string]any
	json.Unmarshal(k.do(call{method: "POST", path: "/api/v1/jobs", token: A, body: gen}, 201), &genRes)
	if s, _ := genRes["generatedSecret"].(string); !strings.HasPrefix(s, "whsec_") {
		t.Fatalf("generateSecret: %v", genRes)
	}
	k.do(call{method: "POST", path: "/api/v1/jobs", token: A, body: job("gamma", "@hourly", 1, recv.URL)}, 201)

	// list (from the peer's registry cache, which watches catch up with): both roles; cursor paging visits
	// every job once
	if !eventually(10*time.Second, func() bool {
		var all struct{ Total int }
		json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/jobs", token: V}, 200), &all)
		return all.Total == 3
	}) {
		t.Fatal("the three jobs never showed in the list")
	}
	var names []string
	cursor := ""
	for range 5 {
		var page struct {
			Items      []struct{ JobName string }
			NextCursor string
			Total      int
		}
		json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/jobs?limit=2&cursor=" + cursor, token: V}, 200), &page)
		if page.Total != 3 || len(page.Items) > 2 {
			t.Fatalf("page %+v", page)
		}
		for _, it := range page.Items {
			names = append(names, it.JobName)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(names, ",") != "alpha,beta,gamma" {
		t.Fatalf("paged jobs %v", names)
	}
	k.problem(call{method: "GET", path: "/api/v1/jobs?limit=0", token: V}, 400)
	k.problem(call{method: "GET", path: "/api/v1/jobs"}, 401)

	// get, replace with ETag/If-Match
	req, _ := http.NewRequest("GET", p.URL("/api/v1/jobs/alpha"), nil)
	req.Header.Set("Authorization", "Bearer "+V)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	k.do(call{method: "GET", path: "/api/v1/jobs/alpha", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/jobs/nope", token: V}, 404)
	alphaJob["jobParameter"] = "v2"
	delete(alphaJob, "webhook")
	alphaJob["webhook"] = map[string]any{"url": recv.URL} // no secret: keeps it
	k.problem(call{method: "PUT", path: "/api/v1/jobs/alpha", token: V, body: alphaJob, header: map[string]string{"If-Match": etag}}, 403)
	var replaced map[string]any
	json.Unmarshal(k.do(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: alphaJob, header: map[string]string{"If-Match": etag}}, 200), &replaced)
	if wh := replaced["webhook"].(map[string]any); wh["hasSecret"] != true {
		t.Fatalf("the secret was not kept: %v", wh)
	}
	// a second operator still holding the old ETag can't overwrite the change
	alphaJob["jobParameter"] = "v3"
	k.problem(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: alphaJob, header: map[string]string{"If-Match": etag}}, 412)
	k.problem(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: alphaJob, header: map[string]string{"If-Match": `"stale"`}}, 412)
	if pr := k.problem(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: alphaJob, header: map[string]string{"If-Match": "soon"}}, 400); pr.Field != "If-Match" {
		t.Fatalf("bad If-Match: %+v", pr)
	}
	k.problem(call{method: "PUT", path: "/api/v1/jobs/nope", token: A, body: job("nope", "", 1, recv.URL)}, 404)
	k.problem(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: "{}", header: map[string]string{"Content-Type": "text/plain"}}, 415)
	k.problem(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: `{"jobName":"alpha","description":"` + strings.Repeat("x", 2<<20) + `"}`}, 413)
	var got map[string]any
	json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/jobs/alpha", token: V}, 200), &got)
	if got["jobParameter"] != "v2" {
		t.Fatalf("after the 412: jobParameter %v", got["jobParameter"])
	}
	// If-Match (RFC 9110): a list matches when one of its tags is the current ETag; "*", any version of a
	// job that exists
	alphaJob["jobParameter"] = "v4"
	k.do(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: alphaJob, header: map[string]string{"If-Match": fmt.Sprintf(`"stale", "%v"`, got["version"])}}, 200)
	alphaJob["jobParameter"] = "v5"
	json.Unmarshal(k.do(call{method: "PUT", path: "/api/v1/jobs/alpha", token: A, body: alphaJob, header: map[string]string{"If-Match": "*"}}, 200), &got)
	if got["jobParameter"] != "v5" {
		t.Fatalf("after If-Match *: jobParameter %v", got["jobParameter"])
	}
	k.problem(call{method: "PUT", path: "/api/v1/jobs/nope", token: A, body: job("nope", "", 1, recv.URL), header: map[string]string{"If-Match": "*"}}, 404)

	// trigger, disable/enable
	var tr struct{ Items []int }
	json.Unmarshal(k.do(call{method: "POST", path: "/api/v1/jobs/alpha/trigger", token: A, body: map[string]any{"jobParameter": "now", "items": []int{0, 2}}}, 202), &tr)
	k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/trigger", token: V}, 403)
	if pr := k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/trigger", token: A, body: map[string]any{"items": []int{7}}}, 400); pr.Field != "items" {
		t.Fatalf("bad item: %+v", pr)
	}
	k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/trigger", token: A, body: `{"items":[` + strings.Repeat("1,", 1<<20) + `1]}`}, 413)
	k.problem(call{method: "POST", path: "/api/v1/jobs/nope/trigger", token: A}, 404)
	k.do(call{method: "POST", path: "/api/v1/jobs/gamma/disable", token: A}, 200)
	k.problem(call{method: "POST", path: "/api/v1/jobs/gamma/trigger", token: A}, 409)
	// a backfill of the disabled job waits for it, so it is still running when cancelled (issue 24)
	var bf struct{ ID string }
	json.Unmarshal(k.do(call{method: "POST", path: "/api/v1/jobs/gamma/backfill", token: A,
		body: map[string]any{"from": "2024-06-01T00:00:00Z", "to": "2024-06-01T05:00:00Z"}}, 202), &bf)
	k.problem(call{method: "POST", path: "/api/v1/jobs/gamma/backfill", token: A,
		body: map[string]any{"from": "2024-06-02T00:00:00Z", "to": "2024-06-01T00:00:00Z"}}, 400)
	k.do(call{method: "GET", path: "/api/v1/jobs/gamma/backfill", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/jobs/nope/backfill", token: V}, 404)
	k.do(call{method: "GET", path: "/api/v1/jobs/gamma/backfill/" + bf.ID, token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/jobs/gamma/backfill/nope", token: V}, 404)
	k.do(call{method: "POST", path: "/api/v1/jobs/gamma/backfill/" + bf.ID + "/cancel", token: A}, 200)
	k.problem(call{method: "POST", path: "/api/v1/jobs/gamma/backfill/" + bf.ID + "/cancel", token: A}, 409)
	k.problem(call{method: "POST", path: "/api/v1/executions/nope/replay", token: A}, 404)
	k.do(call{method: "POST", path: "/api/v1/jobs/gamma/enable", token: A}, 200)
	k.problem(call{method: "POST", path: "/api/v1/jobs/gamma/disable", token: V}, 403)
	k.problem(call{method: "POST", path: "/api/v1/jobs/nope/disable", token: A}, 404)
	k.problem(call{method: "POST", path: "/api/v1/jobs/nope/enable", token: A}, 404)

	// the trigger's two runs end before alpha's server is disabled below: a fire skips a disabled server
	if !eventually(20*time.Second, func() bool {
		var l struct{ Items []struct{ ID string } }
		json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/executions?job=alpha&success=true", token: V}, 200), &l)
		return len(l.Items) == 2
	}) {
		t.Fatal("the trigger's two runs were never recorded")
	}

	// sharding view, items, servers of one job, dump
	k.do(call{method: "GET", path: "/api/v1/jobs/alpha/sharding", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/jobs/nope/sharding", token: V}, 404)
	k.do(call{method: "POST", path: "/api/v1/jobs/alpha/sharding/1/disable", token: A}, 204)
	k.do(call{method: "POST", path: "/api/v1/jobs/alpha/sharding/1/enable", token: A}, 204)
	k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/sharding/9/disable", token: A}, 404)
	k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/sharding/x/enable", token: A}, 400)
	k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/sharding/1/enable", token: V}, 403)
	k.do(call{method: "POST", path: "/api/v1/jobs/alpha/servers/" + ip + "/disable", token: A}, 204)
	k.do(call{method: "POST", path: "/api/v1/jobs/alpha/servers/" + ip + "/enable", token: A}, 204)
	k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/servers/not-an-ip/disable", token: A}, 400)
	k.problem(call{method: "POST", path: "/api/v1/jobs/nope/servers/" + ip + "/enable", token: A}, 404)
	k.problem(call{method: "POST", path: "/api/v1/jobs/alpha/servers/" + ip + "/enable", token: V}, 403)
	dump := k.do(call{method: "GET", path: "/api/v1/jobs/alpha/dump", token: V}, 200)
	if !bytes.Contains(dump, []byte("/alpha/config |")) {
		t.Fatalf("dump %s", dump)
	}
	k.problem(call{method: "GET", path: "/api/v1/jobs/nope/dump", token: V}, 404)

	// executions of the trigger above, paged; one execution; traces
	var execs struct {
		Items      []struct{ ID string }
		NextCursor string
	}
	ok := eventually(20*time.Second, func() bool {
		json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/executions?job=alpha&success=true&limit=1", token: V}, 200), &execs)
		return execs.NextCursor != ""
	})
	if !ok || len(execs.Items) != 1 {
		t.Fatalf("executions of the trigger: %+v", execs)
	}
	var next struct{ Items []struct{ ID string } }
	json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/executions?job=alpha&limit=1&cursor=" + execs.NextCursor, token: V}, 200), &next)
	if len(next.Items) != 1 || next.Items[0].ID == execs.Items[0].ID {
		t.Fatalf("second page %+v after %+v", next, execs)
	}
	k.do(call{method: "GET", path: "/api/v1/executions/" + execs.Items[0].ID, token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/executions/0193a000-0000-7000-8000-000000000000", token: V}, 404)
	k.problem(call{method: "GET", path: "/api/v1/executions?from=yesterday", token: V}, 400)
	k.do(call{method: "GET", path: "/api/v1/jobs/alpha/executions?item=0", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/jobs/alpha/executions?success=maybe", token: V}, 400)
	k.do(call{method: "GET", path: "/api/v1/jobs/alpha/traces", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/jobs/alpha/traces?limit=x", token: V}, 400)

	// servers and instances, paged
	k.do(call{method: "GET", path: "/api/v1/servers?limit=1", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/servers?limit=5000", token: V}, 400)
	k.do(call{method: "POST", path: "/api/v1/servers/" + ip + "/disable", token: A}, 200)
	k.do(call{method: "POST", path: "/api/v1/servers/" + ip + "/enable", token: A}, 200)
	k.problem(call{method: "POST", path: "/api/v1/servers/nope/disable", token: A}, 400)
	k.problem(call{method: "POST", path: "/api/v1/servers/" + ip + "/enable", token: V}, 403)
	var inst struct {
		Items []struct {
			InstanceID string
			Self       bool
		}
	}
	json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/instances", token: V}, 200), &inst)
	if len(inst.Items) != 1 || !inst.Items[0].Self {
		t.Fatalf("instances %+v", inst)
	}
	k.problem(call{method: "GET", path: "/api/v1/instances?limit=-1", token: V}, 400)

	// cron preview
	var prev struct{ Next []string }
	json.Unmarshal(k.do(call{method: "GET", path: "/api/v1/cron/next?cron=0+15+10+L+*+%3F&timeZone=Asia/Shanghai&from=2026-11-21T00:00:00Z&count=2", token: V}, 200), &prev)
	if strings.Join(prev.Next, " ") != "2026-11-30T10:15:00+08:00 2026-12-31T10:15:00+08:00" {
		t.Fatalf("cron preview %v", prev.Next)
	}
	for q, field := range map[string]string{"cron=0+0+25+*+*+%3F": "cron", "cron=@hourly&timeZone=Mars/Base": "timeZone",
		"cron=@hourly&from=now": "from", "cron=@hourly&count=0": "count", "": "cron"} {
		if pr := k.problem(call{method: "GET", path: "/api/v1/cron/next?" + q, token: V}, 400); pr.Field != field {
			t.Fatalf("cron preview %q: field %q, want %q", q, pr.Field, field)
		}
	}

	// the console's stats: a job's, the cluster's, the load ahead (bad windows and buckets are field errors)
	k.do(call{method: "GET", path: "/api/v1/jobs/alpha/stats?window=7d&bucket=1h", token: V}, 200)
	k.do(call{method: "GET", path: "/api/v1/jobs/alpha/points?window=24h", token: V}, 200)
	k.do(call{method: "GET", path: "/api/v1/stats?window=1h&bucket=1m", token: V}, 200)
	k.do(call{method: "GET", path: "/api/v1/schedule/load?horizon=10m", token: V}, 200)
	for path, field := range map[string]string{"/api/v1/jobs/alpha/stats?bucket=1ms": "bucket", "/api/v1/jobs/alpha/points?window=99d": "window",
		"/api/v1/stats?window=soon": "window", "/api/v1/schedule/load?horizon=2d": "horizon"} {
		if pr := k.problem(call{method: "GET", path: path, token: V}, 400); pr.Field != field {
			t.Fatalf("%s: field %q, want %q", path, pr.Field, field)
		}
	}

	// the callbacks of an accepted item (202): authorised by the execution's callback token alone
	async := newReceiver(t)
	accepting(async)
	asyncJob := job("longjob", "", 1, async.URL)
	asyncJob["async"] = map[string]any{"leaseSeconds": 60}
	k.do(call{method: "POST", path: "/api/v1/jobs", token: A, body: asyncJob}, 201)
	k.do(call{method: "POST", path: "/api/v1/jobs/longjob/trigger", token: A}, 202)
	ads, ok := async.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("the async job's item was not delivered")
	}
	ap := ads[0].Payload
	cb := "/api/v1/executions/" + ap.ExecutionID
	unknown := "/api/v1/executions/0193a000-0000-7000-8000-000000000000"
	k.do(call{method: "POST", path: cb + "/heartbeat", token: ap.CallbackToken, body: map[string]any{"progress": 50, "message": "half"}}, 200)
	k.problem(call{method: "POST", path: cb + "/heartbeat", token: A}, 401) // an API token opens no callback
	k.problem(call{method: "POST", path: cb + "/heartbeat", token: ap.CallbackToken, body: map[string]any{"progress": 101}}, 400)
	k.problem(call{method: "POST", path: unknown + "/heartbeat", token: ap.CallbackToken}, 401) // not that id's token
	k.problem(call{method: "POST", path: "/api/v1/executions/not-an-id/heartbeat", token: ap.CallbackToken}, 404)
	k.problem(call{method: "POST", path: cb + "/complete", token: ap.CallbackToken, body: map[string]any{"status": "maybe"}}, 400)
	k.problem(call{method: "POST", path: cb + "/complete", body: map[string]any{"status": "success"}}, 401)
	k.problem(call{method: "POST", path: "/api/v1/executions/not-an-id/complete", token: ap.CallbackToken, body: map[string]any{"status": "success"}}, 404)
	k.do(call{method: "POST", path: cb + "/complete", token: ap.CallbackToken, body: map[string]any{"status": "success", "output": "ok"}}, 200)
	k.do(call{method: "POST", path: cb + "/complete", token: ap.CallbackToken, body: map[string]any{"status": "success", "output": "ok"}}, 200)
	if pr := k.problem(call{method: "POST", path: cb + "/complete", token: ap.CallbackToken, body: map[string]any{"status": "failure"}}, 409); pr.Type != "https://ejserver.dev/problems/already-completed" {
		t.Fatalf("a different completion: %+v", pr)
	}
	if pr := k.problem(call{method: "POST", path: cb + "/heartbeat", token: ap.CallbackToken}, 409); pr.Type != "https://ejserver.dev/problems/already-completed" {
		t.Fatalf("a heartbeat after the end: %+v", pr)
	}

	// notification channels: admin writes, any token reads; secrets never in an answer
	slackHook := newCapture(t, nil)
	slackCh := map[string]any{"name": "ops-slack", "kind": "slack", "default": true, "description": "on call",
		"slack": map[string]any{"url": slackHook.srv.URL + "/services/T/B/contract-secret"}}
	k.problem(call{method: "POST", path: "/api/v1/channels", token: V, body: slackCh}, 403)
	if pr := k.problem(call{method: "POST", path: "/api/v1/channels", token: A, body: map[string]any{"name": "x", "kind": "slack",
		"slack": map[string]any{"url": "http://example.com/x"}}}, 400); pr.Field != "slack.url" {
		t.Fatalf("bad channel: %+v", pr)
	}
	chCreated := k.do(call{method: "POST", path: "/api/v1/channels", token: A, body: slackCh}, 201)
	k.problem(call{method: "POST", path: "/api/v1/channels", token: A, body: slackCh}, 409)
	k.do(call{method: "POST", path: "/api/v1/channels", token: A, body: map[string]any{"name": "ops-mail", "kind": "email",
		"email": map[string]any{"host": "127.0.0.1", "port": 1, "tls": "tls", "username": "u", "password": "contract-pass",
			"from": "a@example.com", "to": []string{"b@example.com"}}}}, 201)
	listed := k.do(call{method: "GET", path: "/api/v1/channels", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/channels", token: "wrong-token-0123456789"}, 401)
	chGot := k.do(call{method: "GET", path: "/api/v1/channels/ops-slack", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/channels/nope", token: V}, 404)
	for _, b := range [][]byte{chCreated, listed, chGot} {
		if strings.Contains(string(b), "contract-secret") || strings.Contains(string(b), "contract-pass") {
			t.Fatalf("a channel answer holds a secret: %s", b)
		}
	}
	k.do(call{method: "PUT", path: "/api/v1/channels/ops-slack", token: A, header: map[string]string{"If-Match": `"0"`},
		body: map[string]any{"kind": "slack", "default": true, "slack": map[string]any{}}}, 200)
	k.problem(call{method: "PUT", path: "/api/v1/channels/ops-slack", token: A, header: map[string]string{"If-Match": `"0"`},
		body: map[string]any{"kind": "slack", "slack": map[string]any{}}}, 412)
	k.problem(call{method: "PUT", path: "/api/v1/channels/ops-slack", token: V, body: map[string]any{"kind": "slack"}}, 403)
	var chTest struct{ Outcome string }
	json.Unmarshal(k.do(call{method: "POST", path: "/api/v1/channels/ops-slack/test", token: A}, 200), &chTest)
	if chTest.Outcome != "sent" {
		t.Fatalf("channel test: %+v", chTest)
	}
	json.Unmarshal(k.do(call{method: "POST", path: "/api/v1/channels/ops-mail/test", token: A}, 200), &chTest)
	if chTest.Outcome != "failed" {
		t.Fatalf("a channel with no SMTP server: %+v", chTest)
	}
	k.problem(call{method: "POST", path: "/api/v1/channels/nope/test", token: A}, 404)
	k.problem(call{method: "POST", path: "/api/v1/channels/ops-slack/test", token: V}, 403)
	k.do(call{method: "GET", path: "/api/v1/notifications?channel=ops-slack&limit=5", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/notifications?outcome=great", token: V}, 400)
	k.problem(call{method: "DELETE", path: "/api/v1/channels/ops-mail", token: V}, 403)
	k.do(call{method: "DELETE", path: "/api/v1/channels/ops-mail", token: A}, 204)
	k.problem(call{method: "DELETE", path: "/api/v1/channels/ops-mail", token: A}, 404)

	// the audit trail: any token reads it (the changes above are in it); a bad filter is a field error
	audit := k.do(call{method: "GET", path: "/api/v1/audit?actor=ops&limit=5", token: V}, 200)
	if strings.Contains(string(audit), "whsec_") || !strings.Contains(string(audit), `"action"`) {
		t.Fatalf("audit page: %s", audit)
	}
	k.problem(call{method: "GET", path: "/api/v1/audit?action=job.explode", token: V}, 400)
	k.problem(call{method: "GET", path: "/api/v1/audit?from=yesterday", token: V}, 400)
	k.problem(call{method: "GET", path: "/api/v1/audit", token: "wrong-token-0123456789"}, 401)

	// the cluster's default alert rules: admin writes, any token reads; a bad event is a field error
	k.problem(call{method: "GET", path: "/api/v1/alerts/defaults", token: "wrong-token-0123456789"}, 401)
	k.do(call{method: "GET", path: "/api/v1/alerts/defaults", token: V}, 200)
	k.problem(call{method: "PUT", path: "/api/v1/alerts/defaults", token: V, body: map[string]any{}}, 403)
	if pr := k.problem(call{method: "PUT", path: "/api/v1/alerts/defaults", token: A, body: map[string]any{
		"rules": []any{map[string]any{"on": []string{"BOGUS"}, "channels": []string{"ops-slack"}}}}}, 400); pr.Field != "rules[0].on[0]" {
		t.Fatalf("bad default rules: %+v", pr)
	}
	k.do(call{method: "PUT", path: "/api/v1/alerts/defaults", token: A, body: map[string]any{"lateAfterMs": 1000,
		"rules": []any{map[string]any{"on": []string{"FIRE_FAILED", "LATE"}, "channels": []string{"ops-slack"}, "quietPeriodSeconds": 60}}}}, 200)
	k.do(call{method: "PUT", path: "/api/v1/alerts/defaults", token: A, body: map[string]any{}}, 200)

	// workflows (issue 26): a one-node workflow over gamma, a run to its end, the controls' conflicts
	wf := map[string]any{"name": "wf", "nodes": []any{map[string]any{"name": "g", "job": "gamma"}}}
	k.problem(call{method: "POST", path: "/api/v1/workflows", token: A, body: map[string]any{"name": "wf",
		"nodes": []any{map[string]any{"name": "g", "job": "nope"}}}}, 400)
	k.do(call{method: "POST", path: "/api/v1/workflows", token: A, body: wf}, 201)
	k.do(call{method: "GET", path: "/api/v1/workflows", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/workflows", token: "wrong"}, 401)
	k.do(call{method: "GET", path: "/api/v1/workflows/wf", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/workflows/none", token: V}, 404)
	k.do(call{method: "PUT", path: "/api/v1/workflows/wf", token: A, body: wf, header: map[string]string{"If-Match": "*"}}, 200)
	k.problem(call{method: "PUT", path: "/api/v1/workflows/wf", token: V, body: wf}, 403)
	var wfRun struct{ ID, State string }
	json.Unmarshal(k.do(call{method: "POST", path: "/api/v1/workflows/wf/runs", token: A, body: map[string]any{"parameters": map[string]any{"day": 1}}}, 202), &wfRun)
	k.problem(call{method: "POST", path: "/api/v1/workflows/wf/runs", token: A, body: map[string]any{"parameters": 3}}, 400)
	if !eventually(20*time.Second, func() bool {
		_, _, err := p.Do("GET", "/api/v1/workflows/wf/runs/"+wfRun.ID, nil, &wfRun, "Authorization", "Bearer "+V)
		return err == nil && wfRun.State == "SUCCEEDED"
	}) {
		t.Fatalf("workflow run %s, want SUCCEEDED", wfRun.State)
	}
	k.do(call{method: "GET", path: "/api/v1/workflows/wf/runs", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/workflows/none/runs", token: V}, 404)
	k.do(call{method: "GET", path: "/api/v1/workflows/wf/runs/" + wfRun.ID, token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/workflows/wf/runs/nope", token: V}, 404)
	k.problem(call{method: "POST", path: "/api/v1/workflows/wf/runs/" + wfRun.ID + "/cancel", token: A}, 409)
	k.problem(call{method: "POST", path: "/api/v1/workflows/wf/runs/" + wfRun.ID + "/retry", token: A}, 409)
	k.problem(call{method: "DELETE", path: "/api/v1/workflows/wf", token: V}, 403)
	k.do(call{method: "DELETE", path: "/api/v1/workflows/wf", token: A}, 204)
	// calendars (admin writes, any unscoped token reads), pause/resume (operators), a job's effective next fires
	k.problem(call{method: "GET", path: "/api/v1/calendars", token: "wrong-token-0123456789"}, 401)
	if pr := k.problem(call{method: "POST", path: "/api/v1/calendars", token: A, body: map[string]any{"name": "hol", "dates": []string{"2026-02-30"}}}, 400); pr.Field != "dates[0]" {
		t.Fatalf("bad calendar: %+v", pr)
	}
	k.do(call{method: "POST", path: "/api/v1/calendars", token: A, body: map[string]any{"name": "hol", "timeZone": "Asia/Shanghai", "annual": []string{"10-01"}}}, 201)
	k.do(call{method: "GET", path: "/api/v1/calendars", token: V}, 200)
	k.do(call{method: "GET", path: "/api/v1/calendars/hol", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/calendars/nope", token: V}, 404)
	k.do(call{method: "PUT", path: "/api/v1/calendars/hol", token: A, header: map[string]string{"If-Match": `"0"`},
		body: map[string]any{"annual": []string{"10-01", "10-02"}}}, 200)
	k.problem(call{method: "PUT", path: "/api/v1/calendars/hol", token: A, header: map[string]string{"If-Match": `"0"`},
		body: map[string]any{"annual": []string{"10-01"}}}, 412)
	k.problem(call{method: "POST", path: "/api/v1/jobs/beta/pause", token: V, body: map[string]any{"note": "x"}}, 403)
	k.do(call{method: "POST", path: "/api/v1/jobs/beta/pause", token: A, body: map[string]any{"note": "contract"}}, 200)
	k.do(call{method: "GET", path: "/api/v1/jobs/beta/next?count=2", token: V}, 200)
	k.problem(call{method: "GET", path: "/api/v1/jobs/beta/next?count=1000", token: V}, 400)
	k.problem(call{method: "POST", path: "/api/v1/jobs/nope/resume", token: A}, 404)
	k.do(call{method: "POST", path: "/api/v1/jobs/beta/resume", token: A}, 200)
	k.problem(call{method: "DELETE", path: "/api/v1/calendars/hol", token: V}, 403)
	k.do(call{method: "DELETE", path: "/api/v1/calendars/hol", token: A}, 204)

	// delete
	k.problem(call{method: "DELETE", path: "/api/v1/jobs/beta", token: V}, 403)
	k.do(call{method: "DELETE", path: "/api/v1/jobs/beta", token: A}, 204)
	k.problem(call{method: "DELETE", path: "/api/v1/jobs/beta", token: A}, 404)

	// every operation was called, and every one answered at least one 4xx, validated like any answer against
	// each document: an operation that passed on successes only would leave its error answers unchecked. The
	// health checks take no input a client could get wrong, and document no 4xx.
	noInput := map[string]bool{"GET /healthz": true, "GET /readyz": true}
	doc, _ := spec.Load(context.Background(), openapi.OpenAPI3JSON)
	var missing, no4xx []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			statuses := k.covered[key]
			switch {
			case len(statuses) == 0:
				missing = append(missing, key)
			case noInput[key]:
				for code := range op.Responses.Map() {
					if strings.HasPrefix(code, "4") {
						t.Errorf("%s documents a %s now: take it off noInput and send it a bad request", key, code)
					}
				}
			case !slices.ContainsFunc(statuses, func(s int) bool { return s >= 400 && s < 500 }):
				no4xx = append(no4xx, key)
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(no4xx)
	if len(missing) > 0 || len(no4xx) > 0 {
		t.Fatalf("operations the contract test never called: %v; called without a 4xx answer: %v", missing, no4xx)
	}
	for op, statuses := range k.covered {
		t.Logf("%-50s %v", op, statuses)
	}

	// the server's log names the token holder for writes and never holds a token
	log := p.Log()
	for _, secret := range []string{adminToken, viewerToken, "wrong-token-0123456789", testSecret, ap.CallbackToken, "contract-secret", "contract-pass"} {
		if strings.Contains(log, secret) {
			t.Fatalf("the log holds a secret (%s...)", secret[:8])
		}
	}
	audited := false
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `msg="api write"`) && strings.Contains(line, "method=DELETE path=/api/v1/jobs/beta status=204 user=ops ") {
			audited = true
		}
	}
	if !audited {
		t.Fatalf("no audit line for the delete")
	}
}

func sha256Hex(s string) string {
	return strings.TrimPrefix(api.HashToken(s), "sha256:")
}

// eventually polls cond every 100 ms until it holds or timeout passes; it reports whether it held.
func eventually(timeout time.Duration, cond func() bool) bool {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		if cond() {
			return true
		}
		select {
		case <-deadline:
			return cond()
		case <-tick.C:
		}
	}
}
