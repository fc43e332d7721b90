package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"maps"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver/internal/tracing"
)

// attemptState is one request's own state, in one allocation: its timers and the callbacks net/http calls
// while the request is under way (what was five captured variables and a context value of its own).
type attemptState struct {
	s       *Sender
	p       *prepared
	sent    func()
	cancel  context.CancelCauseFunc
	trace   httptrace.ClientTrace
	mu      sync.Mutex
	connect Timer // from the start until a connection is ready
	resp    Timer // from then until the body has been read
	// handshook: a TLS handshake completed in this attempt
	handshook atomic.Bool
}

// attemptKey holds the attempt's *attemptState in its context: the dial reads the connect timeout there.
type attemptKey struct{}

// connectTimeout returns the connect timeout of the attempt whose context ctx is, if it is one.
func connectTimeout(ctx context.Context) (t time.Duration, ok bool) {
	if a, _ := ctx.Value(attemptKey{}).(*attemptState); a != nil {
		return a.p.connect, true
	}
	return 0, false
}

func (a *attemptState) gotConn(httptrace.GotConnInfo) {
	if a.connect.Stop() {
		a.mu.Lock()
		a.resp = a.s.clock.AfterFunc(a.p.timeout, a.responseTimeout)
		a.mu.Unlock()
	}
}

func (a *attemptState) connectTimedOut() { a.cancel(errConnectTimeout) }
func (a *attemptState) responseTimeout() { a.cancel(errResponseTimeout) }

func (a *attemptState) wroteRequest(httptrace.WroteRequestInfo) {
	if a.sent != nil {
		a.sent()
	}
}

func (a *attemptState) tlsHandshakeDone(_ tls.ConnectionState, err error) {
	a.handshook.Store(err == nil)
}

// stop stops the attempt's timers.
func (a *attemptState) stop() {
	a.connect.Stop()
	a.mu.Lock()
	if a.resp != nil {
		a.resp.Stop()
	}
	a.mu.Unlock()
}

// requestHeader returns a request's headers: a copy of the template's static ones (sharing their values,
// which are never appended to), the item's shardingContext, and the request's own, their values in one
// array. The map is sized for exactly what it gets: up to eight entries it is one small map, not a table.
func (p *prepared) requestHeader(ctx context.Context, id string, ts int64, sig string, callback *[2]string) http.Header {
	n := len(p.header) + 3 // shardingContext, webhook-id, webhook-timestamp
	if sig != "" {
		n++
	}
	if callback != nil {
		n += 2
	}
	sc := trace.SpanContextFromContext(ctx)
	if sc.IsValid() {
		n++ // traceparent
		if sc.TraceState().Len() > 0 {
			n++
		}
	}
	h := make(http.Header, n)
	maps.Copy(h, p.header)
	h[HeaderShardingContext] = p.sc[:]
	vals := make([]string, 5)
	vals[0], vals[1] = id, strconv.FormatInt(ts, 10)
	h[HeaderID], h[HeaderTimestamp] = vals[0:1:1], vals[1:2:2]
	if sig != "" {
		vals[2] = sig
		h[HeaderSignature] = vals[2:3:3]
	}
	if callback != nil {
		vals[3], vals[4] = callback[0], callback[1]
		h[HeaderCallbackURL], h[HeaderCallbackToken] = vals[3:4:4], vals[4:5:5]
	}
	tracing.Inject(ctx, h)
	return h
}

// request sends request n of iteration it. The connect timer runs from the start until a connection is
// ready (DNS, TCP, TLS); the response timer from then until the body has been read.
//
// It hands the request to the transport itself: resty and http.Client each copied the header map, resty
// built a request of six maps and parsed the URL again, per request, for nothing this sender uses (redirects
// are never followed, there is no cookie jar or client timeout, retries are Deliver's). What goes on the
// wire is what they sent (TestRequestHeadersOnTheWire).
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
	var cb *[2]string
	if d.Callback != nil {
		cb = &callback
	}
	h := p.requestHeader(ctx, id, ts, p.signature(d.Webhook, now, id, ts, body), cb)

	a := &attemptState{s: s, p: p, sent: d.Sent}
	actx, cancel := context.WithCancelCause(context.WithValue(ctx, attemptKey{}, a))
	defer cancel(nil)
	a.cancel = cancel
	a.connect = s.clock.AfterFunc(p.connect, a.connectTimedOut)
	defer a.stop()
	// each hook is an allocation (a method value): only those that have something to do
	a.trace.GotConn = a.gotConn
	if p.url.Scheme == "https" {
		a.trace.TLSHandshakeDone = a.tlsHandshakeDone
	}
	if d.Sent != nil {
		a.trace.WroteRequest = a.wroteRequest
	}
	actx = httptrace.WithClientTrace(actx, &a.trace)

	resp, err := p.rt.RoundTrip(p.newRequest(actx, h, body))
	if err != nil {
		r := s.transportFailure(actx, ctx, p, err)
		if a.handshook.Load() && closedAfterHandshake(err) {
			r.cause += closedAfterHandshakeHint
		}
		return r
	}
	raw := resp.Body
	if raw == nil { // as http.Client does
		raw = http.NoBody
	}
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
	r := attemptResult{status: resp.StatusCode, excerpt: excerpt(buf.Bytes(), s.cfg.ExcerptBytes)}
	if readErr != nil {
		f := s.transportFailure(actx, ctx, p, readErr)
		f.status, f.excerpt = r.status, r.excerpt
		f.cause = "HTTP " + strconv.Itoa(r.status) + ", then reading the body: " + f.cause
		return f
	}
	return classify(r, resp.Header, buf.Bytes(), d.Streaming, now)
}

// newRequest is the request of one attempt, as http.NewRequestWithContext makes it: the template's URL
// (parsed once; net/http never writes to it), the body as a reader sent with its length, which net/http
// can rewind (GetBody) to retry on a keep-alive connection the receiver had closed. The body stays an
// io.NopCloser of a *bytes.Reader: net/http knows that one is in memory and writes the headers and the body
// to the connection together (TestWideRequestLeavesInOneWrite).
func (p *prepared) newRequest(ctx context.Context, h http.Header, body []byte) *http.Request {
	req := &http.Request{
		Method: p.method, URL: p.url, Host: p.url.Host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		GetBody: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil },
	}
	return req.WithContext(ctx)
}
