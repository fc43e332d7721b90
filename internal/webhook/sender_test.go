package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// request is what a test server saw.
type request struct {
	method string
	header http.Header
	body   []byte
}

// payload decodes the request body.
func (r request) payload(t *testing.T) Payload {
	t.Helper()
	var p Payload
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return p
}

// recorder is an httptest server that records every request, then lets respond answer it (n counts from 1).
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
}

func newRecorder(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, request{method: r.Method, header: r.Header.Clone(), body: body})
		n := len(rec.reqs)
		rec.mu.Unlock()
		respond(w, r, n)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) requests() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]request(nil), rec.reqs...)
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

func status(code int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(code) }
}

// zeroRand makes Backoff deterministic: DecorrelatedJitter then waits exactly the initial back-off.
type zeroRand struct{}

func (zeroRand) Int64N(int64) int64 { return 0 }

const testExecutionID = "0192f5e4-7b1a-7cc3-9d2e-3f4a5b6c7d8e"

func testDelivery(url string) Delivery {
	return Delivery{
		Payload: Payload{
			JobName: "settle", TaskID: "settle@-@2@-@READY@-@10.0.0.7@-@4242@-@t1", ExecutionID: testExecutionID,
			ShardingItem: 2, ShardingParameter: "Guangzhou", ShardingTotalCount: 4, JobParameter: "batch=500",
			Source: string(ejserver.SourceNormal), ScheduledAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
			InstanceID: "10.0.0.7@-@4242",
		},
		Webhook: ejserver.Webhook{URL: url, Method: "POST", TimeoutMs: 5000, ConnectTimeoutMs: 3000},
		Retry:   ejserver.RetryPolicy{MaxAttempts: 3, InitialBackoffMs: 1000, MaxBackoffMs: 5000},
	}
}

// newTestSender returns a Sender on a fake clock with deterministic back-off, closed when the test ends.
func newTestSender(t *testing.T, cfg Config) (*Sender, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	if cfg.Clock == nil {
		cfg.Clock = clk
	}
	if cfg.Rand == nil {
		cfg.Rand = zeroRand{}
	}
	s := New(cfg)
	t.Cleanup(s.Close)
	return s, clk
}

func TestDeliverSendsTheContract(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		_, _ = io.WriteString(w, "ok, settled")
	})
	s, clk := newTestSender(t, Config{UserAgent: "ejserver/1.2.3"})
	d := testDelivery(rec.URL + "/hooks/settle")
	d.Webhook.Headers = map[string]string{
		"Authorization": "Bearer t0k3n", "X-Team": "payments",
		"Content-Type": "text/plain", "webhook-id": "forged", "Host": "evil.example", // forbidden: ignored
	}
	res := s.Deliver(context.Background(), d)

	if !res.Success || res.StatusCode != 200 || res.Attempts != 1 || res.Iterations != 1 || res.FailureCause != "" {
		t.Fatalf("result = %+v", res)
	}
	if res.ResponseExcerpt != "ok, settled" {
		t.Errorf("excerpt = %q", res.ResponseExcerpt)
	}
	reqs := rec.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	want := `{"jobName":"settle","taskId":"settle@-@2@-@READY@-@10.0.0.7@-@4242@-@t1","executionId":"` + testExecutionID +
		`","shardingItem":2,"shardingParameter":"Guangzhou","shardingTotalCount":4,"jobParameter":"batch=500",` +
		`"source":"NORMAL_TRIGGER","scheduledAt":"2026-11-21T10:00:00Z","attempt":1,"instanceId":"10.0.0.7@-@4242"}`
	if string(r.body) != want {
		t.Errorf("body\n got %s\nwant %s", r.body, want)
	}
	for name, want := range map[string]string{
		"Content-Type":      "application/json",
		"User-Agent":        "ejserver/1.2.3",
		"Webhook-Id":        testExecutionID,
		"Webhook-Timestamp": "1795255200", // the fake clock's 2026-11-21T10:00:00Z
		"Authorization":     "Bearer t0k3n",
		"X-Team":            "payments",
		"Shardingcontext": `{"jobName":"settle","taskId":"settle@-@2@-@READY@-@10.0.0.7@-@4242@-@t1",` +
			`"shardingTotalCount":4,"jobParameter":"batch=500","shardingItem":2,"shardingParameter":"Guangzhou"}`,
	} {
		if got := r.header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if got := r.header.Get("Webhook-Signature"); got != "" {
		t.Errorf("signature without a secret: %q", got)
	}
	if got := r.header.Values("Webhook-Id"); len(got) != 1 {
		t.Errorf("webhook-id values %q: a job header overrode or doubled it", got)
	}
	if r.method != http.MethodPost {
		t.Errorf("method %s", r.method)
	}
	if clk.Now().Unix() != 1795255200 {
		t.Fatalf("fake clock epoch changed: %d", clk.Now().Unix())
	}
}

func TestShardingContextIsASCII(t *testing.T) {
	p := testDelivery("").Payload
	p.ShardingParameter = "广州 😀"
	h, err := shardingContextHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h, `"shardingParameter":"\u5e7f\u5dde \ud83d\ude00"`) {
		t.Fatalf("header %s", h)
	}
	var back shardingContext
	if err := json.Unmarshal([]byte(h), &back); err != nil || back.ShardingParameter != "广州 😀" {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestDeliverOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		code      int
		success   bool
		attempts  int
		permanent bool
		cause     string
	}{
		{"200", 200, true, 1, false, ""},
		{"204", 204, true, 1, false, ""},
		{"301 not followed", 301, false, 1, false, "redirects are not followed"},
		{"307 not followed", 307, false, 1, false, "redirects are not followed"},
		{"400 not retried", 400, false, 1, false, "HTTP 400 Bad Request"},
		{"404 not retried", 404, false, 1, false, "HTTP 404 Not Found"},
		{"408 retried", 408, false, 3, false, "HTTP 408 Request Timeout"},
		{"410 permanent", 410, false, 1, true, "HTTP 410 Gone"},
		{"429 retried", 429, false, 3, false, "HTTP 429 Too Many Requests"},
		{"500 retried", 500, false, 3, false, "HTTP 500 Internal Server Error"},
		{"502 retried", 502, false, 3, false, "HTTP 502 Bad Gateway"},
		{"503 retried", 503, false, 3, false, "HTTP 503 Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				if tt.code >= 300 && tt.code < 400 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tt.code)
			})
			s, clk := newTestSender(t, Config{})
			res, sleeps := deliverAdvancing(t, s, clk, context.Background(), testDelivery(rec.URL))
			if res.Success != tt.success || res.Attempts != tt.attempts || res.Permanent != tt.permanent ||
				res.StatusCode != tt.code || !strings.Contains(res.FailureCause, tt.cause) {
				t.Fatalf("result = %+v", res)
			}
			if got := rec.count(); got != tt.attempts {
				t.Fatalf("receiver saw %d requests, want %d", got, tt.attempts)
			}
			if len(sleeps) != tt.attempts-1 {
				t.Fatalf("sleeps = %v", sleeps)
			}
			if tt.code == 301 && !strings.Contains(res.FailureCause, "Location: /elsewhere") {
				t.Errorf("cause %q does not show the Location", res.FailureCause)
			}
		})
	}
}

func TestRetriesKeepTheIDAndCountAttempts(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n < 3 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	s, clk := newTestSender(t, Config{})
	d := testDelivery(rec.URL)
	d.Retry = ejserver.RetryPolicy{MaxAttempts: 5, InitialBackoffMs: 1000, MaxBackoffMs: 30000}
	res, sleeps := deliverAdvancing(t, s, clk, context.Background(), d)
	if !res.Success || res.Attempts != 3 || res.StatusCode != 200 {
		t.Fatalf("result = %+v", res)
	}
	// zeroRand: decorrelated jitter waits exactly the initial back-off each time.
	if len(sleeps) != 2 || sleeps[0] != time.Second || sleeps[1] != time.Second {
		t.Fatalf("sleeps = %v", sleeps)
	}
	if res.Duration != 2*time.Second {
		t.Errorf("duration = %v, want the 2s of back-off on the fake clock", res.Duration)
	}
	var stamps []string
	for i, r := range rec.requests() {
		if id := r.header.Get("Webhook-Id"); id != testExecutionID {
			t.Errorf("attempt %d: webhook-id %q", i+1, id)
		}
		if p := r.payload(t); p.Attempt != i+1 || p.Iteration != 0 {
			t.Errorf("attempt %d: body attempt %d iteration %d", i+1, p.Attempt, p.Iteration)
		}
		stamps = append(stamps, r.header.Get("Webhook-Timestamp"))
	}
	if stamps[0] == stamps[2] {
		t.Errorf("every attempt is stamped with its own time, got %v", stamps)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		code       int
		retryAfter func(now time.Time) string
		want       time.Duration
	}{
		{"429 seconds", 429, func(time.Time) string { return "2" }, 2 * time.Second},
		{"503 seconds", 503, func(time.Time) string { return "3" }, 3 * time.Second},
		{"503 HTTP date", 503, func(now time.Time) string { return now.Add(4 * time.Second).Format(http.TimeFormat) }, 4 * time.Second},
		{"429 capped at MaxBackoffMs", 429, func(time.Time) string { return "3600" }, 5 * time.Second},
		{"date in the past retries at once", 503, func(now time.Time) string { return now.Add(-time.Hour).Format(http.TimeFormat) }, 0},
		{"malformed falls back to back-off", 429, func(time.Time) string { return "soon" }, time.Second},
		{"ignored on 500", 500, func(time.Time) string { return "4" }, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, clk := newTestSender(t, Config{})
			rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if n == 1 {
					w.Header().Set("Retry-After", tt.retryAfter(clk.Now()))
					w.WriteHeader(tt.code)
					return
				}
				w.WriteHeader(http.StatusOK)
			})
			res, sleeps := deliverAdvancing(t, s, clk, context.Background(), testDelivery(rec.URL))
			if !res.Success || res.Attempts != 2 {
				t.Fatalf("result = %+v", res)
			}
			var slept time.Duration
			for _, d := range sleeps {
				slept += d
			}
			if slept != tt.want {
				t.Fatalf("waited %v (%v), want %v", slept, sleeps, tt.want)
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	t.Run("prevents a retry that would start after it", func(t *testing.T) {
		rec := newRecorder(t, status(500))
		s, clk := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Retry = ejserver.RetryPolicy{MaxAttempts: 5, InitialBackoffMs: 1000, MaxBackoffMs: 1000}
		d.Deadline = clk.Now().Add(1500 * time.Millisecond)
		res, sleeps := deliverAdvancing(t, s, clk, context.Background(), d)
		if res.Success || res.Attempts != 2 || !strings.Contains(res.FailureCause, "would start after the item's next fire") {
			t.Fatalf("result = %+v", res)
		}
		if len(sleeps) != 1 {
			t.Fatalf("sleeps %v: no sleep may end past the deadline", sleeps)
		}
		if !clk.Now().Before(d.Deadline) {
			t.Fatalf("the sender slept to %v, past the deadline %v", clk.Now(), d.Deadline)
		}
	})
	t.Run("already passed: nothing is sent", func(t *testing.T) {
		rec := newRecorder(t, status(200))
		s, clk := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Deadline = clk.Now()
		res := s.Deliver(context.Background(), d)
		if res.Success || res.Attempts != 0 || rec.count() != 0 || !strings.Contains(res.FailureCause, "deadline") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("a Retry-After past it is not waited for", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Header().Set("Retry-After", "10")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		s, clk := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Retry.MaxBackoffMs = 60000
		d.Deadline = clk.Now().Add(5 * time.Second)
		res, sleeps := deliverAdvancing(t, s, clk, context.Background(), d)
		if res.Attempts != 1 || len(sleeps) != 0 || !strings.Contains(res.FailureCause, "next fire") {
			t.Fatalf("result = %+v, sleeps %v", res, sleeps)
		}
	})
}

func TestTimeouts(t *testing.T) {
	t.Run("response timeout", func(t *testing.T) {
		arrived := make(chan struct{}, 1)
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, _ int) {
			arrived <- struct{}{}
			<-r.Context().Done() // hang until the sender gives up
		})
		s, clk := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Retry.MaxAttempts = 1
		done := make(chan Result, 1)
		go func() { done <- s.Deliver(context.Background(), d) }()
		<-arrived
		clk.Advance(d.Webhook.Timeout())
		res := <-done
		if res.Success || res.StatusCode != 0 || !strings.Contains(res.FailureCause, "response timeout after 5s") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("slow body", func(t *testing.T) {
		arrived := make(chan struct{}, 1)
		testHookResponseHeaders = func() { arrived <- struct{}{} }
		defer func() { testHookResponseHeaders = nil }()
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, _ int) {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"partial":`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		s, clk := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Retry.MaxAttempts = 1
		done := make(chan Result, 1)
		go func() { done <- s.Deliver(context.Background(), d) }()
		<-arrived
		clk.Advance(d.Webhook.Timeout())
		res := <-done
		if res.Success || res.StatusCode != 200 || !strings.Contains(res.FailureCause, "HTTP 200, then reading the body: response timeout") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("connect timeout (TLS handshake never answered)", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				accepted <- c
			}
		}()
		s, clk := newTestSender(t, Config{})
		d := testDelivery("https://" + ln.Addr().String() + "/")
		d.Retry.MaxAttempts = 1
		done := make(chan Result, 1)
		go func() { done <- s.Deliver(context.Background(), d) }()
		conn := <-accepted
		clk.Advance(d.Webhook.ConnectTimeout())
		res := <-done
		s.Close() // abandon the handshake the transport keeps going in the background
		_ = conn.Close()
		_ = ln.Close()
		if res.Success || res.Attempts != 1 || !strings.Contains(res.FailureCause, "connect timeout after 3s") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("connection refused is retried", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		s, clk := newTestSender(t, Config{})
		res, sleeps := deliverAdvancing(t, s, clk, context.Background(), testDelivery("http://"+addr+"/"))
		if res.Success || res.Attempts != 3 || len(sleeps) != 2 || !strings.Contains(res.FailureCause, "connection refused") {
			t.Fatalf("result = %+v", res)
		}
	})
}

func TestResponseBodyIsBounded(t *testing.T) {
	var written atomic.Int64
	const huge = 64 << 20
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		chunk := []byte(strings.Repeat("é", 16<<10)) // 32 KiB of two-byte runes
		for written.Load() < huge {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	s, _ := newTestSender(t, Config{MaxResponseBytes: 64 << 10, ExcerptBytes: 1025})
	res := s.Deliver(context.Background(), testDelivery(rec.URL))
	rec.Close() // waits for the handler, which stops when the sender hangs up
	if !res.Success {
		t.Fatalf("result = %+v", res)
	}
	if len(res.ResponseExcerpt) != 1024 || strings.ContainsRune(res.ResponseExcerpt, '\uFFFD') {
		t.Fatalf("excerpt of %d bytes (a rune cut at byte 1025 must be dropped, not mangled)", len(res.ResponseExcerpt))
	}
	if w := written.Load(); w >= huge {
		t.Fatalf("the receiver wrote all %d bytes: the body was not bounded", w)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"h\xffllo", 10, "h\uFFFDllo"},
		{"aé", 2, "a"},   // cut inside é
		{"a€b", 3, "a"},  // cut inside a three-byte rune
		{"a€b", 4, "a€"}, // whole rune kept
		{"\xff\xfe", 10, "\uFFFD"},
	}
	for _, tt := range tests {
		if got := excerpt([]byte(tt.in), tt.n); got != tt.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestConcurrencyBounds(t *testing.T) {
	t.Run("global", func(t *testing.T) {
		release := make(chan struct{})
		var cur, peak atomic.Int64
		rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			n := cur.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			<-release
			cur.Add(-1)
		})
		s, _ := newTestSender(t, Config{MaxConcurrent: 2})
		var wg sync.WaitGroup
		results := make([]Result, 5)
		for i := range results {
			wg.Go(func() { results[i] = s.Deliver(context.Background(), testDelivery(rec.URL)) })
		}
		waitFor(t, "2 requests in flight and 3 waiting", func() bool {
			return rec.count() == 2 && s.InFlight() == 2 && s.Waiting() == 3
		})
		close(release)
		wg.Wait()
		for _, r := range results {
			if !r.Success {
				t.Fatalf("result = %+v", r)
			}
		}
		if peak.Load() != 2 || s.InFlight() != 0 {
			t.Fatalf("peak %d, in flight %d", peak.Load(), s.InFlight())
		}
	})
	t.Run("per job", func(t *testing.T) {
		release := make(chan struct{})
		rec := newRecorder(t, func(http.ResponseWriter, *http.Request, int) { <-release })
		s, _ := newTestSender(t, Config{MaxConcurrent: 10})
		var wg sync.WaitGroup
		for i := range 4 {
			d := testDelivery(rec.URL)
			d.MaxConcurrentPerJob = 1
			if i == 3 {
				d.Payload.JobName = "report"
			}
			wg.Go(func() { s.Deliver(context.Background(), d) })
		}
		// settle may have one request in flight, report one; two settle items wait.
		waitFor(t, "one request per job in flight, two waiting", func() bool {
			return rec.count() == 2 && s.InFlight() == 2 && s.Waiting() == 2
		})
		jobs := map[string]int{}
		for _, r := range rec.requests() {
			jobs[r.payload(t).JobName]++
		}
		if jobs["settle"] != 1 || jobs["report"] != 1 {
			t.Fatalf("in flight per job: %v", jobs)
		}
		close(release)
		wg.Wait()
		if rec.count() != 4 || len(s.limit.jobs) != 0 {
			t.Fatalf("%d requests, %d job slot sets left", rec.count(), len(s.limit.jobs))
		}
	})
	t.Run("waiting for a slot ends with ctx", func(t *testing.T) {
		release := make(chan struct{})
		rec := newRecorder(t, func(http.ResponseWriter, *http.Request, int) { <-release })
		s, _ := newTestSender(t, Config{MaxConcurrent: 1})
		first := make(chan Result, 1)
		go func() { first <- s.Deliver(context.Background(), testDelivery(rec.URL)) }()
		waitFor(t, "the first request in flight", func() bool { return rec.count() == 1 })
		ctx, cancel := context.WithCancel(context.Background())
		second := make(chan Result, 1)
		go func() { second <- s.Deliver(ctx, testDelivery(rec.URL)) }()
		waitFor(t, "the second request waiting", func() bool { return s.Waiting() == 1 })
		cancel()
		res := <-second
		close(release)
		<-first
		if res.Attempts != 0 || !strings.Contains(res.FailureCause, "cancelled while waiting for a request slot") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("waiting for a slot ends at the deadline", func(t *testing.T) {
		release := make(chan struct{})
		rec := newRecorder(t, func(http.ResponseWriter, *http.Request, int) { <-release })
		s, clk := newTestSender(t, Config{MaxConcurrent: 1})
		first := make(chan Result, 1)
		d1 := testDelivery(rec.URL)
		d1.Retry.MaxAttempts = 1 // advancing the clock a minute times it out; it must not then sleep on the fake clock
		go func() { first <- s.Deliver(context.Background(), d1) }()
		waitFor(t, "the first request in flight", func() bool { return rec.count() == 1 })
		d := testDelivery(rec.URL)
		d.Deadline = clk.Now().Add(time.Minute)
		second := make(chan Result, 1)
		go func() { second <- s.Deliver(context.Background(), d) }()
		waitFor(t, "the second request waiting", func() bool { return s.Waiting() == 1 })
		clk.Advance(time.Minute)
		res := <-second
		close(release)
		<-first
		if res.Attempts != 0 || !strings.Contains(res.FailureCause, "deadline") || rec.count() != 1 {
			t.Fatalf("result = %+v", res)
		}
	})
}

func TestCancellation(t *testing.T) {
	t.Run("during a request", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, _ int) {
			cancel(errors.New("job disabled"))
			<-r.Context().Done()
		})
		s, _ := newTestSender(t, Config{})
		res := s.Deliver(ctx, testDelivery(rec.URL))
		if res.Success || res.Attempts != 1 || !strings.Contains(res.FailureCause, "cancelled: job disabled") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("during back-off", func(t *testing.T) {
		rec := newRecorder(t, status(503))
		s, clk := newTestSender(t, Config{})
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan Result, 1)
		go func() { done <- s.Deliver(ctx, testDelivery(rec.URL)) }()
		<-clk.sleeps
		cancel(errors.New("peer shutting down"))
		res := <-done
		if res.Success || res.Attempts != 1 || !strings.Contains(res.FailureCause, "retry cancelled: peer shutting down") {
			t.Fatalf("result = %+v", res)
		}
	})
	// Halt (the job disabled or deleted) lets the request on its way finish: the receiver may be doing the
	// work, and its answer is what is recorded (seed 20 of the nemesis soak recorded a failure for a 200).
	for _, tc := range []struct {
		name   string
		status int
		check  func(Result) bool
	}{
		{"halted during a request", 200, func(r Result) bool { return r.Success && r.StatusCode == 200 && r.FailureCause == "" }},
		{"halted during a request that fails: no retry", 503, func(r Result) bool {
			return !r.Success && r.FailureCause == "HTTP 503 Service Unavailable; retry cancelled: the job was disabled or deleted"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			halt, stop := context.WithCancelCause(context.Background())
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				stop(errors.New("the job was disabled or deleted"))
				w.WriteHeader(tc.status)
			})
			s, _ := newTestSender(t, Config{})
			d := testDelivery(rec.URL)
			d.Halt = halt
			if res := s.Deliver(context.Background(), d); !tc.check(res) || res.Attempts != 1 || rec.count() != 1 {
				t.Fatalf("result = %+v", res)
			}
		})
	}
	t.Run("halted during back-off", func(t *testing.T) {
		rec := newRecorder(t, status(503))
		s, clk := newTestSender(t, Config{})
		halt, stop := context.WithCancelCause(context.Background())
		d := testDelivery(rec.URL)
		d.Halt = halt
		done := make(chan Result, 1)
		go func() { done <- s.Deliver(context.Background(), d) }()
		<-clk.sleeps
		stop(errors.New("the job was disabled or deleted"))
		res := <-done
		if res.Success || res.Attempts != 1 || !strings.Contains(res.FailureCause, "retry cancelled: the job was disabled") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("halted before the first attempt", func(t *testing.T) {
		rec := newRecorder(t, status(200))
		s, _ := newTestSender(t, Config{})
		halt, stop := context.WithCancelCause(context.Background())
		stop(errors.New("the job was disabled or deleted"))
		d := testDelivery(rec.URL)
		d.Halt = halt
		res := s.Deliver(context.Background(), d)
		if res.Attempts != 0 || rec.count() != 0 || !strings.Contains(res.FailureCause, "cancelled before attempt 1: the job was disabled") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("before the first attempt", func(t *testing.T) {
		rec := newRecorder(t, status(200))
		s, _ := newTestSender(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := s.Deliver(ctx, testDelivery(rec.URL))
		if res.Attempts != 0 || rec.count() != 0 {
			t.Fatalf("result = %+v", res)
		}
	})
}

func TestMethodAndBadConfig(t *testing.T) {
	rec := newRecorder(t, status(200))
	s, _ := newTestSender(t, Config{})
	d := testDelivery(rec.URL)
	d.Webhook.Method = "PUT"
	if res := s.Deliver(context.Background(), d); !res.Success || rec.requests()[0].method != "PUT" {
		t.Fatalf("result = %+v", res)
	}
	for _, tc := range []struct{ url, cause string }{
		{"ftp://example.com/", "scheme must be http or https"},
		{"http://user:pw@example.com/", "credentials in the URL"},
		{"http://169.254.169.254/latest/meta-data", "link-local"},
		{"http://%zz", "does not parse"},
		{"header", `header "X-Token": value contains a control character`},
	} {
		d := testDelivery(tc.url)
		if tc.url == "header" {
			d = testDelivery(rec.URL)
			d.Webhook.Headers = map[string]string{"X-Token": "abc\x7f"}
		}
		res := s.Deliver(context.Background(), d)
		if res.Success || !res.Permanent || res.Attempts != 0 || !strings.Contains(res.FailureCause, tc.cause) {
			t.Errorf("%s: result = %+v", tc.url, res)
		}
	}
}

// A delivery prepared ahead of its time sends the body built then, but stamps and signs each request when it
// is sent.
func TestPreparedAheadIsStampedWhenSent(t *testing.T) {
	rec := newRecorder(t, status(200))
	s, clk := newTestSender(t, Config{})
	secret := GenerateSecret()
	d := testDelivery(rec.URL)
	d.Webhook.Secret = secret
	pr := s.Prepare(d)
	clk.Advance(5 * time.Second) // the scheduled time comes
	if res := s.Send(context.Background(), pr); !res.Success || res.Attempts != 1 {
		t.Fatalf("result %+v", res)
	}
	r := rec.requests()[0]
	if ts := r.header.Get("Webhook-Timestamp"); ts != "1795255205" {
		t.Fatalf("timestamp %s, want the send time 1795255205", ts)
	}
	key, err := ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.header.Get("Webhook-Signature"), Sign(key, testExecutionID, 1795255205, r.body); got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	if !strings.Contains(string(r.body), `"attempt":1,`) || !strings.Contains(string(r.body), `"shardingParameter":"Guangzhou"`) {
		t.Fatalf("body %s", r.body)
	}
}

// Delivery.Sent tells the executor when a request is no longer held back by its own peer's burst: written
// to the connection, or waiting for a slot of its job's own bound. A request waiting for one of the peer's
// slots is still part of the burst: Sent follows when it is written.
func TestSentReportsARequestThatHasLeft(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		perJob     int
		whileWaits int64 // Sent calls of the second request while it waits for the slot
	}{
		{"the peer's only slot", Config{MaxConcurrent: 1}, 0, 0},
		{"the job's only slot", Config{}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			rec := newRecorder(t, func(http.ResponseWriter, *http.Request, int) { <-release })
			s, _ := newTestSender(t, tc.cfg)
			var firstSent, secondSent atomic.Int64
			d1, d2 := testDelivery(rec.URL), testDelivery(rec.URL)
			d1.MaxConcurrentPerJob, d2.MaxConcurrentPerJob = tc.perJob, tc.perJob
			d1.Sent = func() { firstSent.Add(1) }
			d2.Sent = func() { secondSent.Add(1) }
			first, second := make(chan Result, 1), make(chan Result, 1)
			go func() { first <- s.Deliver(context.Background(), d1) }()
			// the receiver has the whole request and has not answered: it was written
			waitFor(t, "the first request at the receiver", func() bool { return rec.count() == 1 && firstSent.Load() > 0 })
			go func() { second <- s.Deliver(context.Background(), d2) }()
			waitFor(t, "the second request waiting for the only slot", func() bool { return s.Waiting() == 1 })
			if got := secondSent.Load(); got != tc.whileWaits {
				t.Fatalf("Sent called %d times for a request waiting for a slot, want %d", got, tc.whileWaits)
			}
			close(release)
			if r := <-first; !r.Success {
				t.Fatalf("first %+v", r)
			}
			if r := <-second; !r.Success || secondSent.Load() != tc.whileWaits+1 { // and once more when it was written
				t.Fatalf("second %+v, Sent called %d times", r, secondSent.Load())
			}
		})
	}
}
