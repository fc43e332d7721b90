package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults of Callback.
const (
	// DefaultLease is the job's async.leaseSeconds when a delivery does not say (the contract's default).
	DefaultLease = 60 * time.Second
	// DefaultCallbackTimeout bounds each callback request.
	DefaultCallbackTimeout = 10 * time.Second
	// DefaultCallbackAttempts is how many times a callback is sent before giving up on a network error, a
	// timeout, 408, 429 or 5xx.
	DefaultCallbackAttempts = 8
	// DefaultCallbackBackoff is the first wait between attempts; it doubles (with jitter) up to
	// DefaultCallbackMaxBackoff: 8 attempts span about a minute.
	DefaultCallbackBackoff    = 500 * time.Millisecond
	DefaultCallbackMaxBackoff = 30 * time.Second
)

// Limits of the callback bodies (docs/long-running.md), in characters: longer values are cut to fit rather
// than refused by ejserver with 400.
const (
	MaxMessageLen = 1024
	MaxOutputLen  = 4096
)

// The headers that carry callbackUrl and callbackToken.
const (
	HeaderCallbackURL   = "Ejserver-Callback-Url"
	HeaderCallbackToken = "Ejserver-Callback-Token"
)

// State is an execution's state in a callback's answer. Anything but StateRunning means the receiver should
// stop working on the item.
type State string

// States of an execution.
const (
	StateRunning   State = "RUNNING"
	StateSucceeded State = "SUCCEEDED"
	StateFailed    State = "FAILED"
	// StateExpired: the lease ran out and no attempt was left.
	StateExpired State = "EXPIRED"
	// StateRetrying: the lease ran out; the item is being POSTed again (a new attempt, a new token).
	StateRetrying State = "RETRYING"
	// StateCancelled: the job was deleted.
	StateCancelled State = "CANCELLED"
)

// Lease is the execution's lease view, the answer to every callback.
type Lease struct {
	ExecutionID    string    `json:"executionId"`
	JobName        string    `json:"jobName"`
	ShardingItem   int       `json:"shardingItem"`
	Attempt        int       `json:"attempt"`
	State          State     `json:"state"`
	Progress       int       `json:"progress"`
	Message        string    `json:"message"`
	StartedAt      time.Time `json:"startedAt"`
	AcceptedAt     time.Time `json:"acceptedAt"`
	HeartbeatAt    time.Time `json:"heartbeatAt"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt"`
	MaxDurationAt  time.Time `json:"maxDurationAt"`
	// EndedAt is zero while the execution runs.
	EndedAt time.Time `json:"endedAt"`
}

// CompletionStatus is the outcome a completion reports.
type CompletionStatus string

// Outcomes of a completion.
const (
	StatusSuccess CompletionStatus = "success"
	StatusFailure CompletionStatus = "failure"
)

// Completion is the body of a complete callback.
type Completion struct {
	// Status is StatusSuccess or StatusFailure; empty means StatusSuccess.
	Status CompletionStatus `json:"status"`
	// Message is cut to MaxMessageLen characters.
	Message string `json:"message,omitempty"`
	// Output is an excerpt kept in the execution's history, cut to MaxOutputLen characters.
	Output string `json:"output,omitempty"`
	// HasMore asks for the item to be POSTed again with the next iteration (DATAFLOW jobs with
	// streamingProcess).
	HasMore bool `json:"hasMore"`
}

// Errors of callbacks. A *CallbackError unwraps to the one its problem type names, so
// errors.Is(err, ErrLeaseExpired) works on what Heartbeat and Complete return.
var (
	// ErrNoCallback: the delivery carries no usable callbackUrl and callbackToken (an ejserver from before
	// long-running items, or a request that did not come from ejserver).
	ErrNoCallback = errors.New("the delivery has no usable callbackUrl and callbackToken")
	// ErrInvalidCallback is 400 invalid: ejserver refused the callback's body.
	ErrInvalidCallback = errors.New("callback body refused as invalid")
	// ErrCallbackToken is 401 callback-token: no token, a forged one, or one of another execution.
	ErrCallbackToken = errors.New("callback token refused")
	// ErrExecutionNotFound is 404 not-found: ejserver knows no such execution.
	ErrExecutionNotFound = errors.New("execution not found")
	// ErrAlreadyCompleted is 409 already-completed: the execution ended with a different outcome.
	ErrAlreadyCompleted = errors.New("execution already completed with another outcome")
	// ErrLeaseExpired is 409 lease-expired: the lease ran out before this callback.
	ErrLeaseExpired = errors.New("lease expired")
	// ErrStaleAttempt is 409 stale-attempt: the token is of an earlier attempt than the current one.
	ErrStaleAttempt = errors.New("stale attempt: a later attempt of this item is current")
	// ErrExecutionCancelled is 409 execution-cancelled: the job was deleted while the item ran.
	ErrExecutionCancelled = errors.New("execution cancelled")
)

var problemErrors = map[string]error{
	"invalid":             ErrInvalidCallback,
	"callback-token":      ErrCallbackToken,
	"not-found":           ErrExecutionNotFound,
	"already-completed":   ErrAlreadyCompleted,
	"lease-expired":       ErrLeaseExpired,
	"stale-attempt":       ErrStaleAttempt,
	"execution-cancelled": ErrExecutionCancelled,
}

// CallbackError is a callback that ejserver (or something on the way) answered with an error status.
type CallbackError struct {
	// Op is "heartbeat" or "complete".
	Op         string
	StatusCode int
	// Type is the problem type without https://ejserver.dev/problems/ ("lease-expired", ...); empty when the
	// answer was not problem+json.
	Type   string
	Title  string
	Detail string
	// Field names the offending field of a 400 invalid.
	Field string
}

func (e *CallbackError) Error() string {
	s := fmt.Sprintf("%s callback: %d", e.Op, e.StatusCode)
	if e.Type != "" {
		s += " " + e.Type
	}
	switch {
	case e.Detail != "":
		s += ": " + e.Detail
	case e.Title != "":
		s += ": " + e.Title
	}
	return s
}

// Unwrap returns the sentinel error of the problem type (or, for an answer that is not problem+json, of the
// status: 400, 401, 404), or nil.
func (e *CallbackError) Unwrap() error {
	if err, ok := problemErrors[e.Type]; ok {
		return err
	}
	switch e.StatusCode {
	case http.StatusBadRequest:
		return ErrInvalidCallback
	case http.StatusUnauthorized:
		return ErrCallbackToken
	case http.StatusNotFound:
		return ErrExecutionNotFound
	}
	return nil
}

// Temporary reports whether sending the callback again may succeed: 408, 429 and 5xx. Every other error
// status is final (401, 404 and 409 say the attempt is over for this token).
func (e *CallbackError) Temporary() bool {
	return e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests ||
		e.StatusCode >= 500
}

// Callback reports the progress and the end of one accepted item to ejserver: the client side of
// docs/long-running.md, for a receiver that runs its work itself (AsyncHandler uses it for you).
//
// Heartbeat and Complete send again, with back-off, on a network error, a timeout, 408, 429 (honouring
// Retry-After) and 5xx, up to MaxAttempts times; any other answer is final. A Callback is safe for
// concurrent use once its fields are set.
type Callback struct {
	// URL is the execution's callback base (callbackUrl): the callbacks go to URL/heartbeat and URL/complete.
	URL string
	// Token is the attempt's callbackToken, sent as Authorization: Bearer.
	Token string
	// Lease is how long the item lives without a heartbeat (leaseSeconds); DefaultLease if 0.
	Lease time.Duration

	// Client sends the callbacks; http.DefaultClient if nil.
	Client *http.Client
	// Timeout bounds each request; DefaultCallbackTimeout if 0.
	Timeout time.Duration
	// MaxAttempts bounds how many times one callback is sent; DefaultCallbackAttempts if 0.
	MaxAttempts int
	// Backoff is the first wait between attempts, doubling up to MaxBackoff; the defaults if 0.
	Backoff, MaxBackoff time.Duration

	clock clock // nil: the system clock
}

// NewCallback returns the Callback of a delivery's payload (callbackUrl, callbackToken, leaseSeconds), or
// ErrNoCallback.
func NewCallback(p Payload) (*Callback, error) {
	return newCallback(p.CallbackURL, p.CallbackToken, p.LeaseSeconds)
}

// CallbackFromHeader returns the Callback of a delivery's Ejserver-Callback-Url and Ejserver-Callback-Token
// headers, or ErrNoCallback. The headers do not carry leaseSeconds: set Lease if you know it.
func CallbackFromHeader(h http.Header) (*Callback, error) {
	return newCallback(h.Get(HeaderCallbackURL), h.Get(HeaderCallbackToken), 0)
}

func newCallback(rawURL, token string, leaseSeconds int) (*Callback, error) {
	if rawURL == "" || token == "" {
		return nil, ErrNoCallback
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("callbackUrl %q is not an http(s) URL: %w", rawURL, ErrNoCallback)
	}
	return &Callback{URL: rawURL, Token: token, Lease: time.Duration(leaseSeconds) * time.Second}, nil
}

// HeartbeatInterval is a third of the lease: two heartbeats may be lost before the lease runs out.
func (c *Callback) HeartbeatInterval() time.Duration {
	lease := c.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	return lease / 3
}

// heartbeatBody is the body of a heartbeat; a nil Progress leaves the recorded progress as it is.
type heartbeatBody struct {
	Progress *int   `json:"progress,omitempty"`
	Message  string `json:"message,omitempty"`
}

func newHeartbeatBody(progress int, message string) heartbeatBody {
	var b heartbeatBody
	if progress >= 0 {
		p := min(progress, 100)
		b.Progress = &p
	}
	b.Message = truncate(message, MaxMessageLen)
	return b
}

// Heartbeat extends the lease by Lease from now and records progress (0-100; a negative value sends none,
// more than 100 sends 100) and message (empty sends none). It returns the execution's lease view: when its
// State is not StateRunning, stop working on the item.
func (c *Callback) Heartbeat(ctx context.Context, progress int, message string) (Lease, error) {
	return c.post(ctx, "heartbeat", newHeartbeatBody(progress, message), c.maxAttempts())
}

// Complete ends the attempt with done's outcome. Sending the same completion again is safe: ejserver
// answers 200 to a repeat (which is why a completion is retried).
func (c *Callback) Complete(ctx context.Context, done Completion) (Lease, error) {
	return c.post(ctx, "complete", completionBody(done), c.maxAttempts())
}

func completionBody(done Completion) Completion {
	if done.Status == "" {
		done.Status = StatusSuccess
	}
	done.Message = truncate(done.Message, MaxMessageLen)
	done.Output = truncate(done.Output, MaxOutputLen)
	return done
}

func (c *Callback) maxAttempts() int {
	if c.MaxAttempts > 0 {
		return c.MaxAttempts
	}
	return DefaultCallbackAttempts
}

// post sends body to URL/op up to attempts times.
func (c *Callback) post(ctx context.Context, op string, body any, attempts int) (Lease, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return Lease{}, fmt.Errorf("%s callback: encode body: %w", op, err)
	}
	for n := 1; ; n++ {
		lease, retryAfter, retry, err := c.once(ctx, op, b)
		if err == nil {
			return lease, nil
		}
		if !retry || n >= attempts || ctx.Err() != nil {
			return Lease{}, err
		}
		wait := max(c.backoff(n), min(retryAfter, c.maxBackoff()))
		if cause := sleep(ctx, clockOr(c.clock), wait); cause != nil {
			return Lease{}, fmt.Errorf("%w (stopped retrying: %v)", err, cause)
		}
	}
}

// once sends one request; retry says whether sending it again may help.
func (c *Callback) once(ctx context.Context, op string, body []byte) (lease Lease, retryAfter time.Duration, retry bool, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultCallbackTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+"/"+op, bytes.NewReader(body))
	if err != nil {
		return Lease{}, 0, false, fmt.Errorf("%s callback: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// A refused or dropped connection, or this attempt's timeout: the callback may not have landed.
		return Lease{}, 0, true, fmt.Errorf("%s callback: %w", op, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Lease{}, 0, true, fmt.Errorf("%s callback: read answer: %w", op, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if len(bytes.TrimSpace(answer)) == 0 {
			return Lease{}, 0, false, nil
		}
		if err := json.Unmarshal(answer, &lease); err != nil {
			return Lease{}, 0, false, fmt.Errorf("%s callback: decode answer: %w", op, err)
		}
		return lease, 0, false, nil
	}
	cerr := &CallbackError{Op: op, StatusCode: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	var problem struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Field  string `json:"field"`
	}
	if json.Unmarshal(answer, &problem) == nil && problem.Type != "" {
		cerr.Type = problem.Type[strings.LastIndexByte(problem.Type, '/')+1:]
		cerr.Title, cerr.Detail, cerr.Field = problem.Title, problem.Detail, problem.Field
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		retryAfter = time.Duration(secs) * time.Second
	}
	return Lease{}, retryAfter, cerr.Temporary(), cerr
}

// backoff is the wait after the n-th failed attempt: Backoff doubled n-1 times, at most MaxBackoff, less up
// to half of it at random (so that receivers cut off together do not come back together).
func (c *Callback) backoff(n int) time.Duration {
	d := c.Backoff
	if d <= 0 {
		d = DefaultCallbackBackoff
	}
	return jitter(expBackoff(d, c.maxBackoff(), n))
}

func (c *Callback) maxBackoff() time.Duration {
	if c.MaxBackoff > 0 {
		return c.MaxBackoff
	}
	return DefaultCallbackMaxBackoff
}

// expBackoff is base doubled n-1 times, at most limit.
func expBackoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d - rand.N(d/2)
}

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
