package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/client"
	"github.com/ejserver/ejserver/internal/testutil/callbacktest"
)

// clearCLIEnv keeps the developer's environment out of the CLI under test.
func clearCLIEnv(t *testing.T) {
	for _, v := range []string{"EJ_SERVER", "EJ_TOKEN", "EJ_API_TOKEN", "EJ_OUTPUT", "EJ_TIMEOUT", "EJ_CALLBACK_URL", "EJ_CALLBACK_TOKEN"} {
		t.Setenv(v, "")
	}
}

// execution runs `ejserver execution ARGS...` with stdin.
func execution(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = executionCmd(args, strings.NewReader(stdin), &o, &e)
	return o.String(), e.String(), code
}

func TestExecutionGetAndList(t *testing.T) {
	clearCLIEnv(t)
	p := callbacktest.New(t)
	p.APIToken = "ejt_admin"
	t0 := callbacktest.Start.Add(-time.Hour)
	p.Add(callbacktest.Execution{ID: "sync-ok", JobName: "settle", ShardingItem: 0, ShardingTotalCount: 4, Source: "NORMAL_TRIGGER",
		StartedAt: t0, CompletedAt: t0.Add(time.Second), Success: true, StatusCode: 200, Attempts: 1, DurationMs: 1000})
	p.Add(callbacktest.Execution{ID: "sync-failed", JobName: "settle", ShardingItem: 1, ShardingTotalCount: 4, Source: "NORMAL_TRIGGER",
		StartedAt: t0.Add(time.Minute), CompletedAt: t0.Add(2 * time.Minute), StatusCode: 503, Attempts: 3, FailureCause: "HTTP 503\nfrom the receiver"})
	p.Add(callbacktest.Execution{ID: "sync-running", JobName: "report", ShardingItem: 0, ShardingTotalCount: 1, Source: "MANUAL",
		StartedAt: t0.Add(3 * time.Minute), Attempts: 1})
	acc := p.Accept("settle", 2, 60, 24*time.Hour)
	p.Advance(20 * time.Second)
	ctx := context.Background()
	if _, err := client.New("").Heartbeat(ctx, acc.CallbackURL, acc.Token, client.HeartbeatRequest{Progress: client.Int(40),
		Message: "40% of rows\x1b[31m"}); err != nil {
		t.Fatal(err)
	}
	api := []string{"--server", strings.TrimPrefix(p.URL, "http://"), "--token", "ejt_admin"}

	// get: a table with the async fields, JSON with all of them
	out, errOut, code := execution(t, "", append([]string{"get", acc.ID}, api...)...)
	if code != 0 {
		t.Fatalf("get: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"id ", acc.ID, "2 of 3", "RUNNING 40%", "state ", "progress ", "40%", "message ", "40% of rows?[31m",
		"lease expires ", "last heartbeat "} {
		if !strings.Contains(out, want) {
			t.Fatalf("get lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Fatalf("a receiver's message drives the terminal:\n%q", out)
	}
	out, _, code = execution(t, "", append([]string{"get", acc.ID, "--json"}, api...)...)
	var e map[string]any
	if err := json.Unmarshal([]byte(out), &e); code != 0 || err != nil || e["state"] != "RUNNING" || e["async"] != true ||
		e["progress"] != 40.0 || e["leaseExpiresAt"] != "2026-11-24T10:01:20Z" || e["heartbeatAt"] != "2026-11-24T10:00:20Z" {
		t.Fatalf("get --json: exit %d, %v\n%s", code, err, out)
	}
	out, _, _ = execution(t, "", append([]string{"get", "sync-failed"}, api...)...)
	if !strings.Contains(out, "FAILED") || !strings.Contains(out, "HTTP 503 from the receiver") || strings.Contains(out, "async") {
		t.Fatalf("get of a failed synchronous item:\n%s", out)
	}
	if _, errOut, code = execution(t, "", append([]string{"get", "nope"}, api...)...); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("get of an unknown id: exit %d: %s", code, errOut)
	}

	// list: the API's filters pass through; --running is picked out of the pages here
	list := func(args ...string) (ids []string, query string) {
		t.Helper()
		out, errOut, code := execution(t, "", append(append([]string{"list", "--json"}, args...), api...)...)
		if code != 0 {
			t.Fatalf("list %v: exit %d: %s", args, code, errOut)
		}
		var l struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("list %v: %v\n%s", args, err, out)
		}
		for _, it := range l.Items {
			ids = append(ids, it.ID)
		}
		reqs := p.Requests()
		return ids, reqs[len(reqs)-1].Query
	}
	tests := []struct {
		args      []string
		wantIDs   string
		wantQuery string
	}{
		{nil, acc.ID + " sync-running sync-failed sync-ok", "limit=20"},
		{[]string{"--job", "settle", "--failed"}, "sync-failed", "job=settle&limit=20&success=false"},
		{[]string{"--succeeded", "--item", "0", "--limit", "5"}, "sync-ok", "item=0&limit=5&success=true"},
		{[]string{"--running"}, acc.ID + " sync-running", "limit=500"},
		{[]string{"--running", "--job", "settle"}, acc.ID, "job=settle&limit=500"},
		{[]string{"--running", "--limit", "1"}, acc.ID, "limit=500"},
	}
	for _, tt := range tests {
		ids, q := list(tt.args...)
		if strings.Join(ids, " ") != tt.wantIDs || q != tt.wantQuery {
			t.Errorf("list %v: %v with query %q; want %s with %q", tt.args, ids, q, tt.wantIDs, tt.wantQuery)
		}
	}
	out, _, _ = execution(t, "", append([]string{"list"}, api...)...)
	if !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "RUNNING 40%") || !strings.Contains(out, "40% of rows") ||
		!strings.Contains(out, "HTTP 503 from the receiver") || !strings.Contains(out, "running") {
		t.Fatalf("list table:\n%s", out)
	}
	// once the async item ends it is no longer running
	if _, err := client.New("").Complete(ctx, acc.CallbackURL, acc.Token, client.CompleteRequest{Status: "success"}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := list("--running"); strings.Join(ids, " ") != "sync-running" {
		t.Fatalf("running after the completion: %v", ids)
	}
}

// --running looks at a bounded number of executions and says how to look further.
func TestExecutionListRunningScansPages(t *testing.T) {
	clearCLIEnv(t)
	defer func(n int) { runningScan = n }(runningScan)
	runningScan = 1000
	p := callbacktest.New(t)
	t0 := callbacktest.Start.Add(-time.Hour)
	for i := range 1800 {
		e := callbacktest.Execution{ID: fmt.Sprintf("e%04d", i), JobName: "settle", StartedAt: t0.Add(time.Duration(i) * time.Second)}
		if i != 0 && i != 1000 && i != 1500 { // the oldest, and two more, still run
			e.CompletedAt, e.Success = e.StartedAt.Add(time.Second), true
		}
		p.Add(e)
	}
	out, errOut, code := execution(t, "", "list", "--running", "--server", p.URL)
	if code != 0 || !strings.Contains(out, "e1500") || !strings.Contains(out, "e1000") || strings.Contains(out, "e0000") ||
		!strings.Contains(out, "(looked at the newest 1000 executions; more: --running --cursor 1000)") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	out, _, _ = execution(t, "", "list", "--running", "--server", p.URL, "--cursor", "1000")
	if !strings.Contains(out, "e0000") || strings.Contains(out, "e1500") || strings.Contains(out, "more:") {
		t.Fatalf("the rest:\n%s", out)
	}
	if n := len(p.Requests()); n != 4 { // 500+500, then the remaining 500+300
		t.Fatalf("%d pages fetched, want 4", n)
	}
}

func TestExecutionUsageErrors(t *testing.T) {
	clearCLIEnv(t)
	t.Setenv("EJ_TOKEN", "ejt_api-token") // never taken for a callback token
	t.Setenv("EJ_API_TOKEN", "ejt_api-token")
	p := callbacktest.New(t)
	acc := p.Accept("settle", 0, 60, time.Hour)
	cb := []string{"--callback-url", acc.CallbackURL, "--token", acc.Token}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no verb", nil, "Usage:"},
		{"an unknown verb", []string{"show"}, `unknown command "show"`},
		{"get without an id", []string{"get"}, "want 1 argument(s), got 0"},
		{"failed and succeeded", []string{"list", "--failed", "--succeeded"}, "exclude each other"},
		{"running and failed", []string{"list", "--running", "--failed"}, "--running excludes"},
		{"a limit out of range", []string{"list", "--limit", "501"}, "--limit: must be between 1 and 500"},
		{"a negative item", []string{"list", "--item", "-2"}, "--item: -2 is not an item number"},
		{"heartbeat without a token", []string{"heartbeat", "--callback-url", acc.CallbackURL}, "--token [EJ_CALLBACK_TOKEN] are required"},
		{"heartbeat without a URL", []string{"heartbeat", "--token", acc.Token}, "--callback-url [EJ_CALLBACK_URL]"},
		{"a relative callback URL", []string{"heartbeat", "--callback-url", "/api/v1/executions/x", "--token", acc.Token}, "not an absolute http(s) URL"},
		{"progress out of range", append([]string{"heartbeat", "--progress", "101"}, cb...), "--progress: must be between 0 and 100"},
		{"progress not a number", append([]string{"heartbeat", "--progress", "half"}, cb...), "invalid value"},
		{"complete without a status", append([]string{"complete"}, cb...), `--status: must be success or failure, got ""`},
		{"a bad status", append([]string{"complete", "--status", "ok"}, cb...), "--status: must be success or failure"},
		{"output twice", append([]string{"complete", "--status", "success", "--output", "x", "--output-file", "f"}, cb...), "exclude each other"},
		{"a missing output file", append([]string{"complete", "--status", "success", "--output-file", filepath.Join(t.TempDir(), "none")}, cb...), "--output-file: open"},
		{"an argument", append([]string{"complete", "--status", "success", "extra"}, cb...), "want 0 argument(s), got 1"},
		{"the token given to the wrong flag", []string{"heartbeat", "--callback-url", acc.CallbackURL, "--progress", acc.Token}, "invalid value"},
	}
	for _, tt := range tests {
		out, errOut, code := execution(t, "", tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%s: exit %d, stderr:\n%s", tt.name, code, errOut)
		}
		if strings.Contains(out+errOut, acc.Token) || strings.Contains(out+errOut, "ejcb1.") {
			t.Errorf("%s: the token is printed:\n%s%s", tt.name, out, errOut)
		}
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("usage errors sent %d requests", n)
	}
}

// heartbeat and complete as a shell receiver uses them: the callback from the environment, the exit status
// saying what to do next, the token never printed.
func TestCallbackVerbs(t *testing.T) {
	clearCLIEnv(t)
	t.Setenv("EJ_TOKEN", "ejt_api-token") // a shell that also talks to the API: never sent to a callback
	p := callbacktest.New(t)
	var printed strings.Builder
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code := execution(t, stdin, args...)
		printed.WriteString(out + errOut)
		return out, errOut, code
	}

	acc := p.Accept("settle", 2, 60, 24*time.Hour)
	t.Setenv("EJ_CALLBACK_URL", acc.CallbackURL)
	t.Setenv("EJ_CALLBACK_TOKEN", acc.Token)
	out, errOut, code := run("", "heartbeat", "--progress", "0")
	if code != 0 || !strings.HasPrefix(out, "RUNNING "+acc.ID+" (job settle, item 2, attempt 1), progress 0%, lease until ") || errOut != "" {
		t.Fatalf("heartbeat from the environment: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = run("", "heartbeat", "--message", "half", "-o", "json")
	var lease map[string]any
	if err := json.Unmarshal([]byte(out), &lease); code != 0 || err != nil || lease["state"] != "RUNNING" || lease["message"] != "half" {
		t.Fatalf("heartbeat -o json: exit %d %v\n%s", code, err, out)
	}

	// the flags win over the environment: another execution's callback
	other := p.Accept("settle", 3, 60, 24*time.Hour)
	if out, _, code = run("", "heartbeat", "--callback-url", other.CallbackURL, "--token", other.Token); code != 0 || !strings.Contains(out, other.ID) {
		t.Fatalf("flags over the environment: exit %d\n%s", code, out)
	}
	// a URL from the flag and the token from the environment do not match: refused for good
	_, errOut, code = run("", "heartbeat", "--callback-url", other.CallbackURL)
	if code != 1 || !strings.Contains(errOut, "401 Unauthorized (callback-token): ") {
		t.Fatalf("another execution's token: exit %d: %s", code, errOut)
	}

	// complete with the end of a file; the same completion again is fine, another is refused for good
	log := strings.Repeat("é", 3000) + "\nrows settled: 1204.\n" // 6021 bytes: the last 4096 start inside an é
	file := filepath.Join(t.TempDir(), "job.log")
	os.WriteFile(file, []byte(log), 0o600)
	out, errOut, code = run("", "complete", "--status", "success", "--message", "settled", "--output-file", file)
	if code != 0 || !strings.HasPrefix(out, "SUCCEEDED "+acc.ID) || !strings.Contains(errOut, "the output has 6021 bytes; its last 4095 are sent") {
		t.Fatalf("complete: exit %d\n%s%s", code, out, errOut)
	}
	if e, _ := p.Get(acc.ID); !e.Success || e.Message != "settled" || !strings.HasSuffix(e.Output, "é\nrows settled: 1204.\n") ||
		len(e.Output) != 4095 || !strings.HasPrefix(e.Output, "é") {
		t.Fatalf("recorded: %+v", e)
	}
	if _, _, code = run("", "complete", "--status", "success", "--message", "settled", "--output-file", file); code != 0 {
		t.Fatalf("the same completion again: exit %d", code)
	}
	_, errOut, code = run("", "complete", "--status", "failure")
	if code != 1 || !strings.Contains(errOut, "409 Conflict (already-completed): the execution ended SUCCEEDED") {
		t.Fatalf("another completion: exit %d: %s", code, errOut)
	}
	if _, errOut, code = run("", "heartbeat"); code != 1 || !strings.Contains(errOut, "already-completed") {
		t.Fatalf("a heartbeat after the end: exit %d: %s", code, errOut)
	}

	// the lease ran out: 409 lease-expired, exit 1
	short := p.Accept("report", 0, 2, time.Hour)
	p.Advance(5 * time.Second)
	_, errOut, code = run("", "heartbeat", "--callback-url", short.CallbackURL, "--token", short.Token)
	if code != 1 || !strings.Contains(errOut, "409 Conflict (lease-expired): the lease ran out at ") {
		t.Fatalf("lease expired: exit %d: %s", code, errOut)
	}
	// stdin as the output, --has-more, of a retried item's current attempt
	tok := p.Retry(short.ID)
	out, _, code = run("rows 1-500\n", "complete", "--callback-url", short.CallbackURL, "--token", tok, "--status", "success",
		"--output-file", "-", "--has-more")
	if e, _ := p.Get(short.ID); code != 0 || !strings.Contains(out, "attempt 2") || e.Output != "rows 1-500\n" || !p.HasMore(short.ID) {
		t.Fatalf("complete from stdin: exit %d %s %+v", code, out, e)
	}
	// and the first attempt's token is stale
	if _, errOut, code = run("", "complete", "--callback-url", short.CallbackURL, "--token", short.Token, "--status", "failure"); code != 1 ||
		!strings.Contains(errOut, "stale-attempt") {
		t.Fatalf("stale attempt: exit %d: %s", code, errOut)
	}

	for _, r := range p.Requests() {
		if r.Method == http.MethodPost && (!strings.HasPrefix(r.Authorization, "Bearer ejcb1.") || strings.Contains(r.Authorization, "ejt_")) {
			t.Fatalf("%s %s sent Authorization %q", r.Method, r.Path, r.Authorization)
		}
	}
	for _, tok := range []string{acc.Token, other.Token, short.Token, tok, "ejcb1."} {
		if strings.Contains(printed.String(), tok) {
			t.Fatalf("printed the token %q:\n%s", tok, printed.String())
		}
	}
}

// A callback not known to have arrived exits 3 (send it again); one the server echoes the token back in is
// still not printed; a heartbeat answered with an ended state says to stop.
func TestCallbackExitCodes(t *testing.T) {
	clearCLIEnv(t)
	const token = "ejcb1.1.c2VjcmV0LW1hYw"
	answer := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			// a careless server or proxy that echoes the request's Authorization
			fmt.Fprintf(w, body, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/api/v1/executions/x"
	}
	problem := `{"type":"https://ejserver.dev/problems/%%s","title":"t","status":%d,"detail":"token %%s"}`
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	tests := []struct {
		name string
		url  string
		code int
		want string
	}{
		{"no connection", down.URL + "/api/v1/executions/x", 3, "connection refused"},
		{"unavailable", answer(503, strings.Replace(fmt.Sprintf(problem, 503), "%s", "unavailable", 1)), 3, "503 t (unavailable): token [callback token]"},
		{"too many requests", answer(429, strings.Replace(fmt.Sprintf(problem, 429), "%s", "slow-down", 1)), 3, "429"},
		{"a proxy's page", answer(502, "<html>bad gateway %s</html>"), 3, "502 Bad Gateway: <html>bad gateway [callback token]</html>"},
		{"refused", answer(409, strings.Replace(fmt.Sprintf(problem, 409), "%s", "lease-expired", 1)), 1, "409 t (lease-expired): token [callback token]"},
	}
	for _, tt := range tests {
		out, errOut, code := execution(t, "", "heartbeat", "--callback-url", tt.url, "--token", token, "--timeout", "5s")
		if code != tt.code || !strings.Contains(errOut, tt.want) || strings.Contains(out+errOut, token) || strings.Contains(out+errOut, "c2VjcmV0") {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", tt.name, code, tt.code, tt.want, out, errOut)
		}
	}

	ended := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"executionId":"x","jobName":"settle","shardingItem":0,"attempt":1,"state":"CANCELLED","startedAt":"2026-11-24T10:00:00Z","endedAt":"2026-11-24T10:01:00Z"}`)
	}))
	defer ended.Close()
	out, errOut, code := execution(t, "", "heartbeat", "--callback-url", ended.URL+"/api/v1/executions/x", "--token", token)
	if code != 0 || !strings.HasPrefix(out, "CANCELLED x ") || !strings.Contains(errOut, "no longer RUNNING: stop working on it") {
		t.Fatalf("an ended state: exit %d\n%s%s", code, out, errOut)
	}
}

func TestReadTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"", 4, ""},
		{"abc", 4, "abc"},
		{"abcdefgh", 4, "efgh"},
		{strings.Repeat("x", 100000) + "end", 5, "x" + "xend"},
	}
	for _, tt := range tests {
		got, size, err := readTail(strings.NewReader(tt.in), tt.n)
		if err != nil || got != tt.want || size != len(tt.in) {
			t.Errorf("readTail(%d bytes, %d) = %q, %d, %v", len(tt.in), tt.n, got, size, err)
		}
	}
	if got := lastBytes("aé", 2); got != "é" {
		t.Errorf("lastBytes cut a character: %q", got)
	}
	if got := lastBytes("aéb", 2); got != "b" {
		t.Errorf("lastBytes started inside a character: %q", got)
	}
}
