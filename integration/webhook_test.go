package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// startNodeReceiver runs examples/webhooks/node (the official standardwebhooks npm package) with secret.
func startNodeReceiver(t *testing.T, secret string) string {
	t.Helper()
	root, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples", "webhooks", "node")
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: run `make test`, which installs what the tests need")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil {
		t.Fatalf("the Node example's packages are missing (%v): run `make test`, which runs npm ci there", err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "server.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, fmt.Sprintf("PORT=%d", port), "HOST=127.0.0.1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("node receiver output:\n%s", out.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			return base
		}
		select {
		case <-done:
			t.Fatalf("node receiver exited:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("node receiver did not start")
		}
	}
}

type nodeStats struct {
	Verified int      `json:"verified"`
	Failed   int      `json:"failed"`
	IDs      []string `json:"ids"`
	Errors   []string `json:"errors"`
}

func readNodeStats(t *testing.T, base string) nodeStats {
	t.Helper()
	resp, err := http.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s nodeStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The official Standard Webhooks library (Node) verifies what a real ejserver sends, also during a secret
// rotation, when the receiver still knows only the old secret.
func TestNodeStandardWebhooksVerifiesRealRequests(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	p := c.peers[0]
	var created struct {
		GeneratedSecret string `json:"generatedSecret"`
	}
	spec := job("signed", "", 2, "http://127.0.0.1:1/placeholder")
	spec["webhook"] = map[string]any{"url": "http://127.0.0.1:1/placeholder", "generateSecret": true}
	mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, &created)
	if !strings.HasPrefix(created.GeneratedSecret, "whsec_") {
		t.Fatalf("no generated secret: %+v", created)
	}
	base := startNodeReceiver(t, created.GeneratedSecret)
	// point the job at the receiver (an absent secret keeps the stored one)
	spec["webhook"] = map[string]any{"url": base + "/webhook"}
	mustDo(t, p, "PUT", "/api/v1/jobs/signed", spec, http.StatusOK, nil)
	mustDo(t, p, "POST", "/api/v1/jobs/signed/trigger", nil, http.StatusAccepted, nil)
	waitNode(t, base, 2)

	// rotate: the receiver still has the old secret; both signatures are sent during the grace period
	var rotated struct {
		GeneratedSecret string `json:"generatedSecret"`
		Webhook         struct {
			SecretRotating bool `json:"secretRotating"`
		} `json:"webhook"`
	}
	spec["webhook"] = map[string]any{"url": base + "/webhook", "generateSecret": true}
	mustDo(t, p, "PUT", "/api/v1/jobs/signed", spec, http.StatusOK, &rotated)
	if rotated.GeneratedSecret == created.GeneratedSecret || !rotated.Webhook.SecretRotating {
		t.Fatalf("rotation answered %+v", rotated)
	}
	mustDo(t, p, "POST", "/api/v1/jobs/signed/trigger", nil, http.StatusAccepted, nil)
	s := waitNode(t, base, 4)
	if s.Failed != 0 {
		t.Fatalf("the Node library rejected %d requests: %v", s.Failed, s.Errors)
	}
	// the secret never comes back from the API, nor is it in the dump
	var view map[string]any
	raw := mustDo(t, p, "GET", "/api/v1/jobs/signed", nil, http.StatusOK, &view)
	dump := mustDo(t, p, "GET", "/api/v1/jobs/signed/dump", nil, http.StatusOK, nil)
	for _, secret := range []string{created.GeneratedSecret, rotated.GeneratedSecret} {
		if strings.Contains(string(raw), secret) || strings.Contains(string(dump), secret) || strings.Contains(p.Log(), secret) {
			t.Fatal("a secret leaked into a response, the dump or the log")
		}
	}
}

func waitNode(t *testing.T, base string, verified int) nodeStats {
	t.Helper()
	var s nodeStats
	if !eventually(20*time.Second, func() bool { s = readNodeStats(t, base); return s.Verified+s.Failed >= verified }) {
		t.Fatalf("node receiver saw %+v, want %d verified", s, verified)
	}
	return s
}

// A streaming DATAFLOW job re-POSTs an item while the receiver answers {"hasMore": true}; each re-POST is a
// distinct message. Without streaming, one POST per item.
func TestDataflowStreamsWhileTheReceiverHasMore(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var mu sync.Mutex
	left := map[string]int{} // per executionId: batches still to serve
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		id := d.Payload.ExecutionID
		if _, ok := left[id]; !ok {
			left[id] = 3
		}
		left[id]--
		return 200, fmt.Sprintf(`{"hasMore": %v}`, left[id] > 0), 0
	})
	c := newCluster(t, 1)
	p := c.peers[0]
	spec := job("stream", "", 2, recv.URL)
	spec["jobType"], spec["streamingProcess"] = "DATAFLOW", true
	mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs/stream/trigger", nil, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 6 })
	if !ok {
		t.Fatalf("%d POSTs, want 3 per item", len(ds))
	}
	recv.WaitFor(time.Second, func([]harness.Delivery) bool { return false })
	ds = recv.Deliveries(nil)
	if len(ds) != 6 {
		t.Fatalf("%d POSTs, want 6", len(ds))
	}
	for _, d := range ds {
		want := d.Payload.ExecutionID
		if d.Payload.Iteration > 1 {
			want = fmt.Sprintf("%s.%d", d.Payload.ExecutionID, d.Payload.Iteration)
		}
		if d.Payload.Iteration < 1 || d.Payload.Iteration > 3 || d.Header.Get("webhook-id") != want {
			t.Fatalf("iteration %d with webhook-id %s", d.Payload.Iteration, d.Header.Get("webhook-id"))
		}
	}

	// without streaming: one POST per item per fire, whatever the receiver answers
	recv.Reset()
	spec["streamingProcess"] = false
	mustDo(t, p, "PUT", "/api/v1/jobs/stream", spec, http.StatusOK, nil)
	mustDo(t, p, "POST", "/api/v1/jobs/stream/trigger", nil, http.StatusAccepted, nil)
	recv.WaitFor(3*time.Second, func(ds []harness.Delivery) bool { return len(ds) > 2 })
	if n := len(recv.Deliveries(nil)); n != 2 {
		t.Fatalf("%d POSTs without streaming, want 2", n)
	}
}

// A failed attempt is retried with the same webhook-id and the next attempt number; a 410 is a permanent
// failure, flagged in the job's status.
func TestRetriesKeepTheIDAndGoneIsPermanent(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var mu sync.Mutex
	gone := false
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case gone:
			return http.StatusGone, `{"error":"this endpoint was retired"}`, 0
		case d.Payload.Attempt == 1:
			return http.StatusServiceUnavailable, `busy`, 0
		}
		return 200, `{}`, 0
	})
	c := newCluster(t, 1)
	p := c.peers[0]
	spec := job("retry", "", 1, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 3, "initialBackoffMs": 100, "maxBackoffMs": 500}
	mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs/retry/trigger", nil, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("no retry")
	}
	if ds[0].Header.Get("webhook-id") != ds[1].Header.Get("webhook-id") || ds[0].Payload.Attempt != 1 || ds[1].Payload.Attempt != 2 {
		t.Fatalf("attempts %d/%s and %d/%s", ds[0].Payload.Attempt, ds[0].Header.Get("webhook-id"), ds[1].Payload.Attempt, ds[1].Header.Get("webhook-id"))
	}

	mu.Lock()
	gone = true
	mu.Unlock()
	recv.Reset()
	mustDo(t, p, "POST", "/api/v1/jobs/retry/trigger", nil, http.StatusAccepted, nil)
	if _, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 }); !ok {
		t.Fatal("no delivery")
	}
	var v struct {
		Problems []string `json:"problems"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(v.Problems) == 0 && time.Now().Before(deadline) {
		mustDo(t, p, "GET", "/api/v1/jobs/retry", nil, http.StatusOK, &v)
	}
	if len(v.Problems) == 0 || !strings.Contains(strings.Join(v.Problems, " "), "permanently") {
		t.Fatalf("a 410 is not flagged in the job's status: %v", v.Problems)
	}
	if n := len(recv.Deliveries(nil)); n != 1 {
		t.Fatalf("a 410 was retried: %d attempts", n)
	}
}
