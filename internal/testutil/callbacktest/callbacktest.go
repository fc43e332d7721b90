// Package callbacktest fakes a peer's executions endpoints for tests of the callers (the Go client, the CLI)
// while the server side of long-running items is built: the callbacks exactly as docs/long-running.md
// specifies them (tokens, leases, states, problem types) and the reads of the executions API
// (GET /api/v1/executions and /api/v1/executions/{id}).
//
// Time is the fake's own: it starts at Start and moves only with Advance, so a test expires a lease without
// sleeping. Leases are judged when a callback arrives, as a lease watcher that has just run would have left them.
//
//	accepted (RUNNING) --heartbeat--> RUNNING (lease renewed, never past maxDurationAt)
//	RUNNING --complete success|failure--> SUCCEEDED | FAILED (the same completion again answers 200)
//	RUNNING --lease runs out--> EXPIRED (callbacks: 409 lease-expired)   Retry: the next attempt, RUNNING
//	any --Cancel--> CANCELLED (callbacks: 409 execution-cancelled)
package callbacktest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Start is the fake's time when it starts.
var Start = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// The contract's bounds: a heartbeat's message, a completion's output.
const (
	MaxMessage = 1024
	MaxOutput  = 4096
)

const problemBase = "https://ejserver.dev/problems/"

// Execution is one execution as the executions API shows it, with the async fields of accepted items.
type Execution struct {
	ID                 string    `json:"id"`
	JobName            string    `json:"jobName"`
	TaskID             string    `json:"taskId"`
	ShardingItem       int       `json:"shardingItem"`
	ShardingTotalCount int       `json:"shardingTotalCount"`
	Source             string    `json:"source"`
	InstanceID         string    `json:"instanceId"`
	IP                 string    `json:"ip"`
	Hostname           string    `json:"hostname"`
	ScheduledAt        time.Time `json:"scheduledAt"`
	StartedAt          time.Time `json:"startedAt"`
	CompletedAt        time.Time `json:"completedAt,omitzero"`
	Success            bool      `json:"success"`
	StatusCode         int       `json:"statusCode,omitempty"`
	Attempts           int       `json:"attempts"`
	DurationMs         int64     `json:"durationMs"`
	FailureCause       string    `json:"failureCause,omitempty"`
	ResponseExcerpt    string    `json:"responseExcerpt,omitempty"`
	Async              bool      `json:"async,omitempty"`
	State              string    `json:"state,omitempty"`
	Progress           *int      `json:"progress,omitempty"`
	Message            string    `json:"message,omitempty"`
	HeartbeatAt        time.Time `json:"heartbeatAt,omitzero"`
	LeaseExpiresAt     time.Time `json:"leaseExpiresAt,omitzero"`
	Output             string    `json:"output,omitempty"`
}

// Request is one request the fake received.
type Request struct {
	Method, Path, Query string
	// Authorization and CallbackToken are the Authorization and Ejserver-Callback-Token headers.
	Authorization, CallbackToken string
	Body                         string
}

// Accepted is what an accepted item's body carries for its callbacks.
type Accepted struct {
	ID, CallbackURL, Token string
}

type record struct {
	Execution
	attempt                   int
	lease                     time.Duration
	acceptedAt, maxDurationAt time.Time
	hasMore                   bool
}

// Server is the fake peer. Its zero value is not usable: call New.
type Server struct {
	*httptest.Server
	// APIToken is the bearer token the reads require ("" requires none). Callbacks never take it.
	APIToken string

	mu       sync.Mutex
	now      time.Time
	key      []byte
	recs     map[string]*record
	order    []string // insertion order; lists sort by start
	requests []Request
	seq      int
}

// New starts a fake peer, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{now: Start, key: make([]byte, 32), recs: map[string]*record{}}
	rand.Read(s.key)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Advance moves the fake's clock.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// Add stores an execution as given (a synchronous one, an old record without state...).
func (s *Server) Add(e Execution) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[e.ID] = &record{Execution: e, attempt: max(1, e.Attempts)}
	s.order = append(s.order, e.ID)
}

// Accept records that job's item was answered 202 now, with a lease of leaseSeconds and a maximum duration
// of maxDuration, and returns what the item's body carried.
func (s *Server) Accept(job string, item, leaseSeconds int, maxDuration time.Duration) Accepted {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("0193e0a1-0000-7000-8000-%012d", s.seq)
	lease := time.Duration(leaseSeconds) * time.Second
	r := &record{Execution: Execution{ID: id, JobName: job, ShardingItem: item, ShardingTotalCount: item + 1,
		Source: "NORMAL_TRIGGER", InstanceID: "10.0.0.7@-@4242", IP: "10.0.0.7", ScheduledAt: s.now, StartedAt: s.now,
		Attempts: 1, StatusCode: http.StatusAccepted, Async: true, State: "RUNNING", LeaseExpiresAt: s.now.Add(lease)},
		attempt: 1, lease: lease, acceptedAt: s.now, maxDurationAt: s.now.Add(maxDuration)}
	s.recs[id] = r
	s.order = append(s.order, id)
	return Accepted{ID: id, CallbackURL: s.URL + "/api/v1/executions/" + id, Token: s.token(id, 1)}
}

// Retry is the lease watcher POSTing the item again: the next attempt, RUNNING with a new lease. It returns
// the new attempt's token.
func (s *Server) Retry(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[id]
	r.attempt++
	r.Attempts = r.attempt
	r.State, r.CompletedAt, r.Success = "RUNNING", time.Time{}, false
	r.LeaseExpiresAt = s.now.Add(r.lease)
	return s.token(id, r.attempt)
}

// Cancel is the job being deleted while the item runs.
func (s *Server) Cancel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[id]
	r.State, r.CompletedAt = "CANCELLED", s.now
}

// Get returns the execution's record as the API would show it now.
func (s *Server) Get(id string) (Execution, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[id]
	if !ok {
		return Execution{}, false
	}
	s.expire(r)
	return r.Execution, true
}

// HasMore reports whether the execution's completion asked for another iteration.
func (s *Server) HasMore(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recs[id].hasMore
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Token mints the token of an execution's attempt, as a peer would (for forged-token tests, mint one for
// another id).
func (s *Server) Token(id string, attempt int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token(id, attempt)
}

func (s *Server) token(id string, attempt int) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s.%d", id, attempt)
	return fmt.Sprintf("ejcb1.%d.%s", attempt, base64.RawURLEncoding.EncodeToString(m.Sum(nil)))
}

// attemptOf returns the attempt a token authorises for id, or 0 if it is malformed or not id's.
func (s *Server) attemptOf(id, token string) int {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != "ejcb1" {
		return 0
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 1 || !hmac.Equal([]byte(token), []byte(s.token(id, n))) {
		return 0
	}
	return n
}

// expire ends a RUNNING record whose lease has run out (no attempts left in the fake: Retry starts another).
func (s *Server) expire(r *record) {
	if r.State == "RUNNING" && !s.now.Before(r.LeaseExpiresAt) {
		r.State, r.CompletedAt, r.Success = "EXPIRED", r.LeaseExpiresAt, false
		r.FailureCause = "the lease ran out"
	}
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery,
		Authorization: req.Header.Get("Authorization"), CallbackToken: req.Header.Get("Ejserver-Callback-Token"), Body: string(body)})

	rest, ok := strings.CutPrefix(req.URL.Path, "/api/v1/executions")
	if !ok {
		problem(w, http.StatusNotFound, "no-route", "no such API path", "")
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case req.Method == http.MethodPost && len(parts) == 2 && (parts[1] == "heartbeat" || parts[1] == "complete"):
		s.callback(w, req, parts[0], parts[1], body)
	case req.Method == http.MethodGet && rest == "":
		if s.authorized(w, req) {
			s.list(w, req)
		}
	case req.Method == http.MethodGet && len(parts) == 1:
		if !s.authorized(w, req) {
			return
		}
		r, ok := s.recs[parts[0]]
		if !ok {
			problem(w, http.StatusNotFound, "not_found", fmt.Sprintf("no execution %q", parts[0]), "")
			return
		}
		s.expire(r)
		reply(w, r.Execution)
	default:
		problem(w, http.StatusMethodNotAllowed, "method-not-allowed", "method not allowed", "")
	}
}

func (s *Server) authorized(w http.ResponseWriter, req *http.Request) bool {
	if s.APIToken != "" && req.Header.Get("Authorization") != "Bearer "+s.APIToken {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ejserver"`)
		problem(w, http.StatusUnauthorized, "unauthorized", "the bearer token is not valid", "")
		return false
	}
	return true
}

func (s *Server) callback(w http.ResponseWriter, req *http.Request, id, verb string, body []byte) {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		token = req.Header.Get("Ejserver-Callback-Token")
	}
	attempt := s.attemptOf(id, token)
	if attempt == 0 {
		problem(w, http.StatusUnauthorized, "callback-token", "no callback token, or not this execution's", "")
		return
	}
	r, ok := s.recs[id]
	if !ok {
		problem(w, http.StatusNotFound, "not-found", fmt.Sprintf("no execution %q is known", id), "")
		return
	}
	if attempt > r.attempt {
		problem(w, http.StatusUnauthorized, "callback-token", "the token is of no attempt of this execution", "")
		return
	}
	var hb heartbeatBody
	var done completeBody
	if field, msg := decode(verb, body, &hb, &done); field != "" {
		problem(w, http.StatusBadRequest, "invalid", field+": "+msg, field)
		return
	}
	s.expire(r)
	switch {
	case r.State == "CANCELLED":
		problem(w, http.StatusConflict, "execution-cancelled", "the job was deleted while the item ran", "")
		return
	case attempt < r.attempt:
		problem(w, http.StatusConflict, "stale-attempt", fmt.Sprintf("the token is of attempt %d; attempt %d is current", attempt, r.attempt), "")
		return
	case r.State == "EXPIRED":
		problem(w, http.StatusConflict, "lease-expired", "the lease ran out at "+r.LeaseExpiresAt.Format(time.RFC3339), "")
		return
	case r.State != "RUNNING":
		if verb == "complete" && r.State == map[string]string{"success": "SUCCEEDED", "failure": "FAILED"}[done.Status] {
			s.leaseView(w, r) // the same completion again
			return
		}
		problem(w, http.StatusConflict, "already-completed", "the execution ended "+r.State, "")
		return
	}
	if verb == "heartbeat" {
		if hb.Progress != nil {
			p := *hb.Progress
			r.Progress = &p
		}
		if hb.Message != "" {
			r.Message = hb.Message
		}
		r.HeartbeatAt = s.now
		r.LeaseExpiresAt = s.now.Add(r.lease)
		if r.LeaseExpiresAt.After(r.maxDurationAt) {
			r.LeaseExpiresAt = r.maxDurationAt
		}
	} else {
		r.State, r.Success = "FAILED", done.Status == "success"
		if r.Success {
			r.State = "SUCCEEDED"
		}
		r.CompletedAt, r.DurationMs = s.now, s.now.Sub(r.StartedAt).Milliseconds()
		r.Message, r.Output, r.hasMore = done.Message, done.Output, done.HasMore
	}
	s.leaseView(w, r)
}

type heartbeatBody struct {
	Progress *int   `json:"progress"`
	Message  string `json:"message"`
}

type completeBody struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Output  string `json:"output"`
	HasMore bool   `json:"hasMore"`
}

// decode reads a callback's body strictly (an unknown field is a client bug worth a 400 in tests) and checks
// the contract's bounds; it returns the offending field and why.
func decode(verb string, body []byte, hb *heartbeatBody, done *completeBody) (field, msg string) {
	var into any = hb
	if verb == "complete" {
		into = done
	}
	if strings.TrimSpace(string(body)) != "" {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			return "body", err.Error()
		}
	}
	if verb == "heartbeat" {
		switch {
		case hb.Progress != nil && (*hb.Progress < 0 || *hb.Progress > 100):
			return "progress", fmt.Sprintf("must be between 0 and 100, got %d", *hb.Progress)
		case utf8.RuneCountInString(hb.Message) > MaxMessage:
			return "message", fmt.Sprintf("at most %d characters", MaxMessage)
		}
		return "", ""
	}
	switch {
	case done.Status != "success" && done.Status != "failure":
		return "status", fmt.Sprintf("must be success or failure, got %q", done.Status)
	case utf8.RuneCountInString(done.Output) > MaxOutput:
		return "output", fmt.Sprintf("at most %d characters", MaxOutput)
	}
	return "", ""
}

func (s *Server) leaseView(w http.ResponseWriter, r *record) {
	t := func(x time.Time) any {
		if x.IsZero() {
			return nil
		}
		return x
	}
	reply(w, map[string]any{"executionId": r.ID, "jobName": r.JobName, "shardingItem": r.ShardingItem,
		"attempt": r.attempt, "state": r.State, "progress": r.Progress, "message": r.Message,
		"startedAt": r.StartedAt, "acceptedAt": t(r.acceptedAt), "heartbeatAt": t(r.HeartbeatAt),
		"leaseExpiresAt": t(r.LeaseExpiresAt), "maxDurationAt": t(r.maxDurationAt), "endedAt": t(r.CompletedAt)})
}

// list answers GET /api/v1/executions with the filters the API has (job, item, success, cursor, limit),
// newest start first; the cursor is the offset of the next page.
func (s *Server) list(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			problem(w, http.StatusBadRequest, "invalid", "limit: must be between 1 and 500", "limit")
			return
		}
		limit = n
	}
	var all []Execution
	for i := len(s.order) - 1; i >= 0; i-- {
		r := s.recs[s.order[i]]
		s.expire(r)
		e := r.Execution
		if v := q.Get("job"); v != "" && e.JobName != v {
			continue
		}
		if v := q.Get("item"); v != "" && strconv.Itoa(e.ShardingItem) != v {
			continue
		}
		if v := q.Get("success"); v != "" && (e.CompletedAt.IsZero() || strconv.FormatBool(e.Success) != v) {
			continue
		}
		all = append(all, e)
	}
	slices.SortStableFunc(all, func(a, b Execution) int { return b.StartedAt.Compare(a.StartedAt) })
	from, _ := strconv.Atoi(q.Get("cursor"))
	from = min(from, len(all))
	to := min(from+limit, len(all))
	out := map[string]any{"items": append([]Execution{}, all[from:to]...)}
	if to < len(all) {
		out["nextCursor"] = strconv.Itoa(to)
	}
	reply(w, out)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int, typ, detail, field string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	p := map[string]any{"type": problemBase + typ, "title": http.StatusText(status), "status": status, "detail": detail}
	if field != "" {
		p["field"] = field
		p["errors"] = []map[string]string{{"field": field, "message": strings.TrimPrefix(detail, field+": ")}}
	}
	json.NewEncoder(w).Encode(p)
}
