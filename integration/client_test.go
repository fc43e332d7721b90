package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ejserver/ejserver/client"
)

// strictInto decodes a real answer into a client type, refusing fields the type doesn't have: the client's
// types lose nothing the server sends.
func strictInto(t *testing.T, raw []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode into %T: %v\n%s", v, err, raw)
	}
}

// The Go client against a real peer: every method reaches its endpoint, and every answer fits the
// client's types exactly.
func TestGoClientAgainstARealServer(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--api-tokens", tokensFile(t)))
	p := c.peers[0]
	ctx := context.Background()
	cl := client.New("http://"+p.Addr, client.WithToken(adminToken), client.WithRetries(2))
	viewer := client.New("http://"+p.Addr, client.WithToken(viewerToken))
	get := func(path string, v any) {
		t.Helper()
		strictInto(t, mustDo(t, p, "GET", path, nil, http.StatusOK, nil, "Authorization", "Bearer "+adminToken), v)
	}

	res, err := cl.CreateJob(ctx, client.JobSpec{JobName: "cl", Cron: "0 0 3 * * ?", ShardingTotalCount: 2, Misfire: client.Bool(false),
		Webhook: client.WebhookSpec{URL: recv.URL, GenerateSecret: true}, Retry: &client.RetryPolicy{MaxAttempts: 5}})
	if err != nil || res.GeneratedSecret == "" || !res.Webhook.HasSecret || res.Misfire || res.Retry.MaxAttempts != 5 || res.Retry.MaxBackoffMs != 30000 {
		t.Fatalf("create: %+v %v", res, err)
	}
	if _, err := viewer.CreateJob(ctx, client.JobSpec{JobName: "v", ShardingTotalCount: 1, Webhook: client.WebhookSpec{URL: recv.URL}}); client.StatusOf(err) != 403 {
		t.Fatalf("viewer create: %v", err)
	}
	_, err = cl.CreateJob(ctx, client.JobSpec{JobName: "bad", Cron: "0 0 25 * * ?", ShardingTotalCount: 1, Webhook: client.WebhookSpec{URL: recv.URL}})
	var perr *client.Error
	if !asError(err, &perr) || perr.Status != 400 || perr.Field != "cron" || len(perr.Errors) == 0 {
		t.Fatalf("bad create: %#v", err)
	}
	var job client.Job
	get("/api/v1/jobs/cl", &job)
	got, err := cl.GetJob(ctx, "cl")
	if err != nil || got.ETag() != `"0"` {
		t.Fatalf("get: %+v %v", got, err)
	}
	spec := got.Spec()
	spec.JobParameter = "p2"
	rep, err := cl.ReplaceJob(ctx, "cl", spec, got.ETag())
	if err != nil || rep.JobParameter != "p2" || !rep.Webhook.HasSecret || rep.Misfire || rep.Retry.MaxAttempts != 5 {
		t.Fatalf("replace from Spec(): %+v %v", rep, err)
	}
	if _, err := cl.ReplaceJob(ctx, "cl", spec, got.ETag()); !client.IsPreconditionFailed(err) {
		t.Fatalf("stale replace: %v", err)
	}
	if !eventually(10*time.Second, func() bool {
		l, err := cl.ListJobs(ctx, client.ListJobsOptions{})
		return err == nil && l.Total == 1
	}) {
		t.Fatal("the job never showed in the list")
	}
	var jl client.JobList
	get("/api/v1/jobs", &jl)
	n := 0
	for j, err := range viewer.AllJobs(ctx, client.ListJobsOptions{Limit: 1}) {
		if err != nil || j.JobName != "cl" {
			t.Fatalf("AllJobs: %v %v", j.JobName, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("AllJobs gave %d jobs", n)
	}

	tr, err := cl.TriggerJob(ctx, "cl", client.TriggerRequest{JobParameter: client.String("now"), Items: []int{1}})
	if err != nil || len(tr.Instances) != 1 {
		t.Fatalf("trigger: %+v %v", tr, err)
	}
	// the triggered run ends before the job is disabled below: disabling a job cancels what it has in flight
	var execs *client.ExecutionList
	if !eventually(20*time.Second, func() bool {
		execs, err = cl.Executions(ctx, client.ExecutionFilter{Job: "cl", Source: "MANUAL", Item: new(int)})
		e1, err1 := cl.JobExecutions(ctx, "cl", client.ExecutionFilter{Success: client.Bool(true)})
		return err == nil && err1 == nil && len(e1.Items) == 1
	}) {
		t.Fatalf("executions: %v", err)
	}
	if _, err := cl.DisableJob(ctx, "cl"); err != nil {
		t.Fatal(err)
	}
	if j, err := cl.EnableJob(ctx, "cl"); err != nil || j.Disabled {
		t.Fatalf("enable: %+v %v", j, err)
	}
	if err := cl.DisableItem(ctx, "cl", 0); err != nil {
		t.Fatal(err)
	}
	if err := cl.EnableItem(ctx, "cl", 0); err != nil {
		t.Fatal(err)
	}
	if err := cl.DisableJobServer(ctx, "cl", p.Config.ServerIP); err != nil {
		t.Fatal(err)
	}
	if err := cl.EnableJobServer(ctx, "cl", p.Config.ServerIP); err != nil {
		t.Fatal(err)
	}
	var items client.ItemList
	get("/api/v1/jobs/cl/sharding", &items)
	if il, err := cl.Sharding(ctx, "cl"); err != nil || len(il.Items) != 2 {
		t.Fatalf("sharding: %+v %v", il, err)
	}
	if d, err := cl.Dump(ctx, "cl"); err != nil || !bytes.Contains([]byte(d), []byte("/cl/config |")) {
		t.Fatalf("dump: %q %v", d, err)
	}

	if len(execs.Items) != 0 {
		t.Fatalf("item filter: item 0 did not run, got %+v", execs.Items)
	}
	var el client.ExecutionList
	get("/api/v1/jobs/cl/executions", &el)
	if len(el.Items) != 1 {
		t.Fatalf("executions %+v", el)
	}
	var one client.Execution
	get("/api/v1/executions/"+el.Items[0].ID, &one)
	if e, err := cl.Execution(ctx, el.Items[0].ID); err != nil || e.ShardingItem != 1 || !e.Success {
		t.Fatalf("execution: %+v %v", e, err)
	}
	var traces client.TraceList
	get("/api/v1/jobs/cl/traces", &traces)
	if tl, err := cl.Traces(ctx, "cl", "", 10); err != nil || len(tl.Items) == 0 {
		t.Fatalf("traces: %+v %v", tl, err)
	}

	var sl client.ServerList
	get("/api/v1/servers", &sl)
	if s, err := cl.Servers(ctx, client.PageOptions{Limit: 1}); err != nil || len(s.Items) != 1 {
		t.Fatalf("servers: %+v %v", s, err)
	}
	var ch client.ServerChange
	strictInto(t, mustDo(t, p, "POST", "/api/v1/servers/"+p.Config.ServerIP+"/disable", nil, http.StatusOK, nil, "Authorization", "Bearer "+adminToken), &ch)
	if sc, err := cl.EnableServer(ctx, p.Config.ServerIP); err != nil || sc.Jobs != 1 || sc.Disabled {
		t.Fatalf("enable server: %+v %v", sc, err)
	}
	if _, err := cl.DisableServer(ctx, "nope"); client.StatusOf(err) != 400 {
		t.Fatalf("disable a bad ip: %v", err)
	}
	if _, err := cl.EnableServer(ctx, p.Config.ServerIP); err != nil {
		t.Fatal(err)
	}
	var il client.InstanceList
	get("/api/v1/instances", &il)
	if in, err := cl.Instances(ctx, client.PageOptions{}); err != nil || len(in.Items) != 1 || !in.Items[0].Self {
		t.Fatalf("instances: %+v %v", in, err)
	}
	var cp client.CronPreview
	get("/api/v1/cron/next?cron=@hourly&count=2", &cp)
	if pv, err := cl.CronNext(ctx, client.CronQuery{Cron: "0 15 10 L * ?", TimeZone: "Asia/Shanghai", From: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), Count: 1}); err != nil ||
		len(pv.Next) != 1 || pv.Next[0].Format(time.RFC3339) != "2026-11-30T10:15:00+08:00" {
		t.Fatalf("cron: %+v %v", pv, err)
	}
	var caller client.Caller
	get("/api/v1/auth/whoami", &caller)
	if who, err := viewer.WhoAmI(ctx); err != nil || who.Name != "grafana" || who.Role != "viewer" || who.CanWrite {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	if err := cl.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	var hr client.HealthReport
	strictInto(t, mustDo(t, p, "GET", "/readyz", nil, http.StatusOK, nil), &hr)
	if r, err := cl.Ready(ctx); err != nil || !r.Ready {
		t.Fatalf("ready: %+v %v", r, err)
	}
	if err := cl.DeleteJob(ctx, "cl"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetJob(ctx, "cl"); !client.IsNotFound(err) {
		t.Fatalf("get a deleted job: %v", err)
	}
}

func asError(err error, target **client.Error) bool {
	e, ok := err.(*client.Error)
	if ok {
		*target = e
	}
	return ok
}
