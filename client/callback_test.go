package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/client"
	"github.com/ejserver/ejserver/internal/testutil/callbacktest"
)

// The callbacks go to the URL the body carried (not the client's base URL), with the callback token instead of
// the API token, and carry the lease view back.
func TestHeartbeatAndComplete(t *testing.T) {
	t.Parallel()
	peer := callbacktest.New(t)
	acc := peer.Accept("settle", 2, 60, 24*time.Hour)
	// the base URL names no server: a callback must not go there
	c := client.New("http://127.0.0.1:1", client.WithToken("ejt_api-token"))
	ctx := context.Background()

	peer.Advance(10 * time.Second)
	lease, err := c.Heartbeat(ctx, acc.CallbackURL, acc.Token, client.HeartbeatRequest{Progress: client.Int(40), Message: "40% of rows"})
	if err != nil {
		t.Fatal(err)
	}
	start := callbacktest.Start
	if lease.ExecutionID != acc.ID || lease.JobName != "settle" || lease.ShardingItem != 2 || lease.Attempt != 1 || !lease.Running() ||
		lease.Progress == nil || *lease.Progress != 40 || lease.Message != "40% of rows" || !lease.StartedAt.Equal(start) ||
		!lease.HeartbeatAt.Equal(start.Add(10*time.Second)) || !lease.LeaseExpiresAt.Equal(start.Add(70*time.Second)) ||
		!lease.MaxDurationAt.Equal(start.Add(24*time.Hour)) || !lease.EndedAt.IsZero() {
		t.Fatalf("heartbeat's lease view: %+v", lease)
	}
	// an empty heartbeat only renews the lease
	if lease, err = c.Heartbeat(ctx, acc.CallbackURL, acc.Token, client.HeartbeatRequest{}); err != nil || *lease.Progress != 40 {
		t.Fatalf("empty heartbeat: %+v %v", lease, err)
	}

	peer.Advance(50 * time.Second) // within the lease
	done := client.CompleteRequest{Status: "success", Message: "settled", Output: "1204 rows\n"}
	if lease, err = c.Complete(ctx, acc.CallbackURL, acc.Token, done); err != nil || lease.State != client.StateSucceeded ||
		lease.Running() || !lease.EndedAt.Equal(start.Add(time.Minute)) {
		t.Fatalf("complete: %+v %v", lease, err)
	}
	if e, _ := peer.Get(acc.ID); !e.Success || e.Output != "1204 rows\n" || e.Message != "settled" {
		t.Fatalf("recorded completion: %+v", e)
	}
	// the same completion again (its answer was lost, say) is 200; another is a 409 that says why
	if lease, err = c.Complete(ctx, acc.CallbackURL, acc.Token, done); err != nil || lease.State != client.StateSucceeded {
		t.Fatalf("the same completion again: %+v %v", lease, err)
	}
	_, err = c.Complete(ctx, acc.CallbackURL, acc.Token, client.CompleteRequest{Status: "failure"})
	if !client.IsConflict(err) || client.ProblemType(err) != client.ProblemAlreadyCompleted {
		t.Fatalf("another completion: %v (%s)", err, client.ProblemType(err))
	}

	reqs := peer.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	for _, r := range reqs {
		if r.Method != http.MethodPost || r.Authorization != "Bearer "+acc.Token || strings.Contains(r.Authorization, "ejt_") {
			t.Fatalf("callback %s %s with Authorization %q", r.Method, r.Path, r.Authorization)
		}
	}
	if reqs[0].Path != "/api/v1/executions/"+acc.ID+"/heartbeat" || reqs[2].Path != "/api/v1/executions/"+acc.ID+"/complete" {
		t.Fatalf("paths %s, %s", reqs[0].Path, reqs[2].Path)
	}
	var hb, cb map[string]any
	json.Unmarshal([]byte(reqs[0].Body), &hb)
	json.Unmarshal([]byte(reqs[2].Body), &cb)
	if len(hb) != 2 || hb["progress"] != 40.0 || hb["message"] != "40% of rows" || reqs[1].Body != "{}" ||
		len(cb) != 3 || cb["status"] != "success" || cb["output"] != "1204 rows\n" {
		t.Fatalf("bodies %s, %s, %s", reqs[0].Body, reqs[1].Body, reqs[2].Body)
	}
}

func TestCallbackRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := client.New("http://127.0.0.1:1", client.WithToken("ejt_api-token"))
	heartbeat := func(url, token string) error {
		_, err := c.Heartbeat(ctx, url, token, client.HeartbeatRequest{Message: "still going"})
		return err
	}
	complete := func(url, token string) error {
		_, err := c.Complete(ctx, url, token, client.CompleteRequest{Status: "failure"})
		return err
	}
	tests := []struct {
		name string
		// setup returns the callback to send
		setup       func(p *callbacktest.Server) (url, token string)
		send        func(url, token string) error
		status      int
		problemType string
	}{
		{"lease ran out", func(p *callbacktest.Server) (string, string) {
			a := p.Accept("settle", 0, 2, time.Hour)
			p.Advance(2 * time.Second)
			return a.CallbackURL, a.Token
		}, heartbeat, 409, client.ProblemLeaseExpired},
		{"a completion after the lease ran out", func(p *callbacktest.Server) (string, string) {
			a := p.Accept("settle", 0, 2, time.Hour)
			p.Advance(time.Minute)
			return a.CallbackURL, a.Token
		}, complete, 409, client.ProblemLeaseExpired},
		{"an earlier attempt's token", func(p *callbacktest.Server) (string, string) {
			a := p.Accept("settle", 0, 2, time.Hour)
			p.Advance(3 * time.Second)
			p.Retry(a.ID)
			return a.CallbackURL, a.Token
		}, complete, 409, client.ProblemStaleAttempt},
		{"the job was deleted", func(p *callbacktest.Server) (string, string) {
			a := p.Accept("settle", 0, 60, time.Hour)
			p.Cancel(a.ID)
			return a.CallbackURL, a.Token
		}, heartbeat, 409, client.ProblemExecutionCancelled},
		{"another execution's token", func(p *callbacktest.Server) (string, string) {
			a, b := p.Accept("settle", 0, 60, time.Hour), p.Accept("settle", 1, 60, time.Hour)
			return a.CallbackURL, b.Token
		}, heartbeat, 401, client.ProblemCallbackToken},
		{"a forged token", func(p *callbacktest.Server) (string, string) {
			a := p.Accept("settle", 0, 60, time.Hour)
			return a.CallbackURL, "ejcb1.1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		}, complete, 401, client.ProblemCallbackToken},
		{"no such execution", func(p *callbacktest.Server) (string, string) {
			return p.URL + "/api/v1/executions/gone", p.Token("gone", 1)
		}, heartbeat, 404, "not-found"},
		{"a bad body", func(p *callbacktest.Server) (string, string) {
			a := p.Accept("settle", 0, 60, time.Hour)
			return a.CallbackURL, a.Token
		}, func(url, token string) error {
			_, err := c.Heartbeat(ctx, url, token, client.HeartbeatRequest{Progress: client.Int(101)})
			return err
		}, 400, client.ProblemInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := callbacktest.New(t)
			err := tt.send(tt.setup(p))
			var e *client.Error
			if !errors.As(err, &e) || e.Status != tt.status || client.ProblemType(err) != tt.problemType || e.Detail == "" {
				t.Fatalf("got %v (type %q), want %d %s", err, client.ProblemType(err), tt.status, tt.problemType)
			}
			if tt.problemType == client.ProblemInvalid && e.Field != "progress" {
				t.Fatalf("field %q", e.Field)
			}
		})
	}
}

// A callback that can't be right is refused before anything is sent; in particular an empty token never
// sends the client's API token to the callback URL's host.
func TestCallbackArgumentsCheckedBeforeSending(t *testing.T) {
	t.Parallel()
	p := callbacktest.New(t)
	a := p.Accept("settle", 0, 60, time.Hour)
	c := client.New(p.URL, client.WithToken("ejt_api-token"))
	ctx := context.Background()
	for _, tt := range []struct{ name, url, token string }{
		{"no token", a.CallbackURL, ""},
		{"a relative URL", "/api/v1/executions/" + a.ID, a.Token},
		{"no URL", "", a.Token},
		{"another scheme", "ftp://" + strings.TrimPrefix(a.CallbackURL, "http://"), a.Token},
		{"not a URL", "http://%zz", a.Token},
	} {
		_, err := c.Heartbeat(ctx, tt.url, tt.token, client.HeartbeatRequest{})
		_, err2 := c.Complete(ctx, tt.url, tt.token, client.CompleteRequest{Status: "success"})
		if !errors.Is(err, client.ErrInvalidCallback) || !errors.Is(err2, client.ErrInvalidCallback) || client.StatusOf(err) != 0 {
			t.Errorf("%s: %v, %v", tt.name, err, err2)
		}
	}
	if n := len(p.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestLeaseViewDecodesTheContractsExample(t *testing.T) {
	t.Parallel()
	// docs/long-running.md's answer, with times for its "..."
	const answer = `{"executionId":"0193","jobName":"settle","shardingItem":2,"attempt":1,"state":"RUNNING",
 "progress":40,"message":"40% of rows","startedAt":"2026-11-24T10:00:00Z","acceptedAt":"2026-11-24T10:00:01Z","heartbeatAt":"2026-11-24T10:05:00Z",
 "leaseExpiresAt":"2026-11-24T10:06:00Z","maxDurationAt":"2026-11-25T10:00:00Z","endedAt":null}`
	var l client.LeaseView
	if err := json.Unmarshal([]byte(answer), &l); err != nil {
		t.Fatal(err)
	}
	if l.ExecutionID != "0193" || !l.Running() || *l.Progress != 40 || !l.EndedAt.IsZero() ||
		l.LeaseExpiresAt.Sub(l.HeartbeatAt) != time.Minute || l.MaxDurationAt.Sub(l.StartedAt) != 24*time.Hour || l.AcceptedAt.IsZero() {
		t.Fatalf("%+v", l)
	}
	// and it writes back without the zero times
	l.HeartbeatAt = time.Time{}
	b, _ := json.Marshal(l)
	if strings.Contains(string(b), "heartbeatAt") || strings.Contains(string(b), "endedAt") {
		t.Fatalf("zero times written: %s", b)
	}
}

func TestExecutionAsyncFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, json string
		running    bool
		check      func(e client.Execution) bool
	}{
		{"an old record", `{"id":"a","startedAt":"2026-11-24T10:00:00Z","completedAt":"2026-11-24T10:00:01Z","success":true}`, false,
			func(e client.Execution) bool {
				return e.State == "" && !e.Async && e.Progress == nil && e.LeaseExpiresAt.IsZero()
			}},
		{"a synchronous item in flight", `{"id":"b","startedAt":"2026-11-24T10:00:00Z"}`, true, nil},
		{"an accepted item", `{"id":"c","startedAt":"2026-11-24T10:00:00Z","async":true,"state":"RUNNING","progress":0,
			"message":"queued","heartbeatAt":"2026-11-24T10:00:30Z","leaseExpiresAt":"2026-11-24T10:01:30Z"}`, true,
			func(e client.Execution) bool {
				return e.Async && e.Progress != nil && *e.Progress == 0 && e.Message == "queued" && e.LeaseExpiresAt.Sub(e.HeartbeatAt) == time.Minute
			}},
		{"being retried", `{"id":"d","startedAt":"2026-11-24T10:00:00Z","async":true,"state":"RETRYING"}`, true, nil},
		{"expired", `{"id":"e","startedAt":"2026-11-24T10:00:00Z","completedAt":"2026-11-24T10:01:00Z","async":true,"state":"EXPIRED"}`, false, nil},
		{"succeeded", `{"id":"f","startedAt":"2026-11-24T10:00:00Z","completedAt":"2026-11-24T10:01:00Z","success":true,"async":true,
			"state":"SUCCEEDED","output":"done\n"}`, false, func(e client.Execution) bool { return e.Output == "done\n" }},
		{"an ended state without completedAt", `{"id":"g","startedAt":"2026-11-24T10:00:00Z","async":true,"state":"CANCELLED"}`, false, nil},
	}
	for _, tt := range tests {
		var e client.Execution
		if err := json.Unmarshal([]byte(tt.json), &e); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if e.Running() != tt.running || (tt.check != nil && !tt.check(e)) {
			t.Errorf("%s: Running %v, %+v", tt.name, e.Running(), e)
		}
	}
}
