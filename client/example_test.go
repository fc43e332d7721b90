package client_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ejserver/ejserver/client"
)

// fakeEjserver answers like ejserver does, for the examples to run offline.
func fakeEjserver() *httptest.Server {
	version := 1
	job := func() map[string]any {
		return map[string]any{"jobName": "settle", "cron": "0 0/5 * * * ?", "shardingTotalCount": 4, "version": version,
			"status": "OK", "instanceCount": 2, "misfire": true, "monitorExecution": true,
			"webhook": map[string]any{"url": "https://receiver.example.com/hook", "method": "POST", "hasSecret": true}}
	}
	problem := func(w http.ResponseWriter, status int, typ, detail, field string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		p := map[string]any{"type": "https://ejserver.dev/problems/" + typ, "title": http.StatusText(status), "status": status, "detail": detail}
		if field != "" {
			p["field"] = field
			p["errors"] = []map[string]string{{"field": field, "message": strings.TrimPrefix(detail, field+": ")}}
		}
		json.NewEncoder(w).Encode(p)
	}
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	completed := false
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/executions/"); ok && r.Method == "POST" {
			id, verb, _ := strings.Cut(rest, "/")
			// a callback: its token, never the API token
			if r.Header.Get("Authorization") != "Bearer ejcb1.1.example-mac" {
				problem(w, 401, "callback-token", "not this execution's callback token", "")
				return
			}
			if completed {
				problem(w, 409, "already-completed", "the execution ended SUCCEEDED", "")
				return
			}
			state := "RUNNING"
			if verb == "complete" {
				completed, state = true, "SUCCEEDED"
			}
			reply(w, 200, map[string]any{"executionId": id, "jobName": "settle", "shardingItem": 2, "attempt": 1,
				"state": state, "progress": 40, "startedAt": "2026-11-24T10:00:00Z", "leaseExpiresAt": "2026-11-24T10:01:10Z"})
			return
		}
		if r.Header.Get("Authorization") != "Bearer example-admin-token" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ejserver"`)
			problem(w, 401, "unauthorized", "the bearer token is not valid", "")
			return
		}
		switch r.Method + " " + r.URL.Path {
		case "POST /api/v1/jobs":
			var spec map[string]any
			body, _ := io.ReadAll(r.Body)
			json.Unmarshal(body, &spec)
			if spec["cron"] == "0 0 25 * * ?" {
				problem(w, 400, "invalid", `cron: hour "25": value out of range 0-23`, "cron")
				return
			}
			out := job()
			out["generatedSecret"] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
			reply(w, 201, out)
		case "GET /api/v1/jobs/settle":
			reply(w, 200, job())
		case "PUT /api/v1/jobs/settle":
			if m := r.Header.Get("If-Match"); m != "" && m != fmt.Sprintf(`"%d"`, version) {
				problem(w, 412, "precondition_failed", "job \"settle\" was changed by someone else; read it again", "")
				return
			}
			version++
			reply(w, 200, job())
		case "GET /api/v1/jobs":
			reply(w, 200, map[string]any{"items": []any{job()}, "total": 1})
		case "GET /api/v1/cron/next":
			reply(w, 200, map[string]any{"cron": r.URL.Query().Get("cron"), "timeZone": r.URL.Query().Get("timeZone"),
				"next": []string{"2026-11-23T10:15:00+08:00", "2026-11-30T10:15:00+08:00"}})
		default:
			problem(w, 404, "not_found", "no such job", "")
		}
	}))
}

func Example() {
	srv := fakeEjserver()
	defer srv.Close()
	ctx := context.Background()

	c := client.New(srv.URL, client.WithToken("example-admin-token"))
	res, err := c.CreateJob(ctx, client.JobSpec{
		JobName:            "settle",
		Cron:               "0 0/5 * * * ?",
		ShardingTotalCount: 4,
		Webhook:            client.WebhookSpec{URL: "https://receiver.example.com/hook", GenerateSecret: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created", res.JobName, "version", res.ETag(), "secret", res.GeneratedSecret[:6]+"...")
	// Output: created settle version "1" secret whsec_...
}

// A rejected request's *client.Error names the offending field.
func ExampleError() {
	srv := fakeEjserver()
	defer srv.Close()
	c := client.New(srv.URL, client.WithToken("example-admin-token"))

	_, err := c.CreateJob(context.Background(), client.JobSpec{JobName: "settle", Cron: "0 0 25 * * ?", ShardingTotalCount: 1,
		Webhook: client.WebhookSpec{URL: "https://receiver.example.com/hook"}})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Field, e.Errors[0].Message)
	}
	// Output: 400 cron hour "25": value out of range 0-23
}

// Read, change, and replace with If-Match, so that a concurrent change is not overwritten.
func ExampleClient_ReplaceJob() {
	srv := fakeEjserver()
	defer srv.Close()
	ctx := context.Background()
	c := client.New(srv.URL, client.WithToken("example-admin-token"))

	job, err := c.GetJob(ctx, "settle")
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := job.Spec() // no secret: the stored one is kept
	spec.JobParameter = "batch=1000"
	if _, err := c.ReplaceJob(ctx, "settle", spec, job.ETag()); err != nil {
		fmt.Println(err)
		return
	}
	// a second replace with the old ETag fails: someone (we) changed the job since
	_, err = c.ReplaceJob(ctx, "settle", spec, job.ETag())
	fmt.Println(client.IsPreconditionFailed(err))
	// Output: true
}

func ExampleClient_CronNext() {
	srv := fakeEjserver()
	defer srv.Close()
	c := client.New(srv.URL, client.WithToken("example-admin-token"))

	p, err := c.CronNext(context.Background(), client.CronQuery{Cron: "0 15 10 ? * MON", TimeZone: "Asia/Shanghai", Count: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range p.Next {
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2026-11-23T10:15:00+08:00
	// 2026-11-30T10:15:00+08:00
}

func ExampleClient_AllJobs() {
	srv := fakeEjserver()
	defer srv.Close()
	c := client.New(srv.URL, client.WithToken("example-admin-token"))

	for job, err := range c.AllJobs(context.Background(), client.ListJobsOptions{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(job.JobName, job.Status, job.Webhook.HasSecret)
	}
	// Output: settle OK true
}

func ExampleIsNotFound() {
	srv := fakeEjserver()
	defer srv.Close()
	c := client.New(srv.URL, client.WithToken("example-admin-token"))

	_, err := c.GetJob(context.Background(), "nope")
	fmt.Println(client.IsNotFound(err))
	// Output: true
}

// A receiver that answered an item 202 Accepted reports progress, then the end, with the callbackUrl and
// callbackToken of the item's body: the token, not an API token, authorises them.
func ExampleClient_Heartbeat() {
	srv := fakeEjserver()
	defer srv.Close()
	ctx := context.Background()
	callbackURL := srv.URL + "/api/v1/executions/0193e0a1-7c1a-7000-8000-000000000001" // from the body
	token := "ejcb1.1.example-mac"
	c := client.New(srv.URL) // the callback URL says which peer; any peer accepts it

	lease, err := c.Heartbeat(ctx, callbackURL, token, client.HeartbeatRequest{Progress: client.Int(40), Message: "40% of rows"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lease.State, *lease.Progress, lease.LeaseExpiresAt.Format(time.TimeOnly))

	_, err = c.Complete(ctx, callbackURL, token, client.CompleteRequest{Status: "success", Output: "1204 rows settled"})
	fmt.Println(err)

	// too late: the item has ended
	_, err = c.Heartbeat(ctx, callbackURL, token, client.HeartbeatRequest{})
	fmt.Println(client.ProblemType(err) == client.ProblemAlreadyCompleted)
	// Output:
	// RUNNING 40 10:01:10
	// <nil>
	// true
}

// An ejserver serving HTTPS (--tls-cert): the client verifies its certificate with the CA that signed it, and
// can present a client certificate (TLSFiles.CertFile and KeyFile) to a server with --tls-client-ca.
func ExampleTLSConfig() {
	plain := fakeEjserver()
	plain.Close()
	srv := httptest.NewUnstartedServer(plain.Config.Handler)
	srv.StartTLS()
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "ejca")
	defer os.RemoveAll(dir)
	caFile := filepath.Join(dir, "ca.pem") // here the test server's own certificate stands for the CA
	_ = os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)

	tc, err := client.TLSConfig(client.TLSFiles{CAFile: caFile})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := client.New(srv.URL, client.WithTLSConfig(tc), client.WithToken("example-admin-token"))
	job, err := c.GetJob(context.Background(), "settle")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.JobName, "over", strings.SplitN(srv.URL, ":", 2)[0])

	_, err = client.New(srv.URL).GetJob(context.Background(), "settle") // the system's roots do not know it
	fmt.Println(err != nil)
	// Output:
	// settle over https
	// true
}
