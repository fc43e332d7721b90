package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-resty/resty/v2"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/tracing"
)

// Defaults of Config.
const (
	DefaultMaxConcurrent    = 256
	DefaultMaxResponseBytes = 64 << 10
	DefaultExcerptBytes     = 1 << 10
	DefaultUserAgent        = "ejserver"
	// DefaultWriteBufferSize holds a whole request of a wide fire: a job's task id lists the items its peer
	// runs (ElasticJob's format), and it is in the body and again in the shardingContext header, so a request
	// of a 2,000-item job on three peers is ~7 KB. net/http's default 4 KB buffer wrote such a request to its
	// connection in two or three writes, each a syscall and, on loopback, the receiver's wake-up; one fits.
	DefaultWriteBufferSize = 16 << 10
)

// Config configures a Sender. The zero value works: every field has a default.
type Config struct {
	// MaxConcurrent bounds the requests in flight on this peer (all jobs); DefaultMaxConcurrent if 0. It also
	// sizes the connection pool, so a burst to one receiver reuses connections instead of opening more.
	MaxConcurrent int
	// MaxResponseBytes is how much of a response body is read; DefaultMaxResponseBytes if 0.
	MaxResponseBytes int64
	// ExcerptBytes is how much of the body is kept in Result.ResponseExcerpt; DefaultExcerptBytes if 0.
	ExcerptBytes int
	// Allow is the operator's target policy (ParseAllowList); nil refuses only link-local and metadata targets.
	Allow *TargetPolicy
	// Proxy, if set, carries every request (the environment's HTTP_PROXY is never used). The target's
	// resolved address can then not be checked: only the static CheckURL applies.
	Proxy *url.URL
	// Resolver resolves target names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Jitter chooses the back-off randomisation; DecorrelatedJitter by default.
	Jitter Jitter
	// Rand feeds Backoff; nil uses math/rand/v2's global source. It must be safe for concurrent use.
	Rand Rand
	// UserAgent is sent as User-Agent, e.g. "ejserver/1.2.0"; DefaultUserAgent if empty.
	UserAgent string
	// Logger gets one debug line per attempt and a warning per refused target or bad secret.
	Logger *slog.Logger
	// Clock is the time source (timestamps, deadline, back-off, timeouts); SystemClock() if nil.
	Clock Clock
	// MaxTLSClients bounds the connection pools kept for distinct webhook.tls settings (least recently used
	// dropped past it); DefaultMaxTLSClients if 0.
	MaxTLSClients int
	// Tracer, when on, records a span per attempt (a child of the span in Send's context); nil is off.
	// Every request carries the W3C traceparent of the span context in Send's context either way.
	Tracer *tracing.Tracer
	// WriteBufferSize is each connection's write buffer: a request that fits leaves in one write;
	// DefaultWriteBufferSize if 0.
	WriteBufferSize int
}

// Delivery is one item of one fire, to be delivered with retries (and, for a streaming DATAFLOW job,
// re-delivered while the receiver has more).
type Delivery struct {
	// Payload is the body; the Sender sets Attempt and Iteration on each request. Payload.ExecutionID is the
	// webhook-id, the same for every retry.
	Payload Payload
	Webhook ejserver.Webhook
	Retry   ejserver.RetryPolicy
	// MaxConcurrentPerJob bounds the in-flight requests of Payload.JobName on this peer; 0 = no job bound.
	MaxConcurrentPerJob int
	// Streaming (a DATAFLOW job with streamingProcess) re-POSTs the item while the receiver answers 2xx with
	// {"hasMore": true}.
	Streaming bool
	// Deadline (the item's next fire; zero = none): no attempt starts and no back-off sleeps past it. An
	// attempt already running is bounded by its own timeouts, not by the deadline.
	Deadline time.Time
	// Halt, if set, stops the delivery between requests when it is done (the job was disabled or deleted): no
	// retry, streaming iteration, back-off or wait for a request slot follows, but a request already on its way
	// runs to its answer or its own timeouts, so that what is recorded is what the receiver answered. The
	// context passed to Send aborts the request too (a shutdown's bound, CANCEL_PREVIOUS).
	Halt context.Context
	// Sent, if set, is called when a request of the delivery has been written to its connection, and when
	// an attempt has to wait for a slot of the job's own bound (MaxConcurrentPerJob): the caller's burst is
	// then no longer what holds it back. An attempt waiting for one of the peer's slots (MaxConcurrent) is
	// held back by the burst itself: Sent follows when it is written. It may be called more than once, from
	// a goroutine of net/http, and must be quick.
	Sent func()
	// Callback, if set, gives each request its callback URL and token (body and headers), from the
	// request's iteration (0 when not streaming) and attempt: a receiver that answers 202 reports back with them.
	Callback func(iteration, attempt int) (url, token string)
	// FirstAttempt and FirstIteration continue an execution where an earlier delivery left it (an accepted
	// item POSTed again after its lease ran out); zero means 1. Retry.MaxAttempts bounds the attempt
	// number, not the count of this delivery's requests.
	FirstAttempt   int
	FirstIteration int
}

// LogValue keeps secrets and headers out of logs: a Delivery logs as its job, item, execution id and URL.
func (d Delivery) LogValue() slog.Value {
	return slog.GroupValue(slog.String("job", d.Payload.JobName), slog.Int("item", d.Payload.ShardingItem),
		slog.String("execution_id", d.Payload.ExecutionID), slog.String("url", d.Webhook.URL))
}

// Result is the outcome of a Delivery.
type Result struct {
	// Success: the last request got a 2xx (for streaming: every iteration did).
	Success bool
	// StatusCode of the last response; 0 if none arrived.
	StatusCode int
	// Attempts is the number of requests attempted over all iterations (one refused when dialling counts).
	Attempts int
	// Duration from Deliver's start to its end, back-off included.
	Duration time.Duration
	// FailureCause says why the delivery failed ("" on success). It never holds secret material.
	FailureCause string
	// ResponseExcerpt is the start of the last response body, valid UTF-8.
	ResponseExcerpt string
	// Permanent marks a failure that retrying cannot cure (410 Gone, a refused target, a bad secret).
	Permanent bool
	// Iterations is the number of iterations sent (1 for a non-streaming delivery that sent anything).
	Iterations int
	// HasMore: a streaming delivery stopped (ctx cancelled or deadline reached) while the receiver still
	// had more; the next fire continues.
	HasMore bool
	// Accepted: the last request was answered 202 Accepted: the receiver took the work and reports its end
	// through the callbacks (Success is true too, for the request).
	Accepted bool
	// Iteration and Attempt are the numbers of the last request sent (Iteration 0 when not streaming).
	Iteration, Attempt int
}

var (
	errConnectTimeout  = errors.New("connect timeout")
	errResponseTimeout = errors.New("response timeout")
	errStopWaiting     = errors.New("deadline reached")
	errHalted          = errors.New("delivery halted") // Delivery.Halt ended a wait
)

// Sender delivers items to webhooks. It is safe for concurrent use; Close releases its idle connections.
type Sender struct {
	cfg       Config
	clock     Clock
	log       *slog.Logger
	rand      Rand
	transport *http.Transport
	client    *resty.Client
	tls       *tlsClients // per webhook.tls setting
	templates *templates  // per webhook setting
	limit     *limiter
	inFlight  atomic.Int64
}

// New returns a Sender.
func New(cfg Config) *Sender {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.ExcerptBytes <= 0 {
		cfg.ExcerptBytes = DefaultExcerptBytes
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.Tracer == nil {
		cfg.Tracer = tracing.Off
	}
	if cfg.WriteBufferSize <= 0 {
		cfg.WriteBufferSize = DefaultWriteBufferSize
	}
	s := &Sender{
		cfg:   cfg,
		clock: cfg.Clock,
		log:   cfg.Logger,
		rand:  cfg.Rand,
		limit: newLimiter(cfg.MaxConcurrent),
	}
	if s.clock == nil {
		s.clock = SystemClock()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.rand == nil {
		s.rand = globalRand{}
	}
	s.client, s.transport = s.newClient(&tls.Config{MinVersion: tls.VersionTLS12})
	s.tls = newTLSClients(cfg.MaxTLSClients, s.newClient)
	s.templates = newTemplates(0)
	return s
}

// newClient is an HTTP client of the Sender with tlsCfg: its own transport (connection pool), the target
// policy checked at each dial.
func (s *Sender) newClient(tlsCfg *tls.Config) (*resty.Client, *http.Transport) {
	t := &http.Transport{
		DialContext:       s.dial,
		ForceAttemptHTTP2: true,
		// The concurrency bound is the most connections that can be busy at once; keep that many idle per
		// host so a burst to one receiver finds warm connections instead of dialling (and exhausting ports).
		MaxIdleConns:        2 * s.cfg.MaxConcurrent,
		MaxIdleConnsPerHost: s.cfg.MaxConcurrent,
		// A request can take its slot before the transport has put the previous request's connection back
		// in the pool; capping connections per host at the bound makes it wait for that one, not dial more.
		MaxConnsPerHost:       s.cfg.MaxConcurrent,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second, // the attempt's connect timer ends the request sooner
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       tlsCfg,
		WriteBufferSize:       s.cfg.WriteBufferSize,
	}
	if s.cfg.Proxy != nil {
		t.Proxy = http.ProxyURL(s.cfg.Proxy)
	}
	hc := &http.Client{
		Transport: t,
		// Redirects are never followed: a 3xx is the answer, and a failure.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	client := resty.NewWithClient(hc).
		SetDoNotParseResponse(true). // the body is read here, through io.LimitReader
		SetRetryCount(0).            // retries are Deliver's, explicit
		SetDisableWarn(true).
		SetLogger(restyLogger{s.log})
	return client, t
}

// Close closes idle connections and abandons dials no request waits for. The Sender stays usable.
func (s *Sender) Close() {
	s.transport.CloseIdleConnections()
	s.tls.closeIdle()
}

// TLSClients returns how many connection pools are kept for webhook.tls settings, and how many were made.
func (s *Sender) TLSClients() (kept, created int) { return s.tls.stats() }

// InFlight returns the number of requests in flight now.
func (s *Sender) InFlight() int { return int(s.inFlight.Load()) }

type connectTimeoutKey struct{}

// dial connects to a target, checking each resolved address against the target policy before the socket
// connects (net.Dialer.Control), so DNS rebinding cannot reach a refused address. The transport detaches
// dials from the request's cancellation, so the dial is bounded by the job's connect timeout itself.
func (s *Sender) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: 30 * time.Second, Resolver: s.cfg.Resolver}
	if t, ok := ctx.Value(connectTimeoutKey{}).(time.Duration); ok {
		d.Timeout = t
	}
	if s.cfg.Proxy != nil {
		return d.DialContext(ctx, network, addr) // the operator's proxy: the target is checked statically
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d.Control = s.cfg.Allow.control(host)
	return d.DialContext(ctx, network, addr)
}

// Deliver delivers d: retries per d.Retry, and for a streaming delivery, re-POSTs while the receiver
// answers {"hasMore": true}. It returns when the item succeeded, failed for good, the deadline stopped it,
// d.Halt stopped it between requests (job disabled or deleted), or ctx was cancelled (the peer's shutdown
// bound, CANCEL_PREVIOUS), which aborts a request in flight too.
func (s *Sender) Deliver(ctx context.Context, d Delivery) Result {
	return s.Send(ctx, s.Prepare(d))
}

// Prepared is a Delivery made ready to send: its target checked, its headers and its first request's body
// built. Preparing ahead of the scheduled time leaves only the request itself for that moment.
type Prepared struct {
	d   Delivery
	p   *prepared
	err error // why it can't be sent
	log itemLog
}

// Delivery returns what was prepared.
func (pr *Prepared) Delivery() Delivery { return pr.d }

// Prepare does the work of a Delivery that does not depend on when it is sent; Send sends it.
func (s *Sender) Prepare(d Delivery) *Prepared {
	pr := &Prepared{d: d}
	pr.log = itemLog{log: s.log, p: &pr.d.Payload}
	pr.p, pr.err = s.prepare(d)
	if pr.err == nil {
		first := d.Payload
		first.Attempt, first.Iteration = max(d.FirstAttempt, 1), iterationNumber(d, max(d.FirstIteration, 1))
		setCallback(d, &first)
		pr.p.firstCallback = [2]string{first.CallbackURL, first.CallbackToken}
		pr.p.firstBody, _ = payloadBody(first) // on an error, the attempt reports it
	}
	return pr
}

// setCallback sets the payload's callback fields for its request's iteration and attempt.
func setCallback(d Delivery, p *Payload) {
	if d.Callback != nil {
		p.CallbackURL, p.CallbackToken = d.Callback(p.Iteration, p.Attempt)
	}
}

// iterationNumber is the number a request of the n-th message of d carries: n when streaming, else 0.
func iterationNumber(d Delivery, n int) int {
	if d.Streaming {
		return n
	}
	return 0
}

// Send delivers a prepared Delivery, as Deliver does.
func (s *Sender) Send(ctx context.Context, pr *Prepared) (res Result) {
	start := s.clock.Now()
	defer func() { res.Duration = s.clock.Now().Sub(start) }()
	d, prep, log := pr.d, pr.p, pr.log
	if pr.err != nil {
		res.FailureCause, res.Permanent = pr.err.Error(), true
		log.warn("webhook not sent", "err", pr.err)
		return res
	}
	first := max(d.FirstIteration, 1)
	for iteration := first; ; iteration++ {
		it := iterationNumber(d, iteration)
		from := 1
		if iteration == first {
			from = max(d.FirstAttempt, 1)
		}
		more := s.deliverIteration(ctx, d, prep, it, from, &res, log)
		if res.Attempts > 0 {
			res.Iterations = iteration - first + 1
		}
		if !res.Success || !more || res.Accepted {
			return res
		}
		if stopCause(ctx, d.Halt) != nil || s.pastDeadline(d.Deadline) {
			res.HasMore = true
			return res
		}
	}
}

// stopCause is why a delivery stops between its requests: the cause of ctx (the peer's drain bound,
// CANCEL_PREVIOUS) or of halt (Delivery.Halt: the job disabled or deleted); nil while neither is done. The
// waits between requests also end on halt.Done() (haltDone): no context merging the two is made per item.
func stopCause(ctx, halt context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if halt != nil && halt.Err() != nil {
		return context.Cause(halt)
	}
	return nil
}

// haltDone is halt's Done channel; nil (never ready) without a halt.
func haltDone(halt context.Context) <-chan struct{} {
	if halt == nil {
		return nil
	}
	return halt.Done()
}

// prepared holds what is the same for every request of a Delivery: its webhook's template, and what is
// the item's own.
type prepared struct {
	*template
	client *resty.Client // the Sender's, or the one of the job's webhook.tls
	sc     []string      // the shardingContext header's value
	// firstBody is the body of the first attempt of the first iteration, built ahead, and firstCallback its
	// callback URL and token.
	firstBody     []byte
	firstCallback [2]string
}

func (s *Sender) prepare(d Delivery) (*prepared, error) {
	t, err := s.templates.get(d.Webhook, s.makeTemplate)
	if err != nil {
		return nil, err
	}
	p := &prepared{template: t, client: s.client}
	if t := d.Webhook.TLS; t != nil && !t.Empty() {
		if p.client, err = s.tls.get(t); err != nil {
			return nil, err // never holds a PEM
		}
	}
	sc, err := shardingContextHeader(d.Payload)
	if err != nil {
		return nil, fmt.Errorf("encode shardingContext: %w", err)
	}
	p.sc = []string{sc}
	return p, nil
}

// deliverIteration sends one message (iteration it, 0 when not streaming) with retries, recording into res.
// Its requests run in ctx; the waits and checks between them also end on d.Halt. It reports whether the
// receiver answered 2xx with {"hasMore": true}.
func (s *Sender) deliverIteration(ctx context.Context, d Delivery, p *prepared, it, from int, res *Result, log itemLog) bool {
	maxAttempts := max(d.Retry.MaxAttempts, 1)
	var wait time.Duration
	res.Success, res.Permanent = false, false
	for n := from; ; n++ {
		if cause := stopCause(ctx, d.Halt); cause != nil {
			res.FailureCause = appendCause(res.FailureCause, "cancelled before attempt "+strconv.Itoa(n)+": "+cause.Error())
			return false
		}
		if s.pastDeadline(d.Deadline) {
			res.FailureCause = appendCause(res.FailureCause, "deadline (the item's next fire) reached before attempt "+strconv.Itoa(n))
			return false
		}
		release, err := s.acquire(ctx, d)
		if err != nil {
			reason := "deadline (the item's next fire) reached while waiting for a request slot"
			if !errors.Is(err, errStopWaiting) {
				reason = "cancelled while waiting for a request slot: " + stopCause(ctx, d.Halt).Error()
			}
			res.FailureCause = appendCause(res.FailureCause, reason)
			return false
		}
		a := s.attempt(ctx, d, p, n, it)
		release()

		res.Attempts++
		res.Iteration, res.Attempt = it, n
		res.StatusCode, res.ResponseExcerpt = a.status, a.excerpt
		if a.ok {
			log.debug("webhook attempt succeeded", "attempt", n, "iteration", it, "status", a.status)
			res.Success, res.FailureCause, res.Accepted = true, "", a.accepted
			return a.more
		}
		res.FailureCause, res.Permanent = a.cause, a.permanent
		if a.permanent {
			log.warn("webhook failed permanently", "attempt", n, "iteration", it, "status", a.status, "err", a.cause)
		} else {
			log.debug("webhook attempt failed", "attempt", n, "iteration", it, "status", a.status, "err", a.cause)
		}
		if !a.retryable || n >= maxAttempts {
			return false
		}
		wait = Backoff(d.Retry, s.cfg.Jitter, n, wait, s.rand)
		if a.retryAfterSet {
			wait = min(a.retryAfter, time.Duration(max(d.Retry.MaxBackoffMs, 0))*time.Millisecond)
		}
		if !d.Deadline.IsZero() && !s.clock.Now().Add(wait).Before(d.Deadline) {
			res.FailureCause = appendCause(res.FailureCause, fmt.Sprintf(
				"not retried: attempt %d would start after the item's next fire at %s", n+1, d.Deadline.UTC().Format(time.RFC3339)))
			return false
		}
		if err := s.sleep(ctx, haltDone(d.Halt), wait); err != nil {
			res.FailureCause = appendCause(res.FailureCause, "retry cancelled: "+stopCause(ctx, d.Halt).Error())
			return false
		}
	}
}

func appendCause(cause, more string) string {
	if cause == "" {
		return more
	}
	return cause + "; " + more
}

func (s *Sender) pastDeadline(deadline time.Time) bool {
	return !deadline.IsZero() && !s.clock.Now().Before(deadline)
}

// acquire waits for a request slot until ctx or d.Halt ends or the deadline passes. A free slot is taken at
// once, without a timer; before waiting for one of the job's own bound, it tells d.Sent.
func (s *Sender) acquire(ctx context.Context, d Delivery) (func(), error) {
	var deadline Timer
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	release, err := s.limit.acquire(ctx, haltDone(d.Halt), d.Payload.JobName, d.MaxConcurrentPerJob, func(jobBound bool) <-chan struct{} {
		if jobBound && d.Sent != nil {
			d.Sent()
		}
		if d.Deadline.IsZero() {
			return nil
		}
		ch := make(chan struct{})
		deadline = s.clock.AfterFunc(d.Deadline.Sub(s.clock.Now()), func() { close(ch) })
		return ch
	})
	if err != nil {
		return nil, err
	}
	if s.pastDeadline(d.Deadline) {
		release()
		return nil, errStopWaiting
	}
	s.inFlight.Add(1)
	return func() {
		s.inFlight.Add(-1)
		release()
	}, nil
}

// sleep waits d on the clock, or until ctx ends or halt closes.
func (s *Sender) sleep(ctx context.Context, halt <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-halt:
		return errHalted
	}
}

// attemptResult is the outcome of one request.
type attemptResult struct {
	ok            bool
	accepted      bool // 202 Accepted: the receiver reports the end through callbacks
	more          bool // 2xx with {"hasMore": true}
	status        int
	excerpt       string
	cause         string
	retryable     bool
	permanent     bool
	retryAfter    time.Duration
	retryAfterSet bool
}

// testHookResponseHeaders, when set by a test, runs once response headers have arrived.
var testHookResponseHeaders func()

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// attempt sends request n of iteration it. The connect timer runs from the start until a connection is
// ready (DNS, TCP, TLS); the response timer from then until the body has been read.
// attempt sends one request, in a span of its own when tracing is on.
func (s *Sender) attempt(ctx context.Context, d Delivery, p *prepared, n, it int) attemptResult {
	if !s.cfg.Tracer.On() {
		return s.request(ctx, d, p, n, it)
	}
	ctx, span := s.cfg.Tracer.Start(ctx, "webhook attempt", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(tracing.AttrJob.String(d.Payload.JobName), tracing.AttrItem.Int(d.Payload.ShardingItem),
			tracing.AttrExecution.String(d.Payload.ExecutionID), tracing.AttrAttempt.Int(n),
			tracing.AttrSource.String(d.Payload.Source)))
	a := s.request(ctx, d, p, n, it)
	span.SetAttributes(tracing.AttrStatusCode.Int(a.status))
	if !a.ok {
		span.SetStatus(codes.Error, a.cause)
	}
	span.End()
	return a
}

func (s *Sender) request(ctx context.Context, d Delivery, p *prepared, n, it int) attemptResult {
	payload := d.Payload
	payload.Attempt, payload.Iteration = n, it
	body, callback := p.firstBody, p.firstCallback
	if n != max(d.FirstAttempt, 1) || it != iterationNumber(d, max(d.FirstIteration, 1)) || body == nil {
		var err error
		setCallback(d, &payload)
		callback = [2]string{payload.CallbackURL, payload.CallbackToken}
		if body, err = payloadBody(payload); err != nil {
			return attemptResult{cause: "encode body: " + err.Error(), permanent: true}
		}
	}
	id := messageID(payload.ExecutionID, it)
	now := s.clock.Now()
	ts := now.Unix()
	sig := p.signature(d.Webhook, now, id, ts, body)
	// a copy of the map, sharing the values (never appended to), made for the headers added below: made for
	// fewer, a map of more than 8 grows into a table at every request (~0.4 KB, BenchmarkSendItem/peer)
	added := 3 + tracing.Injected(ctx)
	if sig != "" {
		added++
	}
	if d.Callback != nil {
		added += 2
	}
	h := make(http.Header, len(p.header)+added)
	maps.Copy(h, p.header)
	h[HeaderShardingContext] = p.sc
	h[HeaderID] = []string{id}
	h[HeaderTimestamp] = []string{strconv.FormatInt(ts, 10)}
	if sig != "" {
		h[HeaderSignature] = []string{sig}
	}
	if d.Callback != nil {
		h[HeaderCallbackURL], h[HeaderCallbackToken] = []string{callback[0]}, []string{callback[1]}
	}
	tracing.Inject(ctx, h)

	actx, cancel := context.WithCancelCause(context.WithValue(ctx, connectTimeoutKey{}, p.connect))
	defer cancel(nil)
	var mu sync.Mutex
	var respTimer Timer
	connectTimer := s.clock.AfterFunc(p.connect, func() { cancel(errConnectTimeout) })
	defer func() {
		connectTimer.Stop()
		mu.Lock()
		if respTimer != nil {
			respTimer.Stop()
		}
		mu.Unlock()
	}()
	var handshook atomic.Bool // a TLS handshake completed in this attempt
	sent := d.Sent            // not d: a capture of the parameter moves it to the heap at every attempt
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) { handshook.Store(err == nil) },
		GotConn: func(httptrace.GotConnInfo) {
			if connectTimer.Stop() {
				mu.Lock()
				respTimer = s.clock.AfterFunc(p.timeout, func() { cancel(errResponseTimeout) })
				mu.Unlock()
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			if sent != nil {
				sent()
			}
		},
	})

	req := p.client.R().SetContext(actx)
	req.Header = h
	// a reader, not the bytes: resty copies a []byte body twice per request (into its buffer, then again for
	// the request), ~4 KB each for a wide fire's item; net/http sends a *bytes.Reader with its length, as it
	// did the copy
	req.SetBody(bytes.NewReader(body))
	resp, err := req.Execute(p.method, p.target)
	if err != nil {
		a := s.transportFailure(actx, ctx, p, err)
		if handshook.Load() && closedAfterHandshake(err) {
			a.cause += closedAfterHandshakeHint
		}
		return a
	}
	raw := resp.RawBody()
	defer raw.Close()
	if testHookResponseHeaders != nil {
		testHookResponseHeaders()
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 2*int(s.cfg.MaxResponseBytes) {
			buf.Reset()
			bufPool.Put(buf)
		}
	}()
	buf.Reset()
	_, readErr := buf.ReadFrom(io.LimitReader(raw, s.cfg.MaxResponseBytes))
	a := attemptResult{status: resp.StatusCode(), excerpt: excerpt(buf.Bytes(), s.cfg.ExcerptBytes)}
	if readErr != nil {
		f := s.transportFailure(actx, ctx, p, readErr)
		f.status, f.excerpt = a.status, a.excerpt
		f.cause = fmt.Sprintf("HTTP %d, then reading the body: %s", a.status, f.cause)
		return f
	}
	return classify(a, resp.Header(), buf.Bytes(), d.Streaming, now)
}

// classify decides on a response that arrived whole.
func classify(a attemptResult, h http.Header, body []byte, streaming bool, now time.Time) attemptResult {
	code := a.status
	switch {
	case code == http.StatusAccepted:
		a.ok, a.accepted = true, true // the end comes by callback; a 202's body says nothing of hasMore
		return a
	case code >= 200 && code < 300:
		a.ok = true
		a.more = streaming && hasMore(body)
		return a
	case code >= 300 && code < 400:
		a.cause = fmt.Sprintf("HTTP %d %s: redirects are not followed (point the webhook at the final URL)", code, http.StatusText(code))
		if loc := h.Get("Location"); loc != "" {
			a.cause += "; Location: " + excerpt([]byte(loc), 256)
		}
		return a
	case code == http.StatusGone:
		a.cause = "HTTP 410 Gone: the receiver says this webhook is gone for good"
		a.permanent = true
		return a
	}
	a.cause = fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	switch {
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		a.retryable = true
	default:
		return a // other 4xx: the request is wrong; sending it again will not help
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		a.retryAfter, a.retryAfterSet = ParseRetryAfter(h.Get("Retry-After"), now)
	}
	return a
}

// transportFailure describes a request that got no (whole) response. actx is the attempt's context, ctx the
// caller's.
func (s *Sender) transportFailure(actx, ctx context.Context, p *prepared, err error) attemptResult {
	a := attemptResult{retryable: true}
	switch cause := context.Cause(actx); {
	case ctx.Err() != nil:
		a.cause, a.retryable = "cancelled: "+context.Cause(ctx).Error(), false
	case errors.Is(cause, errConnectTimeout) || errors.Is(err, errConnectTimeout):
		a.cause = fmt.Sprintf("connect timeout after %s (no connection to %s)", p.connect, p.url.Host)
	case errors.Is(cause, errResponseTimeout):
		a.cause = fmt.Sprintf("response timeout after %s", p.timeout)
	case errors.Is(err, ErrTargetRefused):
		a.cause, a.retryable, a.permanent = targetError(err), false, true
	case errors.Is(err, syscall.ECONNREFUSED):
		a.cause = "connection refused by " + p.url.Host
	default:
		var dnsErr *net.DNSError
		var netErr net.Error
		switch {
		case errors.As(err, &dnsErr):
			a.cause = "DNS: " + dnsErr.Error()
		case errors.As(err, &netErr) && netErr.Timeout():
			a.cause = fmt.Sprintf("connect timeout after %s (no connection to %s)", p.connect, p.url.Host)
		default:
			a.cause = unwrapURLError(err).Error()
		}
	}
	return a
}

// targetError returns the policy's message from a dial error chain.
func targetError(err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.Error()
	}
	return err.Error()
}

// unwrapURLError drops net/http's "Post \"url\": " prefix, which repeats what the job already says.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// globalRand is math/rand/v2's concurrency-safe global source.
type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) }

// restyLogger sends resty's own messages to slog at debug level.
type restyLogger struct{ log *slog.Logger }

func (l restyLogger) Errorf(format string, v ...any) {
	l.log.Debug("resty: " + fmt.Sprintf(format, v...))
}
func (l restyLogger) Warnf(format string, v ...any) {
	l.log.Debug("resty: " + fmt.Sprintf(format, v...))
}
func (l restyLogger) Debugf(format string, v ...any) {
	l.log.Debug("resty: " + fmt.Sprintf(format, v...))
}

// Waiting returns the number of requests waiting for a slot (the global or their job's bound) now.
func (s *Sender) Waiting() int { return int(s.limit.waiting.Load()) }
