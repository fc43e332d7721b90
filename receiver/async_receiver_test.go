package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// asyncFixture is an AsyncHandler under test, on a fake clock, calling back a fakeAPI.
type asyncFixture struct {
	api    *fakeAPI
	clk    *fakeClock
	recv   *AsyncReceiver
	srv    *httptest.Server
	client *http.Client

	mu      sync.Mutex
	errs    []error // told to OnAsyncError
	dups    int
	rejects []error
}

func newAsyncFixture(t *testing.T, opts Options, fn AsyncFunc) *asyncFixture {
	t.Helper()
	f := &asyncFixture{api: newFakeAPI(t), clk: newFakeClock(), client: &http.Client{}}
	opts.clock, opts.Now, opts.Client = f.clk, f.clk.Now, f.client
	opts.OnAsyncError = func(_ Delivery, err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.errs = append(f.errs, err)
	}
	opts.OnDuplicate = func(Delivery) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.dups++
	}
	opts.OnReject = func(_ *http.Request, _ int, err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.rejects = append(f.rejects, err)
	}
	f.recv = AsyncHandler(opts, fn)
	f.srv = httptest.NewServer(f.recv)
	t.Cleanup(func() { // before the fake API closes (cleanups run last first)
		f.srv.Close()
		f.shutdown(t)
		f.client.CloseIdleConnections()
	})
	return f
}

// shutdown waits for every item's goroutines.
func (f *asyncFixture) shutdown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.recv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func (f *asyncFixture) asyncErrors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

func (f *asyncFixture) hasError(target error) bool {
	for _, err := range f.asyncErrors() {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func asyncBody(api *fakeAPI, exec string, attempt, lease int) string {
	return fmt.Sprintf(`{"jobName":"settle","executionId":%q,"shardingItem":2,"shardingParameter":"Guangzhou",`+
		`"shardingTotalCount":4,"source":"NORMAL_TRIGGER","attempt":%d,"callbackUrl":%q,"callbackToken":%q,"leaseSeconds":%d}`,
		exec, attempt, api.url(exec), fakeToken(exec, attempt), lease)
}

// post is what ejserver does for an item's attempt: make it current, POST it (safe from any goroutine).
func (f *asyncFixture) post(exec string, attempt, lease int) (int, error) {
	f.api.send(exec, attempt)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL, strings.NewReader(asyncBody(f.api, exec, attempt, lease)))
	req.Header.Set("webhook-id", exec)
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (f *asyncFixture) deliver(t *testing.T, exec string, attempt, lease int) {
	t.Helper()
	code, err := f.post(exec, attempt, lease)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("delivery of %s attempt %d: %d %v", exec, attempt, code, err)
	}
}

// blocking is an AsyncFunc that signals its start and returns when released or cancelled (sending the
// cancellation's cause).
type blocking struct {
	started chan Delivery
	release chan struct{}
	causes  chan error
	onStart func(r *Reporter)

	mu    sync.Mutex
	calls int
}

func newBlocking() *blocking {
	return &blocking{started: make(chan Delivery, 10), release: make(chan struct{}), causes: make(chan error, 10)}
}

func (b *blocking) fn(ctx context.Context, d Delivery, r *Reporter) error {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	if b.onStart != nil {
		b.onStart(r)
	}
	b.started <- d
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		b.causes <- context.Cause(ctx)
		return ctx.Err()
	}
}

func (b *blocking) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func TestAsyncHandlerAnswers202AndCompletes(t *testing.T) {
	t.Parallel()
	b := newBlocking()
	f := newAsyncFixture(t, Options{}, b.fn)
	f.deliver(t, "e1", 1, 30) // answered while the work has not even started, or is blocked
	d := recv(t, b.started)
	if d.ID != "e1" || d.Payload.CallbackURL != f.api.url("e1") || d.Payload.LeaseSeconds != 30 {
		t.Fatalf("delivery %+v", d)
	}
	if n := f.api.count(""); n != 0 {
		t.Fatalf("%d callbacks while the work runs and no heartbeat is due", n)
	}
	close(b.release)
	waitFor(t, "the completion", func() bool { return f.api.count("complete") == 1 })
	c := f.api.callsOf("complete")[0]
	if c.Body != `{"status":"success","hasMore":false}` || c.Auth != "Bearer "+fakeToken("e1", 1) || c.Status != 200 {
		t.Fatalf("completion %+v", c)
	}
	if st := f.api.exec("e1").state; st != StateSucceeded {
		t.Fatalf("state %s", st)
	}
}

func TestAsyncHandlerHeartbeatsAtTheInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		lease    int
		interval time.Duration // Options.HeartbeatInterval
		progress bool          // whether the work calls Reporter.Progress
		want     time.Duration
		wantBody string
	}{
		{"a third of the lease", 30, 0, true, 10 * time.Second, `{"progress":40,"message":"40% of rows"}`},
		{"the default lease", 0, 0, true, 20 * time.Second, `{"progress":40,"message":"40% of rows"}`},
		{"the shortest lease", 2, 0, false, 2 * time.Second / 3, `{}`},
		{"Options.HeartbeatInterval", 30, 3 * time.Second, false, 3 * time.Second, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBlocking()
			if tt.progress {
				b.onStart = func(r *Reporter) { r.Progress(40, "40% of rows") }
			}
			f := newAsyncFixture(t, Options{HeartbeatInterval: tt.interval}, b.fn)
			f.deliver(t, "e1", 1, tt.lease)
			recv(t, b.started)
			for i := 1; i <= 3; i++ {
				if d := f.clk.next(t); d != tt.want {
					t.Fatalf("heartbeat %d after %v, want %v", i, d, tt.want)
				}
				if n := f.api.count("heartbeat"); n != i-1 {
					t.Fatalf("%d heartbeats before tick %d", n, i)
				}
				f.clk.Advance(tt.want)
				waitFor(t, fmt.Sprintf("heartbeat %d", i), func() bool { return f.api.count("heartbeat") == i })
			}
			for _, c := range f.api.callsOf("heartbeat") {
				if c.Body != tt.wantBody || c.Auth != "Bearer "+fakeToken("e1", 1) || c.Status != 200 {
					t.Fatalf("heartbeat %+v", c)
				}
			}
			close(b.release)
			waitFor(t, "the completion", func() bool { return f.api.count("complete") == 1 })
			f.shutdown(t)
			if n := f.api.count("heartbeat"); n != 3 {
				t.Fatalf("%d heartbeats after the work returned, want 3", n)
			}
		})
	}
}

func TestAsyncHandlerRetriesAFailedHeartbeatBeforeTheNextTick(t *testing.T) {
	t.Parallel()
	b := newBlocking()
	f := newAsyncFixture(t, Options{}, b.fn)
	f.api.script = func(c fakeCall, n int) (int, string, bool) {
		if c.Op == "heartbeat" && n == 1 {
			return http.StatusServiceUnavailable, "", false
		}
		return 0, "", false
	}
	f.deliver(t, "e1", 1, 30)
	recv(t, b.started)
	f.clk.Advance(f.clk.next(t))
	waitFor(t, "the first heartbeat", func() bool { return f.api.count("heartbeat") == 1 })
	retry := f.clk.next(t)
	if retry <= 0 || retry >= 10*time.Second {
		t.Fatalf("a failed heartbeat is sent again after %v, want less than the interval", retry)
	}
	f.clk.Advance(retry)
	waitFor(t, "the heartbeat sent again", func() bool { return f.api.count("heartbeat") == 2 })
	if d := f.clk.next(t); d != 10*time.Second {
		t.Fatalf("after a good heartbeat the next is in %v, want 10s", d)
	}
	if c := f.api.callsOf("heartbeat")[1]; c.Status != 200 {
		t.Fatalf("second heartbeat %+v", c)
	}
	var cerr *CallbackError
	if errs := f.asyncErrors(); len(errs) != 1 || !errors.As(errs[0], &cerr) || cerr.StatusCode != 503 {
		t.Fatalf("async errors %v, want the failed heartbeat", errs)
	}
	close(b.release)
	waitFor(t, "the completion", func() bool { return f.api.count("complete") == 1 })
}

func TestAsyncHandlerCompletion(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 2000)
	tests := []struct {
		name      string
		fn        AsyncFunc
		wantBody  string
		wantState State
	}{
		{"nil is success", func(context.Context, Delivery, *Reporter) error { return nil },
			`{"status":"success","hasMore":false}`, StateSucceeded},
		{"an error is failure with its text", func(context.Context, Delivery, *Reporter) error { return errors.New("database down") },
			`{"status":"failure","message":"database down","hasMore":false}`, StateFailed},
		{"the work's own completion, sent once", func(ctx context.Context, _ Delivery, r *Reporter) error {
			if _, err := r.Complete(ctx, Completion{Output: "3 rows", HasMore: true}); err != nil {
				return err
			}
			return errors.New("returned after completing: not sent")
		}, `{"status":"success","output":"3 rows","hasMore":true}`, StateSucceeded},
		{"a panic is failure", func(context.Context, Delivery, *Reporter) error { panic("boom") },
			`{"status":"failure","message":"panic: boom","hasMore":false}`, StateFailed},
		{"a long message is cut to fit", func(context.Context, Delivery, *Reporter) error { return errors.New(long) },
			`{"status":"failure","message":"` + long[:2*MaxMessageLen] + `","hasMore":false}`, StateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newAsyncFixture(t, Options{}, tt.fn)
			f.deliver(t, "e1", 1, 30)
			waitFor(t, "the completion", func() bool { return f.api.count("complete") >= 1 })
			f.shutdown(t) // the item's goroutines are done: nothing more will be sent
			calls := f.api.callsOf("complete")
			if len(calls) != 1 || calls[0].Body != tt.wantBody || calls[0].Status != 200 {
				t.Fatalf("completions %+v", calls)
			}
			if st := f.api.exec("e1").state; st != tt.wantState {
				t.Fatalf("state %s, want %s", st, tt.wantState)
			}
		})
	}
	if n := utf8.RuneCountInString(long[:2*MaxMessageLen]); n != MaxMessageLen {
		t.Fatalf("the test's cut is %d characters", n)
	}
}

func TestAsyncHandlerRetriesACompletion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		failures int
		status   int    // of each failure; 0 drops the connection
		problem  string // "" answers text/plain, as a proxy would
		minWait  time.Duration
	}{
		{"after a 503", 1, http.StatusServiceUnavailable, "", 0},
		{"after a 502 from a proxy", 1, http.StatusBadGateway, "", 0},
		{"after a dropped connection", 1, 0, "", 0},
		{"after two dropped connections", 2, 0, "", 0},
		{"after a 429, honouring Retry-After", 1, http.StatusTooManyRequests, "", 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newAsyncFixture(t, Options{}, func(context.Context, Delivery, *Reporter) error { return nil })
			f.api.script = func(c fakeCall, n int) (int, string, bool) {
				if c.Op == "complete" && n <= tt.failures {
					return tt.status, tt.problem, tt.status == 0
				}
				return 0, "", false
			}
			f.deliver(t, "e1", 1, 30)
			waits := advanceUntil(t, f.clk, "the completion to land", func() bool {
				return f.api.exec("e1").state == StateSucceeded
			})
			f.shutdown(t)
			calls := f.api.callsOf("complete")
			if len(calls) != tt.failures+1 || calls[len(calls)-1].Status != 200 {
				t.Fatalf("completions %+v", calls)
			}
			for _, c := range calls {
				if c.Body != `{"status":"success","hasMore":false}` {
					t.Fatalf("completion sent again differently: %+v", c)
				}
			}
			if tt.minWait > 0 && !containsAtLeast(waits, tt.minWait) {
				t.Fatalf("waits %v, want one of at least %v", waits, tt.minWait)
			}
			if errs := f.asyncErrors(); len(errs) != 0 {
				t.Fatalf("async errors %v", errs)
			}
		})
	}
}

func containsAtLeast(waits []time.Duration, d time.Duration) bool {
	for _, w := range waits {
		if w >= d {
			return true
		}
	}
	return false
}

func TestAsyncHandlerFinalCompletionAnswerStopsRetrying(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		problem string
		want    error
	}{
		{http.StatusConflict, "lease-expired", ErrLeaseExpired},
		{http.StatusConflict, "already-completed", ErrAlreadyCompleted},
		{http.StatusConflict, "stale-attempt", ErrStaleAttempt},
		{http.StatusConflict, "execution-cancelled", ErrExecutionCancelled},
		{http.StatusUnauthorized, "callback-token", ErrCallbackToken},
		{http.StatusNotFound, "not-found", ErrExecutionNotFound},
		{http.StatusNotFound, "", ErrExecutionNotFound},
		{http.StatusBadRequest, "invalid", ErrInvalidCallback},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.problem), func(t *testing.T) {
			t.Parallel()
			f := newAsyncFixture(t, Options{}, func(context.Context, Delivery, *Reporter) error { return nil })
			f.api.script = func(c fakeCall, _ int) (int, string, bool) {
				if c.Op == "complete" {
					return tt.status, tt.problem, false
				}
				return 0, "", false
			}
			f.deliver(t, "e1", 1, 30)
			waitFor(t, "the completion to be given up", func() bool { return f.hasError(tt.want) })
			f.shutdown(t)
			if n := f.api.count("complete"); n != 1 {
				t.Fatalf("%d completions sent, want 1", n)
			}
			var cerr *CallbackError
			errs := f.asyncErrors()
			if len(errs) != 1 || !errors.As(errs[0], &cerr) || cerr.StatusCode != tt.status || cerr.Op != "complete" {
				t.Fatalf("async errors %v", errs)
			}
		})
	}
}

func TestAsyncHandlerHeartbeatAnswerEndsTheWork(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(f *asyncFixture)
		want  error
	}{
		{"state CANCELLED", func(f *asyncFixture) { f.api.setState("e1", StateCancelled) }, ErrNotRunning},
		{"state SUCCEEDED (completed elsewhere)", func(f *asyncFixture) { f.api.setState("e1", StateSucceeded) }, ErrNotRunning},
		{"409 lease-expired", func(f *asyncFixture) { f.api.setState("e1", StateRetrying) }, ErrLeaseExpired},
		{"409 execution-cancelled", func(f *asyncFixture) { f.scriptHeartbeat(http.StatusConflict, "execution-cancelled") }, ErrExecutionCancelled},
		{"409 stale-attempt", func(f *asyncFixture) { f.api.send("e1", 2) }, ErrStaleAttempt},
		{"401 callback-token", func(f *asyncFixture) { f.scriptHeartbeat(http.StatusUnauthorized, "callback-token") }, ErrCallbackToken},
		{"404 not-found", func(f *asyncFixture) { f.scriptHeartbeat(http.StatusNotFound, "not-found") }, ErrExecutionNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBlocking()
			f := newAsyncFixture(t, Options{}, b.fn)
			f.deliver(t, "e1", 1, 30)
			recv(t, b.started)
			tt.setup(f)
			f.clk.Advance(f.clk.next(t))
			if cause := recv(t, b.causes); !errors.Is(cause, tt.want) {
				t.Fatalf("context cause %v, want %v", cause, tt.want)
			}
			f.shutdown(t)
			if n := f.api.count("complete"); n != 0 {
				t.Fatalf("%d completions of an item that ended under the work", n)
			}
			if n := f.api.count("heartbeat"); n != 1 {
				t.Fatalf("%d heartbeats, want 1", n)
			}
			if !f.hasError(tt.want) {
				t.Fatalf("async errors %v", f.asyncErrors())
			}
		})
	}
}

func (f *asyncFixture) scriptHeartbeat(status int, problem string) {
	f.api.mu.Lock()
	defer f.api.mu.Unlock()
	f.api.script = func(c fakeCall, _ int) (int, string, bool) {
		if c.Op == "heartbeat" {
			return status, problem, false
		}
		return 0, "", false
	}
}

func TestAsyncHandlerForgetsAnItemThatEndedUnderIt(t *testing.T) {
	t.Parallel()
	b := newBlocking()
	f := newAsyncFixture(t, Options{}, b.fn)
	f.deliver(t, "e1", 1, 30)
	recv(t, b.started)
	f.api.setState("e1", StateRetrying) // the lease ran out: heartbeats answer 409 lease-expired
	f.clk.Advance(f.clk.next(t))
	recv(t, b.causes)
	f.deliver(t, "e1", 2, 30) // the retry: a new attempt runs the work anew
	recv(t, b.started)
	close(b.release)
	waitFor(t, "the completion", func() bool { return f.api.exec("e1").state == StateSucceeded })
	if c := f.api.callsOf("complete"); len(c) != 1 || c[0].Attempt != 2 || b.count() != 2 {
		t.Fatalf("completions %+v after %d runs", c, b.count())
	}
}

func TestAsyncHandlerDuplicates(t *testing.T) {
	t.Parallel()
	t.Run("the same attempt again is answered 202 and not run", func(t *testing.T) {
		t.Parallel()
		b := newBlocking()
		f := newAsyncFixture(t, Options{}, b.fn)
		f.deliver(t, "e1", 1, 30)
		recv(t, b.started)
		f.deliver(t, "e1", 1, 30)
		close(b.release)
		waitFor(t, "the completion", func() bool { return f.api.count("complete") == 1 })
		f.deliver(t, "e1", 1, 30) // after the completion too
		f.shutdown(t)
		f.mu.Lock()
		dups := f.dups
		f.mu.Unlock()
		if b.count() != 1 || dups != 2 || f.api.count("complete") != 1 {
			t.Fatalf("%d runs, %d duplicates, %d completions", b.count(), dups, f.api.count("complete"))
		}
	})
	t.Run("a later attempt's token is used from then on", func(t *testing.T) {
		t.Parallel()
		b := newBlocking()
		f := newAsyncFixture(t, Options{}, b.fn)
		f.deliver(t, "e1", 1, 30)
		recv(t, b.started)
		f.deliver(t, "e1", 2, 30) // ejserver did not hear the 202 and sent the item again
		f.clk.Advance(f.clk.next(t))
		waitFor(t, "a heartbeat", func() bool { return f.api.count("heartbeat") == 1 })
		close(b.release)
		waitFor(t, "the completion", func() bool { return f.api.count("complete") == 1 })
		hb, done := f.api.callsOf("heartbeat")[0], f.api.callsOf("complete")[0]
		if hb.Attempt != 2 || hb.Status != 200 || done.Attempt != 2 || done.Status != 200 || b.count() != 1 {
			t.Fatalf("heartbeat %+v, completion %+v, %d runs", hb, done, b.count())
		}
	})
	t.Run("a later attempt that comes while a heartbeat is on the way", func(t *testing.T) {
		t.Parallel()
		b := newBlocking()
		f := newAsyncFixture(t, Options{}, b.fn)
		f.deliver(t, "e1", 1, 30)
		recv(t, b.started)
		var once sync.Once
		f.api.before = func(c fakeCall) {
			once.Do(func() { _, _ = f.post("e1", 2, 30) }) // attempt 2 lands before attempt 1's heartbeat is answered
		}
		f.clk.Advance(f.clk.next(t))
		waitFor(t, "the heartbeat sent again", func() bool { return f.api.count("heartbeat") == 2 })
		hbs := f.api.callsOf("heartbeat")
		if hbs[0].Attempt != 1 || hbs[0].Status != http.StatusConflict || hbs[1].Attempt != 2 || hbs[1].Status != 200 {
			t.Fatalf("heartbeats %+v", hbs)
		}
		close(b.release)
		waitFor(t, "the completion", func() bool { return f.api.exec("e1").state == StateSucceeded })
		if b.count() != 1 || len(b.causes) != 0 {
			t.Fatalf("%d runs, %d cancellations", b.count(), len(b.causes))
		}
	})
	t.Run("a later attempt after the completion was refused gets it again", func(t *testing.T) {
		t.Parallel()
		b := newBlocking()
		f := newAsyncFixture(t, Options{}, b.fn)
		f.deliver(t, "e1", 1, 30)
		recv(t, b.started)
		f.api.setState("e1", StateRetrying) // the lease ran out, unnoticed: no heartbeat was due
		close(b.release)
		waitFor(t, "the refused completion", func() bool { return f.hasError(ErrLeaseExpired) })
		f.deliver(t, "e1", 2, 30) // the retry
		waitFor(t, "the completion sent again", func() bool { return f.api.exec("e1").state == StateSucceeded })
		calls := f.api.callsOf("complete")
		if len(calls) != 2 || calls[1].Attempt != 2 || calls[1].Body != calls[0].Body || b.count() != 1 {
			t.Fatalf("completions %+v after %d runs", calls, b.count())
		}
	})
}

func TestAsyncHandlerShutdown(t *testing.T) {
	t.Parallel()
	t.Run("waits for the running work, refusing new deliveries", func(t *testing.T) {
		t.Parallel()
		b := newBlocking()
		f := newAsyncFixture(t, Options{}, b.fn)
		f.deliver(t, "e1", 1, 30)
		recv(t, b.started)
		stopped := make(chan error, 1)
		go func() { stopped <- f.recv.Shutdown(context.Background()) }()
		waitFor(t, "Shutdown to begin", func() bool {
			f.recv.mu.Lock()
			defer f.recv.mu.Unlock()
			return f.recv.closing
		})
		if code, err := f.post("e2", 1, 30); code != http.StatusServiceUnavailable || err != nil {
			t.Fatalf("a delivery during Shutdown: %d %v", code, err)
		}
		if len(stopped) != 0 {
			t.Fatal("Shutdown returned while the work runs")
		}
		close(b.release)
		if err := recv(t, stopped); err != nil {
			t.Fatal(err)
		}
		if f.api.exec("e1").state != StateSucceeded || b.count() != 1 {
			t.Fatalf("state %s after %d runs", f.api.exec("e1").state, b.count())
		}
	})
	t.Run("when its context ends, cancels the work and sends nothing more", func(t *testing.T) {
		t.Parallel()
		b := newBlocking()
		f := newAsyncFixture(t, Options{}, b.fn)
		f.deliver(t, "e1", 1, 30)
		recv(t, b.started)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := f.recv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown = %v", err)
		}
		if cause := recv(t, b.causes); !errors.Is(cause, ErrShutdown) {
			t.Fatalf("cause %v", cause)
		}
		if n := f.api.count(""); n != 0 {
			t.Fatalf("%d callbacks", n)
		}
	})
}

func TestAsyncHandlerRequests(t *testing.T) {
	t.Parallel()
	t.Run("a delivery without a callback is refused", func(t *testing.T) {
		t.Parallel()
		f := newAsyncFixture(t, Options{}, func(context.Context, Delivery, *Reporter) error { return nil })
		resp, err := f.client.Post(f.srv.URL, "application/json", strings.NewReader(body("e1")))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		f.mu.Lock()
		rejects := f.rejects
		f.mu.Unlock()
		if resp.StatusCode != http.StatusBadRequest || len(rejects) != 1 || !errors.Is(rejects[0], ErrNoCallback) {
			t.Fatalf("%d, rejections %v", resp.StatusCode, rejects)
		}
	})
	t.Run("the callback may come in the headers", func(t *testing.T) {
		t.Parallel()
		f := newAsyncFixture(t, Options{}, func(context.Context, Delivery, *Reporter) error { return nil })
		f.api.send("e1", 1)
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL, strings.NewReader(body("e1")))
		req.Header.Set(HeaderCallbackURL, f.api.url("e1"))
		req.Header.Set(HeaderCallbackToken, fakeToken("e1", 1))
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%d", resp.StatusCode)
		}
		waitFor(t, "the completion", func() bool { return f.api.exec("e1").state == StateSucceeded })
	})
	t.Run("signatures are verified as by Handler", func(t *testing.T) {
		t.Parallel()
		f := newAsyncFixture(t, Options{Secret: secret}, func(context.Context, Delivery, *Reporter) error { return nil })
		code, err := f.post("e1", 1, 30)
		if err != nil || code != http.StatusUnauthorized {
			t.Fatalf("unsigned: %d %v", code, err)
		}
		ts := f.clk.Now().Unix()
		b := asyncBody(f.api, "e2", 1, 30)
		f.api.send("e2", 1)
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL, strings.NewReader(b))
		req.Header = headers("e2", ts, sign(secret, "e2", ts, b))
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("signed: %d", resp.StatusCode)
		}
		waitFor(t, "the completion", func() bool { return f.api.exec("e2").state == StateSucceeded })
	})
}

// The lease view decodes as the contract shows it.
func TestLeaseDecodes(t *testing.T) {
	t.Parallel()
	const answer = `{"executionId":"e1","jobName":"settle","shardingItem":2,"attempt":1,"state":"RUNNING",
 "progress":40,"message":"40% of rows","startedAt":"2026-11-21T10:00:00Z","acceptedAt":"2026-11-21T10:00:01Z",
 "heartbeatAt":"2026-11-21T10:00:20Z","leaseExpiresAt":"2026-11-21T10:01:20Z","maxDurationAt":"2026-11-22T10:00:00Z",
 "endedAt":null}`
	var l Lease
	if err := json.Unmarshal([]byte(answer), &l); err != nil {
		t.Fatal(err)
	}
	if l.State != StateRunning || l.Progress != 40 || !l.EndedAt.IsZero() ||
		!l.LeaseExpiresAt.Equal(time.Date(2026, 11, 21, 10, 1, 20, 0, time.UTC)) {
		t.Fatalf("%+v", l)
	}
}
