package api

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/service"
)

// fakeService answers the few calls these tests make; any other call panics (a nil interface).
type fakeService struct {
	Service
}

func (f *fakeService) CronNext(context.Context, service.CronQuery) ([]time.Time, string, error) {
	return []time.Time{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, "", nil
}

const (
	adminSecret       = "admin-token-0123456789"
	viewerSecret      = "viewer-token-0123456789"
	operatorSecret    = "operator-token-0123456789"
	scopedAdminSecret = "team-a-admin-token-0123456789"
)

func testTokens(t *testing.T) []Token {
	t.Helper()
	file := "# role name token\nadmin ops " + HashToken(adminSecret) + "\n\nviewer grafana " + viewerSecret + "\n" +
		"operator oncall " + HashToken(operatorSecret) + "\n" +
		"admin team-a " + HashToken(scopedAdminSecret) + " scope=prefix:team-a-|label:payments\n" +
		"viewer dashboards - scope=prefix:team-a-\n"
	toks, err := ParseTokens(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

func TestParseTokens(t *testing.T) {
	toks := testTokens(t)
	if len(toks) != 5 || toks[0].Name != "ops" || toks[0].Role != RoleAdmin || toks[1].Role != RoleViewer ||
		toks[2].Role != RoleOperator || toks[3].Scope.String() != "prefix:team-a-|label:payments" || !toks[0].Scope.Unscoped() {
		t.Fatalf("tokens %+v", toks)
	}
	if _, ok := lookup(toks, CertOnly); ok {
		t.Fatal("a certificate-only line matched the bearer token \"-\"")
	}
	if tok, ok := lookup(toks, adminSecret); !ok || tok.Name != "ops" {
		t.Fatalf("admin secret: %v %v", tok, ok)
	}
	if tok, ok := lookup(toks, viewerSecret); !ok || tok.Name != "grafana" {
		t.Fatalf("viewer secret: %v %v", tok, ok)
	}
	if _, ok := lookup(toks, adminSecret+"x"); ok {
		t.Fatal("a wrong secret matched")
	}
	bad := []struct{ name, file, want string }{
		{"two fields", "admin ops", "line 1: want"},
		{"five fields", "admin ops " + adminSecret + " scope=prefix:a scope=label:b", "line 1: want \"ROLE NAME TOKEN [scope=SCOPE]\" (3 or 4 fields), got 5"},
		{"not a scope", "admin ops " + adminSecret + " prefix:a", "line 1: token \"ops\": the 4th field must be scope=SCOPE"},
		{"bad scope", "admin ops " + adminSecret + " scope=prefix:a/b", "line 1: token \"ops\": scope alternative 1: prefix \"a/b\""},
		{"empty scope", "viewer ops - scope=", "line 1: token \"ops\": scope is empty"},
		{"bad role", "root ops " + adminSecret, "line 1: token \"ops\": role \"root\""},
		{"short", "admin ops short", "line 1: token \"ops\" is shorter"},
		{"bad hash", "admin ops sha256:abc", "line 1: token \"ops\": sha256: must be"},
		{"duplicate", "admin ops " + adminSecret + "\nviewer ops " + viewerSecret, "line 2: token name \"ops\" is used twice"},
		{"bad name", "admin a/b " + adminSecret, "line 1: token name \"a/b\""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTokens(strings.NewReader(tt.file))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want prefix %q", err, tt.want)
			}
			if strings.Contains(err.Error(), adminSecret) || strings.Contains(err.Error(), viewerSecret) {
				t.Fatalf("the error shows the token: %v", err)
			}
		})
	}
}

func TestAuthRoles(t *testing.T) {
	h := New(Config{Service: &fakeService{}, Tokens: testTokens(t), MetricsAuth: true,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up 1\n") })})
	tests := []struct {
		name, method, path, auth string
		status                   int
		challenge                string
	}{
		{"no token", "GET", "/api/v1/cron/next?cron=@hourly", "", 401, `Bearer realm="ejserver"`},
		{"not bearer", "GET", "/api/v1/cron/next?cron=@hourly", "Basic b3BzOng=", 401, `Bearer realm="ejserver", error="invalid_request"`},
		{"wrong token", "GET", "/api/v1/cron/next?cron=@hourly", "Bearer " + adminSecret + "x", 401, `Bearer realm="ejserver", error="invalid_token"`},
		{"viewer reads", "GET", "/api/v1/cron/next?cron=@hourly", "Bearer " + viewerSecret, 200, ""},
		{"admin reads", "GET", "/api/v1/cron/next?cron=@hourly", "bearer " + adminSecret, 200, ""},
		{"viewer writes", "DELETE", "/api/v1/jobs/x", "Bearer " + viewerSecret, 403, `Bearer realm="ejserver", error="insufficient_scope"`},
		{"viewer triggers", "POST", "/api/v1/jobs/x/trigger", "Bearer " + viewerSecret, 403, `Bearer realm="ejserver", error="insufficient_scope"`},
		{"healthz open", "GET", "/healthz", "", 200, ""},
		{"readyz open", "GET", "/readyz", "", 200, ""},
		{"spec open", "GET", "/openapi/openapi3.json", "", 200, ""},
		{"docs open", "GET", "/swagger/index.html", "", 200, ""},
		{"metrics needs a token", "GET", "/metrics", "", 401, `Bearer realm="ejserver"`},
		{"metrics with a viewer token", "GET", "/metrics", "Bearer " + viewerSecret, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if tt.status >= 400 {
				var p Problem
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != tt.status || p.Type == "" || p.Detail == "" {
					t.Fatalf("not a problem: %s", rec.Body)
				}
				if rec.Header().Get("Content-Type") != "application/problem+json" {
					t.Fatalf("content type %q", rec.Header().Get("Content-Type"))
				}
				if strings.Contains(rec.Body.String(), adminSecret) || strings.Contains(rec.Body.String(), viewerSecret) {
					t.Fatalf("the answer shows a token: %s", rec.Body)
				}
			}
		})
	}
}

func TestNoTokensMeansOpen(t *testing.T) {
	h := New(Config{Service: &fakeService{}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/cron/next?cron=@hourly", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

// The documented WebhookView must be exactly what ejserver.Webhook's MarshalJSON writes.
func TestWebhookViewIsWhatWebhookMarshals(t *testing.T) {
	cases := []ejserver.Webhook{
		{URL: "http://h/x", Method: "POST", TimeoutMs: 5000, ConnectTimeoutMs: 3000, SecretGracePeriodSeconds: 60},
		{URL: "http://h/x", Method: "PUT", Headers: map[string]string{"a": "b"}, Secret: "whsec_x"},
		{URL: "http://h/x", Secret: "whsec_x", PreviousSecret: "whsec_y", PreviousSecretExpiresAt: time.Now()},
	}
	for _, w := range cases {
		want, _ := json.Marshal(w)
		got, _ := json.Marshal(webhookView(w))
		if string(got) != string(want) {
			t.Fatalf("WebhookView %s, Webhook %s", got, want)
		}
	}
}

func TestPageAfter(t *testing.T) {
	ips := []string{"10.0.0.10", "10.0.0.9", "127.0.0.1", "10.0.0.1"}
	id := func(s string) string { return s }
	var all []string
	cursor := ""
	for range 10 {
		page, next := pageAfter(ips, id, compareIPs, cursor, 3)
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(all, " ") != "10.0.0.1 10.0.0.9 10.0.0.10 127.0.0.1" {
		t.Fatalf("pages %v", all)
	}
	if page, next := pageAfter(ips, id, compareIPs, "", 4); len(page) != 4 || next != "" {
		t.Fatalf("a full last page %v, next %q", page, next)
	}
}

func TestDocsPageUsesTheServedSpecs(t *testing.T) {
	h := New(Config{Service: &fakeService{}})
	for path, want := range map[string]string{
		"/swagger/index.html":     `url: "\/openapi\/openapi3.json"`,
		"/swagger/swagger-ui.css": ".swagger-ui",
		"/openapi/swagger.json":   `"swagger": "2.0"`,
		"/openapi/openapi3.json":  `"openapi": "3.0.3"`,
		"/openapi/swagger.yaml":   "swagger: \"2.0\"",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d, want %q in %.200s", path, rec.Code, want, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/docs", nil))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/swagger/index.html" {
		t.Errorf("/docs: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

func TestDocsPageOffersOnlyTheServedSpecs(t *testing.T) {
	rec := httptest.NewRecorder()
	New(Config{Service: &fakeService{}}).ServeHTTP(rec, httptest.NewRequest("GET", "/swagger/index.html", nil))
	if strings.Contains(rec.Body.String(), "doc.json") {
		t.Fatal("the docs page offers doc.json, which nothing serves")
	}
}

// Whatever the file, ParseTokens neither panics nor shows a token in its error, and a line it accepts
// writes back (TokenLine) to the same token.
func FuzzParseTokens(f *testing.F) {
	f.Add("admin ops " + adminSecret + " scope=prefix:team-a-|label:payments")
	f.Add("viewer dash - scope=label:x\noperator oncall " + HashToken(operatorSecret))
	f.Add("admin ops " + adminSecret + " scope=prefix:a/b")
	f.Fuzz(func(t *testing.T, file string) {
		toks, err := ParseTokens(strings.NewReader(file))
		if err != nil {
			for _, line := range strings.Split(file, "\n") {
				if fs := strings.Fields(line); len(fs) >= 3 && len(fs[2]) >= 8 && fs[2] != fs[1] && fs[2] != fs[0] &&
					!strings.HasPrefix(fs[2], "sha256:") && strings.Contains(err.Error(), fs[2]) {
					t.Fatalf("the error %q shows the token %q", err, fs[2])
				}
			}
			return
		}
		for _, tok := range toks {
			secret := CertOnly
			if tok.bearer {
				secret = "sha256:" + hex.EncodeToString(tok.hash[:])
			}
			again, err := ParseTokens(strings.NewReader(TokenLine(tok.Role, tok.Name, secret, tok.Scope)))
			if err != nil || len(again) != 1 || again[0].Name != tok.Name || again[0].Role != tok.Role ||
				again[0].Scope.String() != tok.Scope.String() || again[0].hash != tok.hash || again[0].bearer != tok.bearer {
				t.Fatalf("%+v writes back as %+v, %v", tok, again, err)
			}
		}
	})
}
