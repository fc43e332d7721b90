// Package client is the Go client of ejserver's REST API (/api/v1): one typed method per endpoint, errors
// that carry the server's RFC 9457 problem details (*Error), built on go-resty.
//
//	c := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("EJ_TOKEN")))
//	job, err := c.GetJob(ctx, "settle")
//	if client.IsNotFound(err) { ... }
package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ejserver/ejserver/internal/certs"
)

// Client calls one ejserver (any peer serves the whole cluster). It is safe for concurrent use.
type Client struct {
	r *resty.Client
}

// Option configures a Client.
type Option func(*settings)

type settings struct {
	token, userAgent string
	hc               *http.Client
	tls              *tls.Config
	timeout          time.Duration
	retries          int
}

// WithToken sends "Authorization: Bearer token" (an admin, operator or viewer token); "" sends none.
func WithToken(token string) Option { return func(s *settings) { s.token = token } }

// WithHTTPClient makes the client send through hc (its transport and TLS config).
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.hc = hc } }

// WithTLSConfig makes the client verify the server and present a client certificate per cfg (see
// TLSConfig for one read from PEM files). Applied to the transport of WithHTTPClient's client too.
func WithTLSConfig(cfg *tls.Config) Option { return func(s *settings) { s.tls = cfg } }

// TLSFiles are PEM files for an ejserver API on HTTPS: CAFile verifies the server's certificate (empty: the
// system's roots); CertFile and KeyFile are a client certificate, for a server that maps client
// certificates to tokens-file lines (--tls-client-ca).
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
}

// TLSConfig reads files into a tls.Config for WithTLSConfig: TLS 1.2 or later. The error names the file.
func TLSConfig(files TLSFiles) (*tls.Config, error) {
	return certs.ClientConfig(certs.ClientFiles{CA: files.CAFile, Cert: files.CertFile, Key: files.KeyFile})
}

// WithTimeout bounds each request (default 30 s).
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// WithUserAgent sets the User-Agent header (default ejserver-go-client).
func WithUserAgent(ua string) Option { return func(s *settings) { s.userAgent = ua } }

// WithRetries retries GET requests that failed to connect or got 502, 503 or 504, up to n more times with
// back-off (default 0). Writes are never retried: a retried create or trigger could apply twice.
func WithRetries(n int) Option { return func(s *settings) { s.retries = n } }

// New returns a client of the ejserver at baseURL (scheme, host and port, e.g. http://127.0.0.1:8080).
func New(baseURL string, opts ...Option) *Client {
	s := settings{userAgent: "ejserver-go-client", timeout: 30 * time.Second}
	for _, o := range opts {
		o(&s)
	}
	r := resty.New()
	if s.hc != nil {
		r = resty.NewWithClient(withTLS(s.hc, s.tls))
	} else if s.tls != nil {
		r.SetTLSClientConfig(s.tls) // resty.New's own transport
	}
	r.SetBaseURL(strings.TrimRight(baseURL, "/")).SetTimeout(s.timeout).SetDisableWarn(true).
		SetHeader("User-Agent", s.userAgent).SetHeader("Accept", "application/json, application/problem+json")
	if s.token != "" {
		r.SetAuthToken(s.token)
	}
	if s.retries > 0 {
		r.SetRetryCount(s.retries).SetRetryWaitTime(200 * time.Millisecond).SetRetryMaxWaitTime(3 * time.Second)
		r.AddRetryCondition(func(resp *resty.Response, err error) bool {
			if resp == nil || resp.Request == nil || resp.Request.Method != http.MethodGet {
				return false
			}
			if err != nil {
				return true
			}
			switch resp.StatusCode() {
			case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
				return true
			}
			return false
		})
	}
	return &Client{r: r}
}

// withTLS is a copy of hc whose transport (cloned, never shared: it may be http.DefaultTransport) uses cfg.
func withTLS(hc *http.Client, cfg *tls.Config) *http.Client {
	if cfg == nil {
		return hc
	}
	c := *hc
	t, ok := c.Transport.(*http.Transport)
	if c.Transport == nil {
		t, ok = http.DefaultTransport.(*http.Transport)
	}
	if ok {
		t = t.Clone()
		t.TLSClientConfig = cfg
		c.Transport = t
	}
	return &c
}

// FieldError names one offending field of an invalid request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is an error answer of ejserver: its RFC 9457 problem details.
type Error struct {
	// Type identifies the kind of problem, e.g. https://ejserver.dev/problems/invalid.
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Instance is the request path.
	Instance string `json:"instance,omitempty"`
	// Field is the first offending field of an invalid request (a JSON path such as webhook.url).
	Field string `json:"field,omitempty"`
	// Errors lists every offending field.
	Errors []FieldError `json:"errors,omitempty"`
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("ejserver: %d %s: %s", e.Status, e.Title, e.Detail)
	}
	return fmt.Sprintf("ejserver: %d %s", e.Status, e.Title)
}

// StatusOf returns the HTTP status of an *Error in err's chain, or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether err is a 404 (no such job, item or execution).
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is a 409 (the job exists; a disabled job can't be triggered...).
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// IsPreconditionFailed reports whether err is a 412: the job changed since the ETag sent with If-Match.
func IsPreconditionFailed(err error) bool { return StatusOf(err) == http.StatusPreconditionFailed }

// ProblemBase is the base of ejserver's problem type URIs.
const ProblemBase = "https://ejserver.dev/problems/"

// Problem types of the callbacks' refusals (docs/long-running.md), as ProblemType returns them.
const (
	ProblemInvalid            = "invalid"             // 400: a bad body; Error.Field names the field
	ProblemCallbackToken      = "callback-token"      // 401: no token, a forged one, or another execution's
	ProblemAlreadyCompleted   = "already-completed"   // 409: the execution ended with another outcome
	ProblemLeaseExpired       = "lease-expired"       // 409: the lease ran out before this callback
	ProblemStaleAttempt       = "stale-attempt"       // 409: the token is of an earlier attempt
	ProblemExecutionCancelled = "execution-cancelled" // 409: the job was deleted while the item ran
)

// ProblemType returns the type of an *Error in err's chain without ProblemBase (e.g. "lease-expired"; a type
// outside ProblemBase whole), or "" when err carries no problem.
func ProblemType(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return ""
	}
	return strings.TrimPrefix(e.Type, ProblemBase)
}

// request is one call: method, path (with its parameters escaped), query, JSON body and where the JSON
// answer goes.
type request struct {
	method, path string
	query        url.Values
	body         any
	header       map[string]string
	// token replaces the client's API token for this request (a callback token).
	token string
	out   any
}

func (c *Client) do(ctx context.Context, rq request) (*resty.Response, error) {
	req := c.r.R().SetContext(ctx).SetQueryParamsFromValues(rq.query).SetHeaders(rq.header)
	if rq.token != "" {
		req.SetAuthToken(rq.token)
	}
	if rq.body != nil {
		req.SetHeader("Content-Type", "application/json")
		if raw, ok := rq.body.([]byte); ok {
			req.SetBody(raw)
		} else {
			b, err := json.Marshal(rq.body)
			if err != nil {
				return nil, err
			}
			req.SetBody(b)
		}
	}
	resp, err := req.Execute(rq.method, rq.path)
	if err != nil {
		return nil, fmt.Errorf("ejserver: %s %s: %w", rq.method, rq.path, err)
	}
	if resp.IsError() {
		return resp, problemOf(resp)
	}
	if rq.out != nil {
		if s, ok := rq.out.(*string); ok {
			*s = resp.String()
		} else if err := json.Unmarshal(resp.Body(), rq.out); err != nil {
			return resp, fmt.Errorf("ejserver: %s %s: decode the answer: %w", rq.method, rq.path, err)
		}
	}
	return resp, nil
}

func problemOf(resp *resty.Response) error {
	e := &Error{}
	if json.Unmarshal(resp.Body(), e) != nil || e.Status == 0 {
		detail := strings.TrimSpace(resp.String())
		if len(detail) > 200 {
			detail = detail[:200] + "..."
		}
		e = &Error{Status: resp.StatusCode(), Title: http.StatusText(resp.StatusCode()), Detail: detail}
	}
	return e
}

func jobPath(name string, rest ...string) string {
	p := "/api/v1/jobs/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

func itoa(n int) string { return strconv.Itoa(n) }

// CreateJob registers a job (201). A job of that name existing is a 409 (IsConflict).
func (c *Client) CreateJob(ctx context.Context, spec JobSpec) (*JobResult, error) {
	return c.CreateJobJSON(ctx, spec)
}

// CreateJobJSON is CreateJob with a body of your own: a JobSpec, or raw JSON as []byte or json.RawMessage.
func (c *Client) CreateJobJSON(ctx context.Context, body any) (*JobResult, error) {
	var out JobResult
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/jobs", body: rawBody(body), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

func rawBody(body any) any {
	if r, ok := body.(json.RawMessage); ok {
		return []byte(r)
	}
	return body
}

// ListJobs returns one page of jobs.
func (c *Client) ListJobs(ctx context.Context, opts ListJobsOptions) (*JobList, error) {
	q := url.Values{}
	set(q, "q", opts.Query)
	set(q, "status", opts.Status)
	set(q, "cursor", opts.Cursor)
	setInt(q, "limit", opts.Limit)
	var out JobList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/jobs", query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// AllJobs iterates over every job matching opts, fetching page after page.
func (c *Client) AllJobs(ctx context.Context, opts ListJobsOptions) iter.Seq2[Job, error] {
	return func(yield func(Job, error) bool) {
		for {
			page, err := c.ListJobs(ctx, opts)
			if err != nil {
				yield(Job{}, err)
				return
			}
			for _, j := range page.Items {
				if !yield(j, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			opts.Cursor = page.NextCursor
		}
	}
}

// GetJob reads a job; Job.ETag() is its version for ReplaceJob.
func (c *Client) GetJob(ctx context.Context, name string) (*Job, error) {
	var out Job
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(name), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReplaceJob replaces a job's config. With ifMatch (a Job.ETag()) the replace fails with 412
// (IsPreconditionFailed) if someone changed the job since; "" replaces unconditionally.
func (c *Client) ReplaceJob(ctx context.Context, name string, spec JobSpec, ifMatch string) (*JobResult, error) {
	return c.ReplaceJobJSON(ctx, name, spec, ifMatch)
}

// ReplaceJobJSON is ReplaceJob with a body of your own: a JobSpec, or raw JSON as []byte or json.RawMessage.
func (c *Client) ReplaceJobJSON(ctx context.Context, name string, body any, ifMatch string) (*JobResult, error) {
	var out JobResult
	rq := request{method: http.MethodPut, path: jobPath(name), body: rawBody(body), out: &out}
	if ifMatch != "" {
		rq.header = map[string]string{"If-Match": ifMatch}
	}
	if _, err := c.do(ctx, rq); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteJob deletes a job; every peer stops firing it at once.
func (c *Client) DeleteJob(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: jobPath(name)})
	return err
}

// TriggerJob runs the job now (202), optionally with another jobParameter and only some items.
func (c *Client) TriggerJob(ctx context.Context, name string, req TriggerRequest) (*TriggerResult, error) {
	var out TriggerResult
	if _, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(name, "trigger"), body: req, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DisableJob stops the job firing on every peer.
func (c *Client) DisableJob(ctx context.Context, name string) (*Job, error) {
	return c.jobVerb(ctx, name, "disable")
}

// EnableJob lets the job fire again.
func (c *Client) EnableJob(ctx context.Context, name string) (*Job, error) {
	return c.jobVerb(ctx, name, "enable")
}

func (c *Client) jobVerb(ctx context.Context, name, verb string) (*Job, error) {
	var out Job
	if _, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(name, verb), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Sharding returns the job's items: owner, status, failover and last outcome of each.
func (c *Client) Sharding(ctx context.Context, name string) (*ItemList, error) {
	var out ItemList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(name, "sharding"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DisableItem keeps one item of the job from running.
func (c *Client) DisableItem(ctx context.Context, name string, item int) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(name, "sharding", itoa(item), "disable")})
	return err
}

// EnableItem lets the item run again.
func (c *Client) EnableItem(ctx context.Context, name string, item int) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(name, "sharding", itoa(item), "enable")})
	return err
}

// DisableJobServer keeps the instances on ip from running the job.
func (c *Client) DisableJobServer(ctx context.Context, name, ip string) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(name, "servers", url.PathEscape(ip), "disable")})
	return err
}

// EnableJobServer lets the instances on ip run the job again.
func (c *Client) EnableJobServer(ctx context.Context, name, ip string) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(name, "servers", url.PathEscape(ip), "enable")})
	return err
}

// Dump returns the job's registry subtree, one "path | value" line per node (secrets masked).
func (c *Client) Dump(ctx context.Context, name string) (string, error) {
	var out string
	_, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(name, "dump"), out: &out})
	return out, err
}

func executionQuery(f ExecutionFilter, withJob bool) url.Values {
	q := url.Values{}
	if withJob {
		set(q, "job", f.Job)
	}
	if f.Item != nil {
		q.Set("item", itoa(*f.Item))
	}
	if f.Success != nil {
		q.Set("success", strconv.FormatBool(*f.Success))
	}
	set(q, "source", f.Source)
	set(q, "instance", f.InstanceID)
	if !f.From.IsZero() {
		q.Set("from", f.From.Format(time.RFC3339Nano))
	}
	if !f.ScheduledAt.IsZero() {
		q.Set("scheduledAt", f.ScheduledAt.Format(time.RFC3339Nano))
	}
	if !f.To.IsZero() {
		q.Set("to", f.To.Format(time.RFC3339Nano))
	}
	set(q, "cursor", f.Cursor)
	setInt(q, "limit", f.Limit)
	return q
}

// Executions returns one page of executions (of every job, or of f.Job), newest first.
func (c *Client) Executions(ctx context.Context, f ExecutionFilter) (*ExecutionList, error) {
	var out ExecutionList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/executions", query: executionQuery(f, true), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// JobExecutions returns one page of a job's executions, newest first (f.Job is ignored).
func (c *Client) JobExecutions(ctx context.Context, name string, f ExecutionFilter) (*ExecutionList, error) {
	var out ExecutionList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(name, "executions"), query: executionQuery(f, false), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Execution reads one execution by id (the webhook-id its receiver got).
func (c *Client) Execution(ctx context.Context, id string) (*Execution, error) {
	var out Execution
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/executions/" + url.PathEscape(id), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ErrInvalidCallback is returned, before anything is sent, for a callback URL that is not an absolute
// http(s) URL or an empty callback token.
var ErrInvalidCallback = errors.New("ejserver: invalid callback")

// Heartbeat reports that an accepted item (its receiver answered 202) is still being worked on: it renews the
// item's lease and records progress and message. callbackURL and token are the callbackUrl and callbackToken
// of the item's request body; the URL may name any peer, whatever the client's base URL, and the token is
// sent instead of the client's API token. A refusal is an *Error whose ProblemType tells why (e.g.
// ProblemLeaseExpired: stop working on the item). Stop too when the answer is not Running().
func (c *Client) Heartbeat(ctx context.Context, callbackURL, token string, req HeartbeatRequest) (*LeaseView, error) {
	return c.callback(ctx, callbackURL, token, "heartbeat", req)
}

// Complete ends an accepted item's attempt with req.Status "success" or "failure". Sending the same
// completion again answers 200, so a completion whose answer was lost may be sent again; a different one
// after the end is a 409 with ProblemAlreadyCompleted. callbackURL and token are as for Heartbeat.
func (c *Client) Complete(ctx context.Context, callbackURL, token string, req CompleteRequest) (*LeaseView, error) {
	return c.callback(ctx, callbackURL, token, "complete", req)
}

func (c *Client) callback(ctx context.Context, callbackURL, token, verb string, body any) (*LeaseView, error) {
	u, err := url.Parse(callbackURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: the callback URL %q is not an absolute http(s) URL", ErrInvalidCallback, callbackURL)
	}
	if token == "" {
		// never fall back to the client's API token: the callback URL may name any host
		return nil, fmt.Errorf("%w: no callback token", ErrInvalidCallback)
	}
	var out LeaseView
	if _, err := c.do(ctx, request{method: http.MethodPost, path: u.JoinPath(verb).String(), body: body, token: token, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Traces returns a job's status traces (of one task if taskID is set), at most limit (0: 50).
func (c *Client) Traces(ctx context.Context, name, taskID string, limit int) (*TraceList, error) {
	q := url.Values{}
	set(q, "taskId", taskID)
	setInt(q, "limit", limit)
	var out TraceList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(name, "traces"), query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Servers returns one page of the namespace's server IPs.
func (c *Client) Servers(ctx context.Context, opts PageOptions) (*ServerList, error) {
	var out ServerList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/servers", query: pageQuery(opts), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DisableServer disables ip for every job it runs.
func (c *Client) DisableServer(ctx context.Context, ip string) (*ServerChange, error) {
	return c.serverVerb(ctx, ip, "disable")
}

// EnableServer enables ip for every job.
func (c *Client) EnableServer(ctx context.Context, ip string) (*ServerChange, error) {
	return c.serverVerb(ctx, ip, "enable")
}

func (c *Client) serverVerb(ctx context.Context, ip, verb string) (*ServerChange, error) {
	var out ServerChange
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/servers/" + url.PathEscape(ip) + "/" + verb, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Instances returns one page of the ejserver peers.
func (c *Client) Instances(ctx context.Context, opts PageOptions) (*InstanceList, error) {
	var out InstanceList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/instances", query: pageQuery(opts), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// CronNext returns the next fire times of an expression, computed by the scheduler's own code. A bad
// expression is a 400 whose Field says "cron", "timeZone", "from" or "count"; an unknown calendar one whose
// Field says "excludeCalendars" or "includeCalendars".
func (c *Client) CronNext(ctx context.Context, cq CronQuery) (*CronPreview, error) {
	q := url.Values{"cron": {cq.Cron}}
	set(q, "timeZone", cq.TimeZone)
	if !cq.From.IsZero() {
		q.Set("from", cq.From.Format(time.RFC3339Nano))
	}
	setInt(q, "count", cq.Count)
	set(q, "excludeCalendars", strings.Join(cq.ExcludeCalendars, ","))
	set(q, "includeCalendars", strings.Join(cq.IncludeCalendars, ","))
	var out CronPreview
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/cron/next", query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// WhoAmI returns the name, role and scope of the client's token, as the server sees it.
func (c *Client) WhoAmI(ctx context.Context) (*Caller, error) {
	var out Caller
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/auth/whoami", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Healthy reports /healthz: nil while the process serves.
func (c *Client) Healthy(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/healthz"})
	return err
}

// Ready returns /readyz's report; a peer without a ZooKeeper session answers 503, returned as the report
// (Ready false) and an *Error.
func (c *Client) Ready(ctx context.Context) (*HealthReport, error) {
	var out HealthReport
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/readyz", out: &out})
	if err != nil && resp != nil && resp.StatusCode() == http.StatusServiceUnavailable {
		_ = json.Unmarshal(resp.Body(), &out)
		return &out, &Error{Status: resp.StatusCode(), Title: http.StatusText(resp.StatusCode()), Detail: "not ready"}
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func pageQuery(o PageOptions) url.Values {
	q := url.Values{}
	set(q, "cursor", o.Cursor)
	setInt(q, "limit", o.Limit)
	return q
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func setInt(q url.Values, k string, v int) {
	if v != 0 {
		q.Set(k, itoa(v))
	}
}
