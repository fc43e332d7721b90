package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ejserver/ejserver/api"
	"github.com/ejserver/ejserver/client"
)

func TestParseJobsFile(t *testing.T) {
	good := `
- jobName: settle
  cron: "0 0/5 * * * ?"
  shardingTotalCount: 4
  webhook:
    url: http://127.0.0.1:9090/hook
- jobName: report
  shardingTotalCount: 1
  overwrite: true
  webhook: {url: "http://127.0.0.1:9090/hook", method: put}
`
	entries, err := parseJobsFile("jobs.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Config.JobName != "settle" || !entries[0].Config.Misfire || entries[1].Config.Webhook.Method != "PUT" ||
		!entries[1].Config.Overwrite || entries[0].Pos != "jobs.yaml:2 (job 1, settle)" {
		t.Fatalf("entries %+v", entries)
	}
	if empty, err := parseJobsFile("jobs.yaml", []byte("# nothing yet\n")); err != nil || len(empty) != 0 {
		t.Fatalf("empty file: %v %v", empty, err)
	}

	bad := []struct{ name, file, want string }{
		{"not a list", "jobName: x\n", "jobs.yaml:1: want a list of jobs"},
		{"not a mapping", "- x\n", "jobs.yaml:1 (job 1): a job must be a mapping"},
		{"unknown field", "- jobName: a\n  shardingTotalCount: 1\n  shards: 2\n  webhook: {url: http://h/x}\n", "jobs.yaml:1 (job 1, a): shards: unknown field"},
		{"unknown nested field", "- jobName: a\n  shardingTotalCount: 1\n  webhook: {uri: http://h/x}\n", "jobs.yaml:1 (job 1, a): webhook.uri: unknown field"},
		{"wrong type", "- jobName: a\n  shardingTotalCount: many\n", "jobs.yaml:1 (job 1, a): shardingTotalCount: must be a number"},
		{"bad cron", "- jobName: a\n  cron: 0 0 25 * * ?\n  shardingTotalCount: 1\n  webhook: {url: http://h/x}\n", "jobs.yaml:1 (job 1, a): cron: "},
		{"bad name", "- jobName: ../a\n  shardingTotalCount: 1\n  webhook: {url: http://h/x}\n", "jobs.yaml:1 (job 1, ../a): jobName: "},
		{"twice", "- jobName: a\n  shardingTotalCount: 1\n  webhook: {url: http://h/x}\n- jobName: a\n  shardingTotalCount: 1\n  webhook: {url: http://h/x}\n",
			"jobs.yaml:4 (job 2, a): jobName: \"a\" is also at jobs.yaml:1 (job 1, a)"},
		{"not yaml", "- jobName: [\n", "jobs.yaml: not YAML"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseJobsFile("jobs.yaml", []byte(tt.file))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestExposure(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tok, err := api.NewToken("ops", api.RoleAdmin, "0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		listen   string
		tokens   []api.Token
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:8080", nil, false, true},
		{"localhost:8080", nil, false, true},
		{"[::1]:8080", nil, false, true},
		{"127.0.0.2:8080", nil, false, true},
		{":8080", nil, false, false},
		{"0.0.0.0:8080", nil, false, false},
		{"10.0.0.7:8080", nil, false, false},
		{"0.0.0.0:8080", nil, true, true},
		{"0.0.0.0:8080", []api.Token{tok}, false, true},
	}
	for _, tt := range tests {
		err := checkExposure(tt.listen, tt.tokens, tt.insecure, log)
		if (err == nil) != tt.ok {
			t.Errorf("checkExposure(%q, %d tokens, insecure %v) = %v", tt.listen, len(tt.tokens), tt.insecure, err)
		}
	}
}

func TestJobChanges(t *testing.T) {
	entries, err := parseJobsFile("f", []byte("- jobName: a\n  cron: '@hourly'\n  shardingTotalCount: 2\n  webhook: {url: 'http://h/x', secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := entries[0].Config
	cur := &client.Job{JobName: "a", Cron: "@hourly", ShardingTotalCount: 2, JobType: "SIMPLE", MonitorExecution: true, Misfire: true,
		MaxTimeDiffSeconds: -1, ReconcileIntervalMinutes: 10, JobShardingStrategyType: "AVG_ALLOCATION",
		JobExecutorThreadPoolSizeProviderType: "CPU", JobErrorHandlerType: "LOG", Status: "OK", Version: 3,
		Webhook: client.Webhook{URL: "http://h/x", Method: "POST", TimeoutMs: 5000, ConnectTimeoutMs: 3000, SecretGracePeriodSeconds: 86400, HasSecret: true},
		Retry:   client.RetryPolicy{MaxAttempts: 3, InitialBackoffMs: 1000, MaxBackoffMs: 30000}}
	if ch, err := jobChanges(cur, want); err != nil || len(ch) != 0 {
		t.Fatalf("same job: changes %v, %v", ch, err)
	}
	cur.Cron, cur.Webhook.URL, cur.Webhook.HasSecret = "@daily", "http://h/y", false
	if ch, _ := jobChanges(cur, want); strings.Join(ch, " ") != "cron webhook.secret webhook.url" {
		t.Fatalf("changes %v", ch)
	}
}

func TestCLIFlagsAfterArguments(t *testing.T) {
	var out, errb bytes.Buffer
	k := newCLI("job trigger", "job trigger NAME", &out, &errb)
	param := k.fs.String("param", "", "")
	t.Setenv("EJ_SERVER", "127.0.0.1:9")
	t.Setenv("EJ_TOKEN", "")
	t.Setenv("EJ_API_TOKEN", "from-api-token-env")
	pos, err := k.parse([]string{"settle", "--param", "x y", "-o", "json"})
	if err != nil || len(pos) != 1 || pos[0] != "settle" || *param != "x y" || *k.output != "json" || *k.server != "127.0.0.1:9" {
		t.Fatalf("pos %v param %q output %q server %q: %v", pos, *param, *k.output, *k.server, err)
	}
	if *k.token != "from-api-token-env" {
		t.Fatalf("token %q", *k.token)
	}
	if items, err := parseItems("0, 2"); err != nil || len(items) != 2 || items[1] != 2 {
		t.Fatalf("items %v %v", items, err)
	}
	if _, err := parseItems("0,x"); err == nil {
		t.Fatal("0,x parsed")
	}
}
