package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m) // the async mode's work runs in goroutines: none may outlive the tests
}

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

const testBody = `{"jobName":"settle","taskId":"t","executionId":"e-1","shardingItem":2,"shardingParameter":"Guangzhou",` +
	`"shardingTotalCount":4,"jobParameter":"batch=500","source":"NORMAL_TRIGGER","scheduledAt":"2026-11-21T10:00:00Z",` +
	`"attempt":1,"instanceId":"10.0.0.7@-@4242"}`

func signed(id, body string) *http.Request {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testSecret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + body))
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", ts)
	r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return r
}

func TestReceiverPrintsOneLinePerDelivery(t *testing.T) {
	var out bytes.Buffer
	p := &printer{out: &out, now: func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 12e6, time.UTC) }}
	h := newHandler(p, testSecret, 0, nil)

	for _, r := range []*http.Request{signed("e-1", testBody), signed("e-1", testBody)} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	bad := signed("e-2", testBody)
	bad.Header.Set("webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, bad)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", w.Code)
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	want := `10:00:00.012 ✓ settle       item 2/4    "Guangzhou"    NORMAL_TRIGGER attempt 1  jobParameter "batch=500"  id e-1`
	if lines[0] != want {
		t.Errorf("delivery line\n got %q\nwant %q", lines[0], want)
	}
	if !strings.Contains(lines[1], "↺") || !strings.Contains(lines[1], "duplicate") {
		t.Errorf("duplicate line %q", lines[1])
	}
	if !strings.Contains(lines[2], "rejected") || !strings.Contains(lines[2], "401") {
		t.Errorf("rejection line %q", lines[2])
	}
}

func TestFailRateAnswers500SoEjserverRetries(t *testing.T) {
	var out bytes.Buffer
	p := &printer{out: &out, now: time.Now}
	h := newHandler(p, "", 0.5, func() float64 { return 0.1 })
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(testBody)))
	if w.Code != http.StatusInternalServerError || !strings.Contains(out.String(), "simulated failure") {
		t.Fatalf("status %d, output %q", w.Code, out.String())
	}
}

// callbackAPI stands in for ejserver's callback API: it records each callback and answers as the contract
// says (RUNNING to a heartbeat, the outcome to a completion).
type callbackAPI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string // "op Authorization body"
}

func newCallbackAPI(t *testing.T) *callbackAPI {
	a := &callbackAPI{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		op := path.Base(r.URL.Path)
		a.mu.Lock()
		a.calls = append(a.calls, op+" "+r.Header.Get("Authorization")+" "+string(b))
		a.mu.Unlock()
		state := "RUNNING"
		if op == "complete" {
			state = "SUCCEEDED"
			if strings.Contains(string(b), `"failure"`) {
				state = "FAILED"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"executionId":"e-1","state":%q}`, state)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *callbackAPI) recorded() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func TestAsyncModeAcceptsHeartbeatsAndCompletes(t *testing.T) {
	tests := []struct {
		name     string
		failRate float64
		wantDone string
		wantLine string
	}{
		{"success", 0, `complete Bearer ejcb1.1.t {"status":"success","hasMore":false}`, "completing with success"},
		{"simulated failure", 1, `complete Bearer ejcb1.1.t {"status":"failure","message":"simulated failure","hasMore":false}`, "completing with failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newCallbackAPI(t)
			var out syncBuffer
			p := &printer{out: &out, now: time.Now}
			h, async := newAsyncHandler(p, testSecret, tt.failRate, func() float64 { return 0.5 }, 50*time.Millisecond)
			body := strings.TrimSuffix(testBody, "}") + `,"callbackUrl":"` + api.srv.URL + `/api/v1/executions/e-1",` +
				`"callbackToken":"ejcb1.1.t","leaseSeconds":60}`
			w := httptest.NewRecorder()
			h.ServeHTTP(w, signed("e-1", body))
			if w.Code != http.StatusAccepted {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(api.recorded()) < asyncSteps { // asyncSteps-1 heartbeats and the completion
				if time.Now().After(deadline) {
					t.Fatalf("callbacks so far: %q", api.recorded())
				}
				time.Sleep(time.Millisecond) // polling a condition
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := async.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			want := []string{
				`heartbeat Bearer ejcb1.1.t {"progress":20,"message":"step 1 of 5"}`,
				`heartbeat Bearer ejcb1.1.t {"progress":40,"message":"step 2 of 5"}`,
				`heartbeat Bearer ejcb1.1.t {"progress":60,"message":"step 3 of 5"}`,
				`heartbeat Bearer ejcb1.1.t {"progress":80,"message":"step 4 of 5"}`,
				tt.wantDone,
			}
			if got := api.recorded(); !slices.Equal(got, want) {
				t.Fatalf("callbacks\n got %q\nwant %q", got, want)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 6 || !strings.Contains(lines[0], "202 Accepted") || !strings.Contains(lines[0], `"Guangzhou"`) ||
				!strings.Contains(lines[4], " 80%  step 4 of 5  (heartbeat: RUNNING)") || !strings.Contains(lines[5], tt.wantLine) {
				t.Fatalf("output:\n%s", out.String())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the printer's writes from the work's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
