package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// peerStub stands for a peer's callback endpoint: it records each completion (path, token) and answers 200.
type peerStub struct {
	mu   sync.Mutex
	seen map[string][]string // execution id -> tokens of its completions here
	srv  *httptest.Server
}

func newPeerStub(t *testing.T) *peerStub {
	p := &peerStub{seen: map[string][]string{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/executions/"), "/complete")
		if !ok || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		p.seen[id] = append(p.seen[id], strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		p.mu.Unlock()
		w.Write([]byte(`{"state":"SUCCEEDED"}`))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// The completer answers 202 to deliveries of fires before the end and 200 after it, completes every accepted
// one once with its own token, half of them at another peer than the callbackUrl's, and repeats a share of
// them at yet another peer.
func TestCompleterCompletesEveryAcceptedItemOnce(t *testing.T) {
	t.Parallel()
	peers := []*peerStub{newPeerStub(t), newPeerStub(t), newPeerStub(t)}
	var urls []string
	for _, p := range peers {
		urls = append(urls, p.srv.URL)
	}
	c := newCompleter(completerConfig{seed: 7, minDelay: time.Millisecond, maxDelay: 5 * time.Millisecond,
		repeatShare: 0.5, repeatMin: time.Millisecond, repeatMax: 3 * time.Millisecond, conc: 4})
	defer c.close()
	c.setPeers(urls)
	now := time.Now()
	const n = 200
	for i := range n {
		id := fmt.Sprintf("exec-%03d", i)
		rec := testRecord("", id, now.UnixNano(), 1)
		if got := c.take(&rec, id, urls[i%3]+"/api/v1/executions/"+id, "tok-"+id); got != http.StatusAccepted {
			t.Fatalf("delivery %d answered %d, want 202", i, got)
		}
	}
	c.acceptBefore(now.Add(time.Second))
	late := testRecord("", "late", now.Add(time.Second).UnixNano(), 1)
	if got := c.take(&late, "late", urls[0]+"/api/v1/executions/late", "tok-late"); got != http.StatusOK {
		t.Errorf("a delivery of a fire at the end answered %d, want 200", got)
	}
	if pending := c.drain(10 * time.Second); pending != 0 {
		t.Fatalf("%d callbacks pending after 10 s", pending)
	}
	r := c.result()
	if r.Accepted != n || r.AcceptedIDs != n || r.Declined != 1 || r.Completed != n || r.CompletedTwice != 0 {
		t.Errorf("accepted %d (%d ids), declined %d, completed %d (twice %d); want %d, 1, %d, 0",
			r.Accepted, r.AcceptedIDs, r.Declined, r.Completed, r.CompletedTwice, n, n)
	}
	if s := r.Completions; s.Sent != n || s.OK != n || s.ToOwn+s.ToOther != n || s.ToOwn < n/4 || s.ToOther < n/4 || s.Latency.N != n {
		t.Errorf("completions: %+v; want %d sent and answered 200, about half to the callbackUrl's peer", s, n)
	}
	if s := r.Repeats; s.Sent == 0 || s.OK != s.Sent || s.ToOwn+s.ToOther != s.Sent {
		t.Errorf("repeats: %+v; want some, each answered 200", s)
	}
	// each execution: completed with its own token, once or (repeated) twice, never twice at the same peer
	total := 0
	for i := range n {
		id := fmt.Sprintf("exec-%03d", i)
		at := 0
		for _, p := range peers {
			p.mu.Lock()
			toks := p.seen[id]
			p.mu.Unlock()
			if len(toks) > 1 {
				t.Errorf("%s completed %d times at one peer", id, len(toks))
			}
			for _, tok := range toks {
				if tok != "tok-"+id {
					t.Errorf("%s completed with token %q", id, tok)
				}
			}
			at += len(toks)
		}
		if at < 1 || at > 2 {
			t.Errorf("%s completed %d times, want 1 or 2 (a repeat)", id, at)
		}
		total += at
	}
	if total != n+r.Repeats.Sent {
		t.Errorf("the peers saw %d completions, the completer sent %d and %d repeats", total, n, r.Repeats.Sent)
	}
}

func TestReposts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		recs              []record
		retried, reposted int
	}{
		{"distinct", []record{testRecord("", "a", 0, 1), testRecord("", "b", 0, 1)}, 0, 0},
		{"a retry grows the attempt", []record{testRecord("", "a", 0, 1), testRecord("", "a", 0, 2)}, 1, 0},
		{"the same attempt again", []record{testRecord("", "a", 0, 1), testRecord("", "a", 0, 1)}, 0, 1},
		{"an attempt that went back", []record{testRecord("", "a", 0, 2), testRecord("", "a", 0, 1)}, 1, 1},
		{"no id", []record{testRecord("", "", 0, 1), testRecord("", "", 0, 1)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if retried, reposted := reposts(tt.recs); retried != tt.retried || reposted != tt.reposted {
				t.Errorf("retried %d, reposted %d; want %d, %d", retried, reposted, tt.retried, tt.reposted)
			}
		})
	}
}

func TestAsyncPeers(t *testing.T) {
	t.Parallel()
	p := asyncPeers(map[string]float64{
		"async_accepted_total":                                           10,
		`async_ended_total{state="SUCCEEDED"}`:                           9,
		`async_ended_total{state="EXPIRED"}`:                             1,
		"async_lease_expiries_total":                                     1,
		`async_callbacks_total{kind="complete",outcome="applied"}`:       11,
		`async_callbacks_total{kind="complete",outcome="lease-expired"}`: 1,
		"async_items_running":                                            2,
		"fires_skipped_total":                                            5,
	})
	if p.Accepted != 10 || p.Ended["SUCCEEDED"] != 9 || p.Ended["EXPIRED"] != 1 || p.LeaseExpiries != 1 ||
		p.Callbacks["complete/applied"] != 11 || p.Callbacks["complete/lease-expired"] != 1 || p.Running != 2 || len(p.Callbacks) != 2 {
		t.Errorf("got %+v", p)
	}
}
