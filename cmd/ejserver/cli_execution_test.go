package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// execution runs `ejserver execution ARGS...`.
func execution(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = executionCmd(args, &o, &e)
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
	out, errOut, code := execution(t, append([]string{"get", acc.ID}, api...)...)
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
	out, _, code = execution(t, append([]string{"get", acc.ID, "--json"}, api...)...)
	var e map[string]any
	if err := json.Unmarshal([]byte(out), &e); code != 0 || err != nil || e["state"] != "RUNNING" || e["async"] != true ||
		e["progress"] != 40.0 || e["leaseExpiresAt"] != "2026-11-24T10:01:20Z" || e["heartbeatAt"] != "2026-11-24T10:00:20Z" {
		t.Fatalf("get --json: exit %d, %v\n%s", code, err, out)
	}
	out, _, _ = execution(t, append([]string{"get", "sync-failed"}, api...)...)
	if !strings.Contains(out, "FAILED") || !strings.Contains(out, "HTTP 503 from the receiver") || strings.Contains(out, "async") {
		t.Fatalf("get of a failed synchronous item:\n%s", out)
	}
	if _, errOut, code = execution(t, append([]string{"get", "nope"}, api...)...); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("get of an unknown id: exit %d: %s", code, errOut)
	}

	// list: the API's filters pass through; --running is picked out of the pages here
	list := func(args ...string) (ids []string, query string) {
		t.Helper()
		out, errOut, code := execution(t, append(append([]string{"list", "--json"}, args...), api...)...)
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
	out, _, _ = execution(t, append([]string{"list"}, api...)...)
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
	out, errOut, code := execution(t, "list", "--running", "--server", p.URL)
	if code != 0 || !strings.Contains(out, "e1500") || !strings.Contains(out, "e1000") || strings.Contains(out, "e0000") ||
		!strings.Contains(out, "(looked at the newest 1000 executions; more: --running --cursor 1000)") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	out, _, _ = execution(t, "list", "--running", "--server", p.URL, "--cursor", "1000")
	if !strings.Contains(out, "e0000") || strings.Contains(out, "e1500") || strings.Contains(out, "more:") {
		t.Fatalf("the rest:\n%s", out)
	}
	if n := len(p.Requests()); n != 4 { // 500+500, then the remaining 500+300
		t.Fatalf("%d pages fetched, want 4", n)
	}
}

func TestExecutionUsageErrors(t *testing.T) {
	clearCLIEnv(t)
	p := callbacktest.New(t)
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
	}
	for _, tt := range tests {
		out, errOut, code := execution(t, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%s: exit %d, stderr:\n%s", tt.name, code, errOut)
		}
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("usage errors sent %d requests", n)
	}
}
