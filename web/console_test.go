package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		path, method string
		status       int
		contentType  string
		contains     string
	}{
		{"/", "GET", 200, "text/html; charset=utf-8", `<script type="module" src="main.js"></script>`},
		{"/index.html", "GET", 200, "text/html; charset=utf-8", "<main"},
		{"/main.js", "GET", 200, "text/javascript; charset=utf-8", "/api/v1/auth/whoami"},
		{"/app.js", "GET", 200, "text/javascript; charset=utf-8", "formScreen"},
		{"/pages/jobcharts.js", "GET", 200, "text/javascript; charset=utf-8", "export function jobCharts"},
		{"/vendor/uPlot.esm.js", "GET", 200, "text/javascript; charset=utf-8", "export { uPlot as default }"},
		{"/vendor/uPlot.LICENSE.txt", "GET", 200, "text/plain; charset=utf-8", "Leon Sorokin"},
		{"/async.js", "GET", 200, "text/javascript; charset=utf-8", "window.ejserverAsync"},
		{"/audit.js", "GET", 200, "text/javascript; charset=utf-8", "window.ejserverAudit"},
		{"/alerts.js", "GET", 200, "text/javascript; charset=utf-8", "window.ejserverAlerts"},
		{"/app.css", "GET", 200, "text/css; charset=utf-8", ":focus-visible"},
		{"/favicon.svg", "GET", 200, "image/svg+xml", "<svg"},
		{"/favicon.ico", "GET", 200, "image/svg+xml", "<svg"},
		{"/", "HEAD", 200, "text/html; charset=utf-8", ""},
		{"/nope.js", "GET", 404, "text/plain; charset=utf-8", "the console lives at /"},
		{"/", "POST", 405, "text/plain; charset=utf-8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if ct := rec.Header().Get("Content-Type"); ct != tt.contentType {
				t.Fatalf("Content-Type %q, want %q", ct, tt.contentType)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); csp != ContentSecurityPolicy {
				t.Fatalf("CSP %q", csp)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Fatal("no nosniff")
			}
			if !strings.Contains(rec.Body.String(), tt.contains) {
				t.Fatalf("body lacks %q", tt.contains)
			}
			if tt.status == 200 && rec.Header().Get("Cache-Control") != "no-cache" {
				t.Fatalf("Cache-Control %q", rec.Header().Get("Cache-Control"))
			}
		})
	}
}

// A browser revalidates each file on load; an unchanged file costs a 304.
func TestHandlerRevalidates(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/app.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req := httptest.NewRequest("GET", "/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Fatalf("status %d, want 304", rec.Code)
	}
}

// The CSP forbids inline scripts and styles: the files must not need them.
func TestNoInlineScriptOrStyle(t *testing.T) {
	names := []string{"static/index.html", "static/async.js", "static/channels.js"}
	for _, dir := range []string{"static", "static/pages"} {
		entries, err := static.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".js") {
				names = append(names, dir+"/"+e.Name())
			}
		}
	}
	for _, name := range names {
		b, err := static.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{"<script>", "<style", " style=\"", "onclick=", "onload=", "javascript:", "eval(", "new Function("} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q, which the Content-Security-Policy blocks", name, bad)
			}
		}
	}
}

// async.js is loaded before main.js, whose modules call it as they load (deferred scripts and modules run in
// document order).
func TestAsyncModuleLoadsFirst(t *testing.T) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	module, app := strings.Index(s, `<script src="async.js" defer></script>`), strings.Index(s, `<script type="module" src="main.js"></script>`)
	if module < 0 || app < 0 || module > app {
		t.Fatalf("index.html must load async.js (at %d) before main.js (at %d), the one deferred, the other a module", module, app)
	}
}

// Every page of the console is an ES module of at most ~400 lines (app.js, the job form, included).
func TestModulesStaySmall(t *testing.T) {
	for _, dir := range []string{"static", "static/pages"} {
		entries, err := static.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".js") {
				continue
			}
			b, err := static.ReadFile(dir + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "\n"); n > 420 {
				t.Errorf("%s/%s has %d lines: split it", dir, e.Name(), n)
			}
		}
	}
}

// What receivers write (heartbeat messages, output) reaches the page only through html“, which escapes:
// async.js never writes markup itself.
func TestAsyncModuleWritesNoMarkup(t *testing.T) {
	b, err := static.ReadFile("static/async.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "createContextualFragment"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("async.js uses %s: render through the html`` helper instead", bad)
		}
	}
}
