package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/webhook"
)

// The outcomes of a delivery (the outcome label of ejserver_notifications_total, the history's outcome).
const (
	OutcomeSent    = "sent"    // the service accepted it
	OutcomeFailed  = "failed"  // every attempt failed, or the service refused it for good
	OutcomeDropped = "dropped" // the channel's queue was full, or the peer stopped before it was sent
	OutcomeUnknown = "unknown" // no channel of that name
)

// Channels looks channels up (Store satisfies it, from its watched cache).
type Channels interface {
	Lookup(name string) (Channel, bool)
}

// Recorder keeps what was sent where (the history store satisfies it). It is called off the caller's path,
// from the channel's worker.
type Recorder interface {
	WriteNotification(ctx context.Context, r Record) error
}

// Observer counts outcomes (ejserver_notifications_total{channel,outcome}).
type Observer interface {
	NotificationOutcome(channel, outcome string)
}

// Record is one notification's delivery to one channel, as the history keeps it.
type Record struct {
	NotificationID string    `json:"notificationId"`
	Channel        string    `json:"channel"`
	ChannelKind    string    `json:"channelKind"`
	Kind           Kind      `json:"kind"`
	Severity       Severity  `json:"severity"`
	Job            string    `json:"job,omitempty"`
	Rule           string    `json:"rule,omitempty"`
	DedupKey       string    `json:"dedupKey,omitempty"`
	Resolve        bool      `json:"resolve,omitempty"`
	Title          string    `json:"title"`
	Outcome        string    `json:"outcome" enums:"sent,failed,dropped,unknown"`
	Attempts       int       `json:"attempts"`
	Status         int       `json:"status,omitempty"` // the last HTTP status (0 for email and transport errors)
	Error          string    `json:"error,omitempty"`  // the last failure, scrubbed of the channel's secrets
	Instance       string    `json:"instance"`         // the peer that sent it
	CreatedAt      time.Time `json:"createdAt"`        // when it was decided (Notification.At)
	FinishedAt     time.Time `json:"finishedAt"`
}

// Result is the outcome of one delivery.
type Result struct {
	Outcome  string `json:"outcome"`
	Attempts int    `json:"attempts"`
	Status   int    `json:"status,omitempty"`
	Error    string `json:"error,omitempty"`
	// DurationMs is the whole delivery's time, attempts and back-off included.
	DurationMs int64 `json:"durationMs"`
}

// DispatcherConfig configures a Dispatcher. Channels is required.
type DispatcherConfig struct {
	Channels Channels
	Recorder Recorder
	Observer Observer
	// Dial connects HTTP and SMTP targets (the operator's target policy); a plain net.Dialer by default.
	Dial DialFunc
	// TLS is the base TLS config (its RootCAs, for a private CA); TLS 1.2+ with the system roots by default.
	TLS *tls.Config
	// QueueSize bounds each channel's queue (default 256): when full, a notification is dropped and counted.
	QueueSize int
	// InitialBackoff and MaxBackoff shape the exponential back-off between attempts (default 1s and 1m).
	InitialBackoff, MaxBackoff time.Duration
	// MaxRetryTime bounds one delivery, attempts and back-off together (default 10m).
	MaxRetryTime time.Duration
	// DrainTimeout bounds Stop's wait for queued notifications (default 5s); what is left is dropped.
	DrainTimeout time.Duration
	// Instance names this peer in the records.
	Instance  string
	UserAgent string
	Clock     clock.Clock
	Logger    *slog.Logger
	Rand      webhook.Rand
}

// Dispatcher delivers notifications: Deliver queues and returns at once; a worker per channel sends, with
// retries, back-off and per-attempt timeouts, so a hanging channel holds only its own queue.
type Dispatcher struct {
	cfg    DispatcherConfig
	client *http.Client
	log    *slog.Logger
	clk    clock.Clock

	mu       sync.Mutex
	queues   map[string]chan Notification
	stopping bool

	ctx    context.Context // cancelled when the drain deadline passes: in-flight attempts end
	cancel context.CancelFunc
	drain  chan struct{} // closed by Stop: workers finish their queues without retrying, then exit
	once   sync.Once
	wg     sync.WaitGroup

	rec recorder // writes the records off the caller's path
	// lastDropLog rate-limits the log lines of drops (queue full), per channel: the metric counts each.
	lastDropLog map[string]time.Time
}

var _ Deliverer = (*Dispatcher)(nil)

// NewDispatcher returns a dispatcher; Start is not needed before Deliver (workers start with their first
// notification), Stop ends them.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 256
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Minute
	}
	if cfg.MaxRetryTime <= 0 {
		cfg.MaxRetryTime = 10 * time.Minute
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "ejserver"
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		cfg.Dial = d.DialContext
	}
	tcfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tcfg = cfg.TLS.Clone()
	}
	transport := &http.Transport{DialContext: cfg.Dial, TLSClientConfig: tcfg, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second}
	d := &Dispatcher{cfg: cfg, log: cfg.Logger, clk: cfg.Clock, queues: map[string]chan Notification{},
		lastDropLog: map[string]time.Time{},
		drain:       make(chan struct{}),
		client: &http.Client{Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return d
}

// Start is here for the house's Start/Stop shape: workers start on demand.
func (d *Dispatcher) Start(context.Context) error { return nil }

// Stop stops taking notifications, lets the workers send what is queued (one attempt each, no retries) for
// up to DrainTimeout, then cancels what is in flight, drops the rest and returns once every worker exited.
// Safe twice and before Start.
func (d *Dispatcher) Stop() {
	d.once.Do(func() {
		d.mu.Lock()
		d.stopping = true
		d.mu.Unlock()
		close(d.drain)
		t := d.clk.NewTimer(d.cfg.DrainTimeout)
		done := make(chan struct{})
		go func() { d.wg.Wait(); close(done) }()
		select {
		case <-done:
			t.Stop()
		case <-t.C():
			d.cancel()
			<-done
		}
		d.cancel()
		d.client.CloseIdleConnections()
		d.stopRecorder()
	})
}

// Deliver queues n for each named channel and returns at once. A full queue drops n for that channel
// (counted and recorded); an unknown name is counted and logged.
func (d *Dispatcher) Deliver(n Notification, channels []string) {
	for _, name := range channels {
		ch, ok := d.cfg.Channels.Lookup(name)
		if !ok {
			d.finish(Channel{Name: name}, n, Result{Outcome: OutcomeUnknown, Error: "no channel of that name"})
			continue
		}
		switch d.enqueue(name, n) {
		case errStopping:
			d.finish(ch, n, Result{Outcome: OutcomeDropped, Error: "the peer is shutting down"})
		case errFull:
			d.finish(ch, n, Result{Outcome: OutcomeDropped, Error: fmt.Sprintf("the channel's queue is full (%d notifications waiting)", d.cfg.QueueSize)})
		}
	}
}

var (
	errStopping = errors.New("stopping")
	errFull     = errors.New("queue full")
)

// enqueue puts n on channel name's queue without waiting, starting its worker on first use. It holds the
// lock while it sends, so Forget never closes a queue a send is on its way to.
func (d *Dispatcher) enqueue(name string, n Notification) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return errStopping
	}
	q, ok := d.queues[name]
	if !ok {
		q = make(chan Notification, d.cfg.QueueSize)
		d.queues[name] = q
		d.wg.Add(1)
		go d.work(name, q)
	}
	select {
	case q <- n:
		return nil
	default:
		return errFull
	}
}

// Forget ends the worker of a channel that was deleted, once it has gone through what is queued (each
// found to have no channel any more); a notification for the name later starts a new one.
func (d *Dispatcher) Forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if q, ok := d.queues[name]; ok && !d.stopping {
		delete(d.queues, name)
		close(q)
	}
}

// work sends channel name's notifications one at a time, in order. Once Stop began it sends what is queued
// and exits; past the drain deadline what is left is dropped.
func (d *Dispatcher) work(name string, q chan Notification) {
	defer d.wg.Done()
	for {
		select {
		case n, ok := <-q:
			if !ok {
				return // forgotten: the channel was deleted
			}
			d.deliverOne(name, n)
		case <-d.drain:
			for {
				select {
				case n, ok := <-q:
					if !ok {
						return
					}
					d.deliverOne(name, n)
				default:
					return
				}
			}
		}
	}
}

func (d *Dispatcher) deliverOne(name string, n Notification) {
	ch, ok := d.cfg.Channels.Lookup(name) // read now: an edit since Deliver applies
	if d.ctx.Err() != nil {
		ch.Name = name
		d.finish(ch, n, Result{Outcome: OutcomeDropped, Error: "the peer stopped before it was sent"})
		return
	}
	if !ok {
		d.finish(Channel{Name: name}, n, Result{Outcome: OutcomeUnknown, Error: "the channel was deleted"})
		return
	}
	d.finish(ch, n, d.send(d.ctx, ch, n, false))
}

// Test sends n to c once, synchronously (POST /api/v1/channels/{name}/test), and records it like any other.
func (d *Dispatcher) Test(ctx context.Context, c Channel, n Notification) Result {
	res := d.send(ctx, c, n, true)
	d.finish(c, n, res)
	return res
}

// finish counts, logs and records one delivery.
func (d *Dispatcher) finish(c Channel, n Notification, res Result) {
	res.Error = c.Scrub(res.Error)
	if d.cfg.Observer != nil {
		d.cfg.Observer.NotificationOutcome(c.Name, res.Outcome)
	}
	if d.shouldLog(c.Name, res.Outcome) {
		level := slog.LevelInfo
		if res.Outcome != OutcomeSent {
			level = slog.LevelWarn
		}
		d.log.Log(context.Background(), level, "notification "+res.Outcome, "channel", c.Name, "channel_kind", string(c.Kind),
			"notification_id", n.ID, "kind", string(n.Kind), "job", n.Job, "attempts", res.Attempts, "status", res.Status,
			"err", res.Error)
	}
	if d.cfg.Recorder == nil {
		return
	}
	d.record(Record{NotificationID: n.ID, Channel: c.Name, ChannelKind: string(c.Kind), Kind: n.Kind,
		Severity: severityOf(n), Job: n.Job, Rule: n.Rule, DedupKey: n.DedupKey, Resolve: n.Resolve,
		Title: title(n), Outcome: res.Outcome, Attempts: res.Attempts, Status: res.Status, Error: res.Error,
		Instance: d.cfg.Instance, CreatedAt: n.At, FinishedAt: d.clk.Now()})
}

// attempt is one try's outcome.
type attempt struct {
	status     int
	err        string
	permanent  bool          // retrying will not help
	retryAfter time.Duration // the service asked for this pause (429 Retry-After)
}

// send delivers n to c: attempts until one succeeds, one fails for good, MaxAttempts or MaxRetryTime is
// reached, or ctx ends. once sends a single attempt (the test endpoint). After Stop began, a failed attempt
// is not retried.
func (d *Dispatcher) send(ctx context.Context, c Channel, n Notification, once bool) Result {
	start := d.clk.Now()
	maxAttempts := c.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	if once {
		maxAttempts = 1
	}
	timeout := time.Duration(c.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = DefaultTimeoutMs * time.Millisecond
	}
	deadline := start.Add(d.cfg.MaxRetryTime)
	var res Result
	var prev time.Duration
	policy := ejserver.RetryPolicy{InitialBackoffMs: int(d.cfg.InitialBackoff / time.Millisecond),
		MaxBackoffMs: int(d.cfg.MaxBackoff / time.Millisecond)}
	for {
		res.Attempts++
		actx, cancel := context.WithTimeout(ctx, timeout)
		a := d.attempt(actx, c, n)
		cancel()
		res.Status, res.Error = a.status, a.err
		if a.err == "" {
			res.Outcome = OutcomeSent
			break
		}
		res.Outcome = OutcomeFailed
		if a.permanent || res.Attempts >= maxAttempts || ctx.Err() != nil || d.draining() {
			break
		}
		wait := webhook.Backoff(policy, webhook.DecorrelatedJitter, res.Attempts, prev, d.rand())
		prev = wait
		if a.retryAfter > wait {
			wait = a.retryAfter
		}
		if d.clk.Now().Add(wait).After(deadline) {
			res.Error += fmt.Sprintf(" (no retry: the next one would pass the delivery's %s bound)", d.cfg.MaxRetryTime)
			break
		}
		if !d.sleep(ctx, wait) {
			break
		}
	}
	res.DurationMs = d.clk.Since(start).Milliseconds()
	return res
}

func (d *Dispatcher) draining() bool {
	select {
	case <-d.drain:
		return true
	default:
		return false
	}
}

func (d *Dispatcher) rand() webhook.Rand {
	if d.cfg.Rand != nil {
		return d.cfg.Rand
	}
	return globalRand{}
}

// sleep waits d, or until ctx ends or Stop begins; it reports whether the wait ran out.
func (d *Dispatcher) sleep(ctx context.Context, wait time.Duration) bool {
	t := d.clk.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
	case <-d.drain:
	}
	return false
}

// attempt makes one try.
func (d *Dispatcher) attempt(ctx context.Context, c Channel, n Notification) attempt {
	if c.Kind == ChannelEmail {
		msg, err := RenderEmail(c, n)
		if err != nil {
			return attempt{err: "render: " + err.Error(), permanent: true}
		}
		err = sendMail(ctx, d.cfg.Dial, d.cfg.TLS, c.Email, msg)
		if err == nil {
			return attempt{}
		}
		var se *smtpError
		return attempt{err: err.Error(), permanent: errors.As(err, &se) && se.permanent}
	}
	req, err := Render(c, n, d.clk.Now())
	if err != nil {
		return attempt{err: "render: " + err.Error(), permanent: true}
	}
	return d.post(ctx, c, req)
}

// maxResponse is how much of a service's answer is read.
const maxResponse = 64 << 10

func (d *Dispatcher) post(ctx context.Context, c Channel, r Request) attempt {
	hr, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return attempt{err: "bad request: the channel's URL is not usable", permanent: true}
	}
	hr.Header = r.Header.Clone()
	hr.Header.Set("User-Agent", d.cfg.UserAgent)
	resp, err := d.client.Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // its text holds the URL, which may hold a token
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return attempt{err: fmt.Sprintf("no answer within %dms", c.TimeoutMs)}
		}
		return attempt{err: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	a := attempt{status: resp.StatusCode}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if msg := robotError(c.Kind, body); msg != "" {
			a.err = msg // DingTalk and WeCom answer 200 with an errcode
		}
		return a
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		if ra, ok := webhook.ParseRetryAfter(resp.Header.Get("Retry-After"), d.clk.Now()); ok {
			a.retryAfter = ra
		}
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
	default:
		a.permanent = true // 3xx and 4xx: the request is wrong, retrying will not help
	}
	a.err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, excerpt(body))
	return a
}

// robotError reads the errcode of a DingTalk or WeCom answer: "" when it is 0 (or not there).
func robotError(k ChannelKind, body []byte) string {
	if k != ChannelDingTalk && k != ChannelWeCom {
		return ""
	}
	var v struct {
		ErrCode *int   `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
	}
	if json.Unmarshal(body, &v) != nil || v.ErrCode == nil || *v.ErrCode == 0 {
		return ""
	}
	return fmt.Sprintf("errcode %d: %s", *v.ErrCode, truncate(oneLine(v.ErrMsg), 200))
}

func excerpt(b []byte) string { return truncate(oneLine(string(b)), 300) }
