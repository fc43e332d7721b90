package receiver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNewCallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		p       Payload
		wantErr bool
		want    Callback
	}{
		{"from the payload", Payload{CallbackURL: "http://10.0.0.7:8080/api/v1/executions/e1", CallbackToken: "ejcb1.1.x", LeaseSeconds: 30},
			false, Callback{URL: "http://10.0.0.7:8080/api/v1/executions/e1", Token: "ejcb1.1.x", Lease: 30 * time.Second}},
		{"https, no lease", Payload{CallbackURL: "https://ej.example/api/v1/executions/e1", CallbackToken: "t"},
			false, Callback{URL: "https://ej.example/api/v1/executions/e1", Token: "t"}},
		{"no URL", Payload{CallbackToken: "t"}, true, Callback{}},
		{"no token", Payload{CallbackURL: "http://h/x"}, true, Callback{}},
		{"not http", Payload{CallbackURL: "ftp://h/x", CallbackToken: "t"}, true, Callback{}},
		{"relative", Payload{CallbackURL: "/api/v1/executions/e1", CallbackToken: "t"}, true, Callback{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb, err := NewCallback(tt.p)
			if tt.wantErr {
				if !errors.Is(err, ErrNoCallback) {
					t.Fatalf("err = %v, want ErrNoCallback", err)
				}
				return
			}
			if err != nil || cb.URL != tt.want.URL || cb.Token != tt.want.Token || cb.Lease != tt.want.Lease {
				t.Fatalf("%+v, %v", cb, err)
			}
		})
	}
	h := http.Header{}
	h.Set(HeaderCallbackURL, "http://10.0.0.7:8080/api/v1/executions/e1")
	h.Set(HeaderCallbackToken, "ejcb1.2.x")
	if cb, err := CallbackFromHeader(h); err != nil || cb.Token != "ejcb1.2.x" || cb.HeartbeatInterval() != DefaultLease/3 {
		t.Fatalf("from the headers: %+v, %v", cb, err)
	}
	if _, err := CallbackFromHeader(http.Header{}); !errors.Is(err, ErrNoCallback) {
		t.Fatalf("no headers: %v", err)
	}
}

func newTestCallback(t *testing.T, api *fakeAPI, exec string, attempt int) (*Callback, *fakeClock) {
	t.Helper()
	api.send(exec, attempt)
	clk := newFakeClock()
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	cb, err := NewCallback(Payload{CallbackURL: api.url(exec), CallbackToken: fakeToken(exec, attempt), LeaseSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	cb.Client, cb.clock = client, clk
	return cb, clk
}

func TestCallbackHeartbeat(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxMessageLen+10)
	tests := []struct {
		name     string
		progress int
		message  string
		wantBody string
	}{
		{"progress and message", 40, "40% of rows", `{"progress":40,"message":"40% of rows"}`},
		{"no progress", -1, "", `{}`},
		{"zero progress is sent", 0, "", `{"progress":0}`},
		{"over 100 is 100", 150, "", `{"progress":100}`},
		{"a long message is cut", 1, long, `{"progress":1,"message":"` + long[:MaxMessageLen] + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t)
			cb, _ := newTestCallback(t, api, "e1", 1)
			lease, err := cb.Heartbeat(context.Background(), tt.progress, tt.message)
			if err != nil || lease.State != StateRunning || lease.ExecutionID != "e1" {
				t.Fatalf("%+v, %v", lease, err)
			}
			c := api.callsOf("heartbeat")[0]
			if c.Body != tt.wantBody || c.Auth != "Bearer "+fakeToken("e1", 1) {
				t.Fatalf("%+v", c)
			}
		})
	}
}

func TestCallbackErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    int
		problem   string
		want      error
		temporary bool
	}{
		{400, "invalid", ErrInvalidCallback, false},
		{401, "callback-token", ErrCallbackToken, false},
		{404, "not-found", ErrExecutionNotFound, false},
		{409, "already-completed", ErrAlreadyCompleted, false},
		{409, "lease-expired", ErrLeaseExpired, false},
		{409, "stale-attempt", ErrStaleAttempt, false},
		{409, "execution-cancelled", ErrExecutionCancelled, false},
		{401, "", ErrCallbackToken, false},
		{409, "", nil, false},
		{408, "", nil, true},
		{429, "", nil, true},
		{500, "", nil, true},
		{503, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status)+" "+tt.problem, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t)
			api.script = func(fakeCall, int) (int, string, bool) { return tt.status, tt.problem, false }
			cb, clk := newTestCallback(t, api, "e1", 1)
			cb.MaxAttempts = 1
			_, err := cb.Complete(context.Background(), Completion{})
			var cerr *CallbackError
			if !errors.As(err, &cerr) || cerr.StatusCode != tt.status || cerr.Temporary() != tt.temporary ||
				cerr.Op != "complete" || cerr.Type != tt.problem {
				t.Fatalf("%#v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("%v is not %v", err, tt.want)
			}
			if tt.problem != "" && !strings.Contains(err.Error(), "fake: "+tt.problem) {
				t.Fatalf("message %q", err)
			}
			if len(clk.sleeps) != 0 {
				t.Fatal("one attempt slept")
			}
		})
	}
}

func TestCallbackRetries(t *testing.T) {
	t.Parallel()
	t.Run("up to MaxAttempts, backing off", func(t *testing.T) {
		t.Parallel()
		api := newFakeAPI(t)
		api.script = func(fakeCall, int) (int, string, bool) { return http.StatusServiceUnavailable, "", false }
		cb, clk := newTestCallback(t, api, "e1", 1)
		cb.MaxAttempts, cb.Backoff, cb.MaxBackoff = 4, time.Second, 3*time.Second
		done := make(chan error, 1)
		go func() {
			_, err := cb.Complete(context.Background(), Completion{})
			done <- err
		}()
		var waits []time.Duration
		for range 3 {
			d := clk.next(t)
			waits = append(waits, d)
			clk.Advance(d)
		}
		err := recv(t, done)
		var cerr *CallbackError
		if !errors.As(err, &cerr) || cerr.StatusCode != 503 || api.count("complete") != 4 {
			t.Fatalf("%v after %d attempts", err, api.count("complete"))
		}
		// Retry-After: 2 from the fake; back-off 1s, 2s, 3s with up to half taken off.
		for i, lo := range []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second} {
			if waits[i] < lo || waits[i] > 3*time.Second {
				t.Fatalf("waits %v", waits)
			}
		}
	})
	t.Run("until the context ends", func(t *testing.T) {
		t.Parallel()
		api := newFakeAPI(t)
		api.script = func(fakeCall, int) (int, string, bool) { return 0, "", true }
		cb, clk := newTestCallback(t, api, "e1", 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cb.Heartbeat(ctx, 10, "")
			done <- err
		}()
		clk.next(t) // backing off after the dropped connection
		cancel()
		if err := recv(t, done); err == nil || !strings.Contains(err.Error(), "stopped retrying: context canceled") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("the same completion repeated is 200", func(t *testing.T) {
		t.Parallel()
		api := newFakeAPI(t)
		cb, _ := newTestCallback(t, api, "e1", 1)
		done := Completion{Status: StatusFailure, Message: "disk full"}
		for range 2 {
			if l, err := cb.Complete(context.Background(), done); err != nil || l.State != StateFailed {
				t.Fatalf("%+v %v", l, err)
			}
		}
		if _, err := cb.Complete(context.Background(), Completion{}); !errors.Is(err, ErrAlreadyCompleted) {
			t.Fatalf("another outcome: %v", err)
		}
	})
}

func TestExpBackoff(t *testing.T) {
	t.Parallel()
	for n, want := range []time.Duration{0, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		if n == 0 {
			continue
		}
		if got := expBackoff(500*time.Millisecond, 5*time.Second, n); got != want {
			t.Errorf("expBackoff(%d) = %v, want %v", n, got, want)
		}
	}
	for range 100 {
		if d := jitter(time.Second); d <= 500*time.Millisecond || d > time.Second {
			t.Fatalf("jitter(1s) = %v", d)
		}
	}
}
