package receiver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeClock is a clock that moves only when told. Every timer made is announced on sleeps, so that a test
// sees how long the code wants to wait and can advance exactly that far.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	sleeps chan time.Duration
}

type fakeTimer struct {
	clock   *fakeClock
	at      time.Time
	ch      chan time.Time
	pending bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), sleeps: make(chan time.Duration, 1000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) timer {
	c.mu.Lock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1), pending: true}
	if d <= 0 {
		t.pending = false
		t.ch <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	c.mu.Unlock()
	c.sleeps <- d
	return t
}

// Advance moves time forward by d and fires every timer due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.pending {
			continue
		}
		if !t.at.After(c.now) {
			t.pending = false
			t.ch <- c.now
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
}

// next waits for the next timer to be made and returns its duration.
func (c *fakeClock) next(t *testing.T) time.Duration {
	t.Helper()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	select {
	case d := <-c.sleeps:
		return d
	case <-guard.C:
		t.Fatal("no timer was made within 10s")
		return 0
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.pending
	t.pending = false
	return was
}

// waitFor polls cond until it holds, failing the test after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling a condition, not waiting for it to happen
	}
}

// recv receives from ch, failing the test after 10s.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	select {
	case v := <-ch:
		return v
	case <-guard.C:
		t.Fatal("nothing received within 10s")
		var zero T
		return zero
	}
}

// advanceUntil advances clk through every timer made (back-off waits, heartbeat ticks) until cond holds;
// it returns the waits it went through.
func advanceUntil(t *testing.T, clk *fakeClock, what string, cond func() bool) []time.Duration {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var waits []time.Duration
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		select {
		case d := <-clk.sleeps:
			waits = append(waits, d)
			clk.Advance(d)
		case <-time.After(time.Millisecond):
		}
	}
	return waits
}

// fakeAPI is ejserver's callback API as docs/long-running.md states it: POST
// /api/v1/executions/{id}/heartbeat and /complete, authorised by the attempt's token (Bearer or
// Ejserver-Callback-Token), answering the lease view or problem+json.
type fakeAPI struct {
	srv *httptest.Server

	mu    sync.Mutex
	execs map[string]*fakeExec
	calls []fakeCall
	// script, if set, may answer a call instead of the contract: it returns the status (0 for "no, follow
	// the contract"), a problem type and whether to drop the connection without an answer.
	script func(c fakeCall, n int) (status int, problem string, drop bool)
	// before, if set, runs before a call is answered (outside the lock).
	before func(c fakeCall)
}

type fakeExec struct {
	attempt  int // the current attempt: tokens of earlier ones are stale
	state    State
	progress int
	message  string
	done     *Completion
}

type fakeCall struct {
	Op, Exec string
	Attempt  int // of the token
	Auth     string
	Body     string
	Status   int // what it was answered (0: dropped)
}

func newFakeAPI(t *testing.T) *fakeAPI {
	a := &fakeAPI{execs: make(map[string]*fakeExec)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/executions/{id}/{op}", a.serve)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// token is the callbackToken of an execution's attempt ("ejcb1.{attempt}.{mac}").
func fakeToken(exec string, attempt int) string {
	return fmt.Sprintf("ejcb1.%d.mac-%s", attempt, exec)
}

func (a *fakeAPI) url(exec string) string { return a.srv.URL + "/api/v1/executions/" + exec }

// send makes attempt the execution's current one, as ejserver does when it POSTs the item.
func (a *fakeAPI) send(exec string, attempt int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.execs[exec]
	if !ok {
		e = &fakeExec{state: StateRunning}
		a.execs[exec] = e
	}
	e.attempt = attempt
	if e.state == StateRetrying {
		e.state = StateRunning
	}
}

func (a *fakeAPI) setState(exec string, s State) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.execs[exec].state = s
}

func (a *fakeAPI) exec(exec string) fakeExec {
	a.mu.Lock()
	defer a.mu.Unlock()
	return *a.execs[exec]
}

// callsOf returns the calls of op ("" for all).
func (a *fakeAPI) callsOf(op string) []fakeCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []fakeCall
	for _, c := range a.calls {
		if op == "" || c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

func (a *fakeAPI) count(op string) int { return len(a.callsOf(op)) }

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := fakeCall{Op: r.PathValue("op"), Exec: r.PathValue("id"), Body: string(body), Auth: r.Header.Get("Authorization")}
	token, ok := strings.CutPrefix(c.Auth, "Bearer ")
	if !ok {
		token = r.Header.Get(HeaderCallbackToken)
	}
	if parts := strings.Split(token, "."); len(parts) == 3 && parts[0] == "ejcb1" && parts[2] == "mac-"+c.Exec {
		c.Attempt, _ = strconv.Atoi(parts[1])
	}
	if a.before != nil {
		a.before(c)
	}

	a.mu.Lock()
	n := 0
	for _, p := range a.calls {
		if p.Op == c.Op {
			n++
		}
	}
	status, problem, drop := 0, "", false
	if a.script != nil {
		status, problem, drop = a.script(c, n+1)
	}
	var lease Lease
	if !drop && status == 0 {
		status, problem, lease = a.contract(c)
	}
	if !drop {
		c.Status = status
	}
	a.calls = append(a.calls, c)
	a.mu.Unlock()

	switch {
	case drop:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	case status == http.StatusOK:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(lease)
	default:
		if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "2")
		}
		if problem == "" {
			http.Error(w, http.StatusText(status), status) // as a proxy would answer
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "https://ejserver.dev/problems/" + problem,
			"title": problem, "status": status, "detail": "fake: " + problem})
	}
}

// contract answers c as docs/long-running.md says; a.mu is held.
func (a *fakeAPI) contract(c fakeCall) (int, string, Lease) {
	e, ok := a.execs[c.Exec]
	if !ok {
		return http.StatusNotFound, "not-found", Lease{}
	}
	switch {
	case c.Attempt == 0 || c.Attempt > e.attempt:
		return http.StatusUnauthorized, "callback-token", Lease{}
	case c.Attempt < e.attempt:
		return http.StatusConflict, "stale-attempt", Lease{}
	}
	switch c.Op {
	case "heartbeat":
		var hb struct {
			Progress *int    `json:"progress"`
			Message  *string `json:"message"`
		}
		if c.Body != "" && json.Unmarshal([]byte(c.Body), &hb) != nil ||
			hb.Progress != nil && (*hb.Progress < 0 || *hb.Progress > 100) ||
			hb.Message != nil && utf8.RuneCountInString(*hb.Message) > MaxMessageLen {
			return http.StatusBadRequest, "invalid", Lease{}
		}
		switch e.state {
		case StateExpired, StateRetrying:
			return http.StatusConflict, "lease-expired", Lease{}
		case StateRunning:
			if hb.Progress != nil {
				e.progress = *hb.Progress
			}
			if hb.Message != nil {
				e.message = *hb.Message
			}
		}
	case "complete":
		var done Completion
		if json.Unmarshal([]byte(c.Body), &done) != nil || done.Status != StatusSuccess && done.Status != StatusFailure ||
			utf8.RuneCountInString(done.Output) > MaxOutputLen {
			return http.StatusBadRequest, "invalid", Lease{}
		}
		switch e.state {
		case StateExpired, StateRetrying:
			return http.StatusConflict, "lease-expired", Lease{}
		case StateCancelled:
			return http.StatusConflict, "execution-cancelled", Lease{}
		case StateSucceeded, StateFailed:
			if *e.done != done {
				return http.StatusConflict, "already-completed", Lease{}
			}
		default:
			e.done, e.state = &done, StateSucceeded
			if done.Status == StatusFailure {
				e.state = StateFailed
			}
			e.message = done.Message
		}
	default:
		return http.StatusNotFound, "not-found", Lease{}
	}
	return http.StatusOK, "", Lease{ExecutionID: c.Exec, JobName: "settle", ShardingItem: 2, Attempt: e.attempt,
		State: e.state, Progress: e.progress, Message: e.message}
}
