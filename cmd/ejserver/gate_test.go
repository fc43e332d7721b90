package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestGateAnswersUntilOpenedThenHandsOver(t *testing.T) {
	var g gate
	srv := http.Server{Handler: &g}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	url := "http://" + ln.Addr().String() + "/api/v1/jobs/a/sharding/0/disable"

	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(body), "nothing was done") {
		t.Fatalf("before open: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	if resp, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("liveness while starting: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp, err := http.Get("http://" + ln.Addr().String() + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readiness while starting: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	g.open(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	resp, err = http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("after open: %d", resp.StatusCode)
	}
}

// A peer that cannot reach ZooKeeper yet answers its API at once instead of leaving requests in the
// listener's backlog: the soak's disable (seed 2027) timed out against a starting peer, and the peer ran
// it 2.7 s later, when it came up, so the item stayed disabled for six minutes unbeknown to its client.
func TestStartingPeerRefusesRequestsAtOnce(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	zkAddr := dead.Addr().String()
	dead.Close() // nothing listens there: the peer keeps trying to connect
	port, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := port.Addr().String()
	port.Close()
	c, err := parseServe([]string{"--zk", zkAddr, "--listen", listen, "--data-dir", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runPeer(ctx, c, slog.New(slog.DiscardHandler)) }()
	defer func() {
		cancel()
		<-done
	}()

	client := &http.Client{Timeout: 2 * time.Second} // a backlog holds the request for as long as ZooKeeper is away
	var last error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		resp, err := client.Post("http://"+listen+"/api/v1/jobs/a/sharding/0/disable", "application/json", nil)
		if err != nil {
			last = err
			time.Sleep(50 * time.Millisecond) // the port may not be bound yet: poll
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a peer not connected to ZooKeeper answered %d", resp.StatusCode)
		}
		return
	}
	t.Fatalf("no answer from a starting peer: %v", last)
}
