package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver/internal/access"
)

type fakeCallbacks struct{ Callbacks }

type fakeChannels struct{ Channels }

type fakeNotifications struct{ Notifications }

type fakeAlerts struct{ AlertDefaults }

type fakeWorkflows struct{ Workflows }

// fullAPI is the API with every optional part on, so that every route is registered.
func fullAPI(t *testing.T) *echo.Echo {
	t.Helper()
	h := New(Config{Service: &fakeService{}, Tokens: testTokens(t), MetricsAuth: true, Callbacks: fakeCallbacks{},
		Channels: fakeChannels{}, Notifications: fakeNotifications{}, Alerts: fakeAlerts{}, Workflows: fakeWorkflows{},
		Backfills: fakeBackfills{}, Replays: fakeReplays{},
		Calendars: fakeCalendars{}, Steering: fakeSteering{},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up 1\n") }),
		Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "console") })})
	return h.(*echo.Echo)
}

// Every route echo serves has an access rule, and every rule is a route (or one another branch is adding):
// a new endpoint can't ship without a decision for each role and scope.
func TestEveryRouteHasARule(t *testing.T) {
	e := fullAPI(t)
	registered := map[string]bool{}
	for _, r := range e.Routes() {
		key := routeKey(r.Method, r.Path)
		registered[key] = true
		rule, ok := routeRules[key]
		if !ok {
			t.Errorf("route %s %s has no entry in routeRules: decide what each role and scope may do with it", r.Method, r.Path)
			continue
		}
		if rule.Action < access.Read || rule.Action > access.Administer || rule.Reach < access.Public || rule.Reach > access.Cluster {
			t.Errorf("route %s %s: rule %+v is not a valid action and reach", r.Method, r.Path, rule)
		}
		// a route that changes something is never a read
		if r.Method != http.MethodGet && r.Method != echo.RouteNotFound && rule.Action == access.Read {
			t.Errorf("route %s %s changes state but its rule is a read", r.Method, r.Path)
		}
	}
	for key := range routeRules {
		if !registered[key] && !slices.Contains(pendingRoutes, key) {
			t.Errorf("routeRules has %q, which is no route: a removed route's rule, or a typo", key)
		}
	}
	for _, key := range pendingRoutes {
		if registered[key] {
			t.Errorf("%q is registered now: take it off pendingRoutes", key)
		}
	}
}

// The decision of every route for every role and scope is docs/access.md, which this test writes with
// EJ_UPDATE_DOCS=1 and otherwise checks, so the published table is the code's. It also checks the
// invariants the README states.
func TestRouteDecisions(t *testing.T) {
	scoped := access.Scope{Prefixes: []string{"team-a-"}}
	grants := []access.Grant{{Role: access.Admin}, {Role: access.Operator}, {Role: access.Viewer},
		{Role: access.Admin, Scope: scoped}, {Role: access.Operator, Scope: scoped}, {Role: access.Viewer, Scope: scoped}}
	word := map[access.Decision]string{access.Allow: "yes", access.Forbid: "403", access.Hide: "404", access.NotAPI: "no token"}
	var b strings.Builder
	b.WriteString("# Who may call what\n\n" +
		"Generated from `routeRules` (api/access.go) by `EJ_UPDATE_DOCS=1 go test -run TestRouteDecisions ./api/`; the test fails\n" +
		"when this file and the code differ. *yes*: allowed (a scoped token then sees only its jobs: a job outside its\n" +
		"scope is 404, lists are filtered); *403*: the role may not; *404*: hidden from a scoped token; *no token*: the\n" +
		"route takes no API token (open, or an execution's callback token). Routes of other branches that are not\n" +
		"served yet are listed too.\n\n" +
		"| route | what | admin | operator | viewer | scoped admin | scoped operator | scoped viewer |\n|---|---|---|---|---|---|---|---|\n")
	keys := make([]string, 0, len(routeRules))
	for k := range routeRules {
		if !strings.HasPrefix(k, echo.RouteNotFound) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		pa, pb := strings.SplitN(a, " ", 2), strings.SplitN(b, " ", 2)
		return strings.Compare(pa[1]+" "+pa[0], pb[1]+" "+pb[0])
	})
	for _, key := range keys {
		rule := routeRules[key]
		b.WriteString("| `" + key + "` | " + rule.Action.String() + ", " + rule.Reach.String() + " |")
		for _, g := range grants {
			b.WriteString(" " + word[access.Decide(g, rule)] + " |")
		}
		b.WriteString("\n")
		d := func(i int) access.Decision { return access.Decide(grants[i], rule) }
		method := strings.SplitN(key, " ", 2)[0]
		if rule.Reach == access.Cluster && (d(3) != access.Hide && d(3) != access.Forbid) {
			t.Errorf("%s: a scoped admin reaches a cluster-wide route", key)
		}
		if method != http.MethodGet && rule.Reach != access.Public && rule.Reach != access.CallbackToken && d(2) != access.Forbid {
			t.Errorf("%s: a viewer may write", key)
		}
		if method != http.MethodGet && rule.Action == access.Read {
			t.Errorf("%s changes state but its rule is a read", key)
		}
	}
	const doc = "../docs/access.md"
	if os.Getenv("EJ_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(doc, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(doc)
	if err != nil || string(got) != b.String() {
		t.Fatalf("%s is not the table of routeRules (%v): run EJ_UPDATE_DOCS=1 go test -run TestRouteDecisions ./api/", doc, err)
	}
}

func whoamiAs(t *testing.T, e *echo.Echo, auth string) (int, Caller) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/auth/whoami", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	var c Caller
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
	}
	return rec.Code, c
}

// A verified client certificate's name (which the TLS middleware leaves in the context) is the
// tokens-file line of that name; a bearer token wins over it; "-" lines answer to certificates only.
func TestClientCertificateMapsToALine(t *testing.T) {
	env, err := NewToken("EJ_API_TOKEN", RoleAdmin, "env-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	certName := ""
	e := New(Config{Service: &fakeService{}, Tokens: append(testTokens(t), env)}).(*echo.Echo)
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc { // what the TLS middleware does for a verified certificate
		return func(c echo.Context) error {
			if certName != "" {
				c.Set(ClientCertNameKey, certName)
			}
			return next(c)
		}
	})
	tests := []struct {
		name, cert, auth string
		status           int
		who, scope       string
	}{
		{"certificate-only line", "dashboards", "", 200, "dashboards", "prefix:team-a-"},
		{"a line with a token answers to its certificate too", "oncall", "", 200, "oncall", ""},
		{"the bearer token wins", "dashboards", "Bearer " + adminSecret, 200, "ops", ""},
		{"a bad bearer token is not rescued by the certificate", "dashboards", "Bearer " + adminSecret + "x", 401, "", ""},
		{"another Authorization scheme is judged alone", "dashboards", "Basic b3BzOng=", 401, "", ""},
		{"an unknown certificate name", "stranger", "", 401, "", ""},
		{"EJ_API_TOKEN is no certificate's", "EJ_API_TOKEN", "", 401, "", ""},
		{"no certificate, no token", "", "", 401, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certName = tt.cert
			status, c := whoamiAs(t, e, tt.auth)
			if status != tt.status || c.Name != tt.who || c.Scope != tt.scope {
				t.Fatalf("status %d caller %+v, want %d %q %q", status, c, tt.status, tt.who, tt.scope)
			}
		})
	}
	// a certificate-only viewer can't write
	certName = "dashboards"
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/jobs/team-a-x/trigger", nil))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("a viewer certificate triggered: %d %s", rec.Code, rec.Body)
	}
}
