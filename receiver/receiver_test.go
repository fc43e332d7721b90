package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Test vectors from the Standard Webhooks libraries' own tests: github.com/standard-webhooks/standard-webhooks,
// libraries/go/webhook_test.go and libraries/javascript/src/webhook.test.ts.
const (
	specSecret    = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specPayload   = `{"test": 2432232314}`
	specTimestamp = 1614265330
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	specBogus     = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

// sign is an independent implementation of the spec's signature, for building test requests.
func sign(secret, id string, ts int64, body string) string {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.%s", id, ts, body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func headers(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	if id != "" {
		h.Set("webhook-id", id)
	}
	if ts != 0 {
		h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	}
	if sig != "" {
		h.Set("webhook-signature", sig)
	}
	return h
}

func TestVerifySpecVectors(t *testing.T) {
	now := time.Unix(specTimestamp, 0)
	if got := sign(specSecret, specMsgID, specTimestamp, specPayload); got != specSignature {
		t.Fatalf("the test's own signer is wrong: %s", got)
	}
	valid := headers(specMsgID, specTimestamp, specSignature)
	tests := []struct {
		name   string
		secret string
		h      http.Header
		now    time.Time
		want   error
	}{
		{"valid", specSecret, valid, now, nil},
		{"valid with whsec_ prefix", "whsec_" + specSecret, valid, now, nil},
		{"missing id", specSecret, headers("", specTimestamp, specSignature), now, ErrMissingHeaders},
		{"missing timestamp", specSecret, headers(specMsgID, 0, specSignature), now, ErrMissingHeaders},
		{"missing signature", specSecret, headers(specMsgID, specTimestamp, ""), now, ErrMissingHeaders},
		{"invalid signature", specSecret, headers(specMsgID, specTimestamp, specBogus), now, ErrNoMatch},
		{"partial signature", specSecret, headers(specMsgID, specTimestamp, specSignature[:8]), now, ErrNoMatch},
		{"empty v1", specSecret, headers(specMsgID, specTimestamp, "v1,"), now, ErrNoMatch},
		{"multi signature", specSecret, headers(specMsgID, specTimestamp,
			strings.Join([]string{specBogus, "v2," + specSignature[3:], specSignature, specBogus}, " ")), now, nil},
		{"old timestamp", specSecret, valid, now.Add(DefaultTolerance + time.Second), ErrTooOld},
		{"new timestamp", specSecret, valid, now.Add(-DefaultTolerance - time.Second), ErrTooNew},
		{"wrong secret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret of 24 byt")), valid, now, ErrNoMatch},
		{"bad secret", "whsec_***", valid, now, ErrBadSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyAt(tt.secret, tt.h, []byte(specPayload), tt.now, DefaultTolerance)
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyAt = %v, want %v", err, tt.want)
			}
		})
	}
	bad := headers(specMsgID, specTimestamp, specSignature)
	bad.Set("webhook-timestamp", "hello")
	if err := VerifyAt(specSecret, bad, []byte(specPayload), now, DefaultTolerance); !errors.Is(err, ErrBadTimestamp) {
		t.Fatalf("timestamp hello: %v", err)
	}
	if err := VerifyAt(specSecret, valid, []byte(specPayload), now.Add(time.Hour), 0); err != nil {
		t.Fatalf("tolerance 0 skips the time check: %v", err)
	}
}

// fixture is a receiver under test with a clock it controls.
type fixture struct {
	secret string
	now    time.Time
	mu     sync.Mutex
	calls  []Delivery
	srv    *httptest.Server
}

func newFixture(t *testing.T, opts Options, fn Func) *fixture {
	t.Helper()
	f := &fixture{secret: opts.Secret, now: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	opts.Now = func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	f.srv = httptest.NewServer(Handler(opts, func(ctx context.Context, d Delivery) (Response, error) {
		f.mu.Lock()
		f.calls = append(f.calls, d)
		f.mu.Unlock()
		return fn(ctx, d)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fixture) called() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// post sends a signed delivery with the given webhook-id and body; it returns status and body.
func (f *fixture) post(t *testing.T, id, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL, strings.NewReader(body))
	f.mu.Lock()
	ts := f.now.Unix()
	f.mu.Unlock()
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	if f.secret != "" {
		req.Header.Set("webhook-signature", sign(f.secret, id, ts, body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const secret = "whsec_" + specSecret

func body(id string) string {
	return `{"jobName":"settle","taskId":"t","executionId":"` + id + `","shardingItem":2,"shardingParameter":"Guangzhou",` +
		`"shardingTotalCount":4,"jobParameter":"batch=500","source":"NORMAL_TRIGGER","scheduledAt":"2026-11-21T10:00:00Z",` +
		`"attempt":1,"instanceId":"10.0.0.7@-@4242"}`
}

func TestHandler(t *testing.T) {
	t.Run("verifies, decodes, answers the response", func(t *testing.T) {
		f := newFixture(t, Options{Secret: secret}, func(_ context.Context, d Delivery) (Response, error) {
			return Response{HasMore: d.Payload.ShardingItem == 2}, nil
		})
		code, resp := f.post(t, "e1", body("e1"))
		if code != 200 || strings.TrimSpace(resp) != `{"hasMore":true}` {
			t.Fatalf("%d %s", code, resp)
		}
		d := f.calls[0]
		if d.ID != "e1" || d.Payload.ShardingParameter != "Guangzhou" || d.Payload.Attempt != 1 ||
			!d.Payload.ScheduledAt.Equal(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)) {
			t.Fatalf("delivery %+v", d)
		}
	})
	t.Run("rejects a bad signature, a stale timestamp and a bad body", func(t *testing.T) {
		var rejected atomic.Int32
		f := newFixture(t, Options{Secret: secret, OnReject: func(*http.Request, int, error) { rejected.Add(1) }},
			func(context.Context, Delivery) (Response, error) { return Response{}, nil })
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL, strings.NewReader(body("x")))
		req.Header.Set("webhook-id", "x")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(f.now.Unix(), 10))
		req.Header.Set("webhook-signature", specBogus)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad signature: %d", resp.StatusCode)
		}
		if code, _ := f.post(t, "y", "{not json"); code != http.StatusBadRequest {
			t.Fatalf("bad body: %d", code)
		}
		unsigned := &fixture{secret: "", now: f.now, srv: f.srv} // same server, no signature
		if code, _ := unsigned.post(t, "z", body("z")); code != http.StatusUnauthorized {
			t.Fatalf("unsigned: %d", code)
		}
		if f.called() != 0 || rejected.Load() != 3 {
			t.Fatalf("%d calls, %d rejections", f.called(), rejected.Load())
		}
	})
	t.Run("without a secret accepts unsigned requests", func(t *testing.T) {
		f := newFixture(t, Options{}, func(context.Context, Delivery) (Response, error) { return Response{}, nil })
		if code, _ := f.post(t, "u", body("u")); code != 200 || f.called() != 1 {
			t.Fatalf("%d, %d calls", code, f.called())
		}
	})
	t.Run("dedupes by webhook-id and repeats the answer", func(t *testing.T) {
		var dups atomic.Int32
		f := newFixture(t, Options{Secret: secret, OnDuplicate: func(Delivery) { dups.Add(1) }},
			func(context.Context, Delivery) (Response, error) { return Response{HasMore: true}, nil })
		for range 3 {
			if code, resp := f.post(t, "same", body("same")); code != 200 || !strings.Contains(resp, `"hasMore":true`) {
				t.Fatalf("%d %s", code, resp)
			}
		}
		f.post(t, "same.2", body("same"))
		if f.called() != 2 || dups.Load() != 2 {
			t.Fatalf("%d calls, %d duplicates", f.called(), dups.Load())
		}
	})
	t.Run("forgets ids after the TTL", func(t *testing.T) {
		f := newFixture(t, Options{Secret: secret, DedupeTTL: time.Minute},
			func(context.Context, Delivery) (Response, error) { return Response{}, nil })
		f.post(t, "a", body("a"))
		f.advance(2 * time.Minute)
		f.post(t, "a", body("a"))
		if f.called() != 2 {
			t.Fatalf("%d calls", f.called())
		}
	})
	t.Run("a handler error answers 500 and lets the retry through", func(t *testing.T) {
		var fail atomic.Bool
		fail.Store(true)
		f := newFixture(t, Options{Secret: secret}, func(context.Context, Delivery) (Response, error) {
			if fail.Swap(false) {
				return Response{}, errors.New("database down")
			}
			return Response{}, nil
		})
		if code, resp := f.post(t, "r", body("r")); code != 500 || strings.Contains(resp, "database") {
			t.Fatalf("%d %q", code, resp)
		}
		if code, _ := f.post(t, "r", body("r")); code != 200 || f.called() != 2 {
			t.Fatalf("retry: %d, %d calls", code, f.called())
		}
	})
	t.Run("a duplicate while the first is running gets 503 Retry-After", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		f := newFixture(t, Options{Secret: secret}, func(context.Context, Delivery) (Response, error) {
			close(entered)
			<-release
			return Response{}, nil
		})
		first := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL, strings.NewReader(body("slow")))
			ts := strconv.FormatInt(f.now.Unix(), 10)
			req.Header.Set("webhook-id", "slow")
			req.Header.Set("webhook-timestamp", ts)
			req.Header.Set("webhook-signature", sign(secret, "slow", f.now.Unix(), body("slow")))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				first <- 0
				return
			}
			resp.Body.Close()
			first <- resp.StatusCode
		}()
		<-entered
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL, strings.NewReader(body("slow")))
		req.Header.Set("webhook-id", "slow")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(f.now.Unix(), 10))
		req.Header.Set("webhook-signature", sign(secret, "slow", f.now.Unix(), body("slow")))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		close(release)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || <-first != 200 {
			t.Fatalf("duplicate answered %d", resp.StatusCode)
		}
	})
	t.Run("oversized body is refused", func(t *testing.T) {
		f := newFixture(t, Options{MaxBodyBytes: 64}, func(context.Context, Delivery) (Response, error) { return Response{}, nil })
		if code, _ := f.post(t, "big", body("big")); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("%d", code)
		}
	})
}

func TestDedupeIsBounded(t *testing.T) {
	d := newDedupe[Response](3, time.Hour)
	now := time.Unix(0, 0)
	for i := range 10 {
		id := strconv.Itoa(i)
		if s, _ := d.begin(id, now, Response{}); s != seenNew {
			t.Fatalf("%s: state %d", id, s)
		}
		d.done(id, Response{}, now)
	}
	if d.len() != 3 {
		t.Fatalf("%d ids remembered, want 3", d.len())
	}
	if s, _ := d.begin("9", now, Response{}); s != seenDone {
		t.Fatal("the most recent id was dropped")
	}
	if s, _ := d.begin("0", now, Response{}); s != seenNew {
		t.Fatal("the oldest id is still remembered")
	}
}
