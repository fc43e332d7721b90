package webhook

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// nodeExample is the Node receiver of examples/webhooks/node, which verifies with the official
// "standardwebhooks" npm package.
var nodeExample = filepath.Join("..", "..", "examples", "webhooks", "node")

// startNodeReceiver runs the Node example with secret (and env, "KEY=value" each) and returns its base URL.
// It fails (never skips) when node or the example's modules are missing.
func startNodeReceiver(t *testing.T, secret string, env ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: `make test` installs it and the example's modules (npm ci in %s)", nodeExample)
	}
	if _, err := os.Stat(filepath.Join(nodeExample, "node_modules", "standardwebhooks", "package.json")); err != nil {
		t.Fatalf("the Node example's modules are missing: `make test` installs them (or run `npm ci` in %s)", nodeExample)
	}
	cmd := exec.Command(node, "server.js")
	cmd.Dir = nodeExample
	cmd.Env = append(append(os.Environ(), "WEBHOOK_SECRET="+secret, "HOST=127.0.0.1", "PORT=0"), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	drained := make(chan struct{})
	var lines []string
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if len(lines) == 0 {
				first <- sc.Text()
			}
			lines = append(lines, sc.Text())
		}
		close(first)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the process this test started, by its handle
		<-drained
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("node receiver output:\n%s", strings.Join(lines, "\n"))
		}
	})
	guard := SystemClock().NewTimer(20 * time.Second)
	defer guard.Stop()
	select {
	case line, ok := <-first:
		base, found := strings.CutPrefix(line, "listening on ")
		if !ok || !found {
			t.Fatalf("the node receiver did not start: first line %q", line)
		}
		return base
	case <-guard.C():
		t.Fatal("the node receiver did not say it was listening within 20s")
	}
	return ""
}

// TestNodeReceiverVerifiesTheSender: the official Standard Webhooks library (JavaScript) verifies what the
// Sender signs, including the old secret's signature during a rotation, and rejects a wrong secret.
func TestNodeReceiverVerifiesTheSender(t *testing.T) {
	nodeSecret := GenerateSecret()
	base := startNodeReceiver(t, nodeSecret)
	s := New(Config{}) // the real clock: the library checks webhook-timestamp against its own
	t.Cleanup(s.Close)

	deliver := func(id string, w ejserver.Webhook) Result {
		d := testDelivery(base + "/hooks/settle")
		d.Payload.ExecutionID = id
		d.Payload.ShardingParameter = "广州" // non-ASCII in body and shardingContext header
		d.Payload.ScheduledAt = time.Now()
		d.Webhook.Secret, d.Webhook.PreviousSecret, d.Webhook.PreviousSecretExpiresAt = w.Secret, w.PreviousSecret, w.PreviousSecretExpiresAt
		return s.Deliver(context.Background(), d)
	}
	if res := deliver("exec-current", ejserver.Webhook{Secret: nodeSecret}); !res.Success {
		t.Fatalf("signed with the receiver's secret: %+v", res)
	}
	rotating := ejserver.Webhook{Secret: GenerateSecret(), PreviousSecret: nodeSecret, PreviousSecretExpiresAt: time.Now().Add(time.Hour)}
	if res := deliver("exec-rotating", rotating); !res.Success {
		t.Fatalf("during a rotation (the receiver still has the old secret): %+v", res)
	}
	if res := deliver("exec-wrong", ejserver.Webhook{Secret: GenerateSecret()}); res.Success || res.StatusCode != 401 || res.Attempts != 1 {
		t.Fatalf("signed with another secret: %+v", res)
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats struct {
		Verified int      `json:"verified"`
		Failed   int      `json:"failed"`
		IDs      []string `json:"ids"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	if stats.Verified != 2 || stats.Failed != 1 ||
		!slices.Equal(stats.IDs, []string{"exec-current", "exec-rotating"}) {
		t.Fatalf("node receiver stats = %+v", stats)
	}
}

// TestNodeReceiverAsync: with ASYNC_MS the Node example answers the Sender's request 202 Accepted, sends
// progress heartbeats and then the completion to the delivery's callbackUrl with its callbackToken
// (docs/long-running.md), and sends the completion again after a 503. The callback API is a fake here; the
// real one is tested where it is served.
func TestNodeReceiverAsync(t *testing.T) {
	var mu sync.Mutex
	var calls []string // "op Authorization body status"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		op := path.Base(r.URL.Path)
		mu.Lock()
		defer mu.Unlock()
		completes := 0
		for _, c := range calls {
			if strings.HasPrefix(c, "complete ") {
				completes++
			}
		}
		if r.URL.Path != "/api/v1/executions/exec-async/"+op || r.Header.Get("Authorization") != "Bearer ejcb1.1.test" {
			calls = append(calls, op+" refused "+r.URL.Path+" "+r.Header.Get("Authorization"))
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"https://ejserver.dev/problems/callback-token","status":401}`)
			return
		}
		if op == "complete" && completes == 0 {
			calls = append(calls, op+" "+string(body)+" 503")
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		calls = append(calls, op+" "+string(body)+" 200")
		state := "RUNNING"
		if op == "complete" {
			state = "SUCCEEDED"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"executionId":"exec-async","state":"`+state+`"}`)
	}))
	t.Cleanup(api.Close)
	recorded := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}

	nodeSecret := GenerateSecret()
	base := startNodeReceiver(t, nodeSecret, "ASYNC_MS=1000")
	s := New(Config{})
	t.Cleanup(s.Close)
	d := testDelivery(base + "/hooks/settle")
	d.Payload.ExecutionID = "exec-async"
	d.Payload.ScheduledAt = time.Now()
	d.Payload.CallbackURL = api.URL + "/api/v1/executions/exec-async"
	d.Payload.CallbackToken = "ejcb1.1.test"
	d.Payload.LeaseSeconds = 2
	d.Webhook.Secret = nodeSecret
	if res := s.Deliver(context.Background(), d); !res.Success || res.StatusCode != http.StatusAccepted || res.Attempts != 1 {
		t.Fatalf("delivery: %+v", res)
	}
	waitFor(t, "the completion", func() bool {
		got := recorded()
		return len(got) > 0 && strings.HasSuffix(got[len(got)-1], " 200") && strings.HasPrefix(got[len(got)-1], "complete ")
	})
	got := recorded()
	var heartbeats, completes int
	for _, c := range got {
		switch {
		case strings.HasPrefix(c, "heartbeat {\"progress\":") && strings.HasSuffix(c, "% done\"} 200"):
			heartbeats++
		case c == `complete {"status":"success","message":"done in 1000 ms","hasMore":false} 503`,
			c == `complete {"status":"success","message":"done in 1000 ms","hasMore":false} 200`:
			completes++
		default:
			t.Fatalf("unexpected callback %q in %q", c, got)
		}
	}
	// heartbeats come every fifth of ASYNC_MS; how many fit before the completion depends on the machine's
	// load, so only that there was one is checked
	if heartbeats < 1 || completes != 2 {
		t.Fatalf("%d heartbeats, %d completions: %q", heartbeats, completes, got)
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats struct {
		Accepted, Heartbeats, Completed, Stopped, CallbackErrors int
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	if stats.Accepted != 1 || stats.Completed != 1 || stats.Heartbeats != heartbeats || stats.Stopped != 0 || stats.CallbackErrors != 0 {
		t.Fatalf("node receiver stats = %+v", stats)
	}
}
