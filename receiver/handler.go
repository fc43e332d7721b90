package receiver

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultDedupeSize   = 10000
	DefaultDedupeTTL    = time.Hour
	DefaultMaxBodyBytes = 1 << 20
)

// Delivery is one verified, decoded, first-seen request.
type Delivery struct {
	// ID is the webhook-id: the executionId (plus ".n" for a DATAFLOW re-POST n > 1).
	ID      string
	Payload Payload
	Header  http.Header
}

// Func handles a delivery. An error answers 500 and forgets the webhook-id, so ejserver's retry runs the
// delivery again; its message is not sent back.
type Func func(ctx context.Context, d Delivery) (Response, error)

// Options configures Handler and AsyncHandler.
type Options struct {
	// Secret verifies signatures when set ("whsec_..."); empty accepts unsigned requests (for local demos).
	Secret string
	// Tolerance for webhook-timestamp; DefaultTolerance if 0.
	Tolerance time.Duration
	// DedupeSize bounds how many webhook-ids are remembered (least recently seen dropped first);
	// DefaultDedupeSize if 0, no deduplication if negative.
	DedupeSize int
	// DedupeTTL is how long a webhook-id is remembered; DefaultDedupeTTL if 0.
	DedupeTTL time.Duration
	// MaxBodyBytes bounds the request body; DefaultMaxBodyBytes if 0.
	MaxBodyBytes int64
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// OnReject, if set, is told about every request refused (bad signature, bad body); status is the answer.
	OnReject func(r *http.Request, status int, err error)
	// OnDuplicate, if set, is told about every delivery answered from memory instead of calling Func.
	OnDuplicate func(d Delivery)

	// Client sends AsyncHandler's callbacks; http.DefaultClient if nil (each request has its own deadline,
	// DefaultCallbackTimeout).
	Client *http.Client
	// HeartbeatInterval is how often AsyncHandler sends a heartbeat while an item's work runs; a third of
	// the delivery's leaseSeconds if 0.
	HeartbeatInterval time.Duration
	// OnAsyncError, if set, is told what goes wrong after AsyncHandler answered 202: a callback that failed
	// (a heartbeat, which is sent again, or a completion that gave up), work stopped because its execution
	// ended under it, a panic in the work.
	OnAsyncError func(d Delivery, err error)

	clock clock // AsyncHandler's timers; the system clock if nil (tests set a fake one)
}

// Handler returns an http.Handler that verifies (when Options.Secret is set), decodes, dedupes by webhook-id
// and calls fn once per webhook-id, answering 200 with fn's Response as JSON. A duplicate of a handled
// delivery gets the same answer again without calling fn (so a DATAFLOW retry still sees hasMore); a
// duplicate that arrives while the first is still being handled gets 503 with Retry-After: 1.
//
// Answers: 401 for a failed verification, 400 for a body that is not a Payload, 413 for a body over
// MaxBodyBytes, 500 when fn fails.
func Handler(opts Options, fn Func) http.Handler {
	opts = opts.withDefaults()
	return &handler{intake: intake{opts: opts}, fn: fn, seen: newDedupe[Response](opts.DedupeSize, opts.DedupeTTL)}
}

func (o Options) withDefaults() Options {
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	if o.DedupeSize == 0 {
		o.DedupeSize = DefaultDedupeSize
	}
	if o.DedupeTTL <= 0 {
		o.DedupeTTL = DefaultDedupeTTL
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

type handler struct {
	intake
	fn   Func
	seen *dedupe[Response]
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d, ok := h.delivery(w, r)
	if !ok {
		return
	}
	state, prev := h.seen.begin(d.ID, h.opts.Now(), Response{})
	switch state {
	case seenDone:
		if h.opts.OnDuplicate != nil {
			h.opts.OnDuplicate(d)
		}
		writeJSON(w, http.StatusOK, prev)
		return
	case seenRunning:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "this webhook-id is being handled", http.StatusServiceUnavailable)
		return
	}
	resp, err := h.fn(r.Context(), d)
	if err != nil {
		h.seen.forget(d.ID)
		http.Error(w, "handler failed", http.StatusInternalServerError)
		return
	}
	h.seen.done(d.ID, resp, h.opts.Now())
	writeJSON(w, http.StatusOK, resp)
}

// intake is what Handler and AsyncHandler do before their function sees a request: read the body within
// MaxBodyBytes, verify the signature, decode the Payload.
type intake struct {
	opts Options
}

// delivery reads, verifies and decodes r; when it reports false it has answered the request.
func (in *intake) delivery(w http.ResponseWriter, r *http.Request) (Delivery, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, in.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			in.reject(w, r, http.StatusRequestEntityTooLarge, err)
		} else {
			in.reject(w, r, http.StatusBadRequest, fmt.Errorf("read body: %w", err))
		}
		return Delivery{}, false
	}
	if in.opts.Secret != "" {
		if err := VerifyAt(in.opts.Secret, r.Header, body, in.opts.Now(), in.opts.Tolerance); err != nil {
			in.reject(w, r, http.StatusUnauthorized, err)
			return Delivery{}, false
		}
	}
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil {
		in.reject(w, r, http.StatusBadRequest, fmt.Errorf("decode body: %w", err))
		return Delivery{}, false
	}
	d := Delivery{ID: r.Header.Get("webhook-id"), Payload: p, Header: r.Header}
	if d.ID == "" {
		d.ID = p.ExecutionID
	}
	return d, true
}

func (in *intake) reject(w http.ResponseWriter, r *http.Request, status int, err error) {
	if in.opts.OnReject != nil {
		in.opts.OnReject(r, status, err)
	}
	http.Error(w, http.StatusText(status), status)
}

func writeJSON(w http.ResponseWriter, status int, v Response) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v) // a Response always encodes
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// dedupe remembers webhook-ids and a value for each (the answer Handler gave, the run AsyncHandler started):
// a bounded LRU whose entries also expire after ttl once done.
type dedupe[V comparable] struct {
	size int
	ttl  time.Duration

	mu    sync.Mutex
	order *list.List // of *entry[V], most recently seen first
	byID  map[string]*list.Element
}

type seenState int

const (
	seenNew seenState = iota
	seenRunning
	seenDone
)

type entry[V comparable] struct {
	id      string
	running bool
	val     V
	expires time.Time
}

func newDedupe[V comparable](size int, ttl time.Duration) *dedupe[V] {
	return &dedupe[V]{size: size, ttl: ttl, order: list.New(), byID: make(map[string]*list.Element)}
}

// begin records id as being handled, with v, or reports that it is running or done (with its value).
func (d *dedupe[V]) begin(id string, now time.Time, v V) (seenState, V) {
	var zero V
	if d.size < 0 || id == "" {
		return seenNew, zero
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.byID[id]; ok {
		e := el.Value.(*entry[V])
		if e.running {
			return seenRunning, e.val
		}
		if now.Before(e.expires) {
			d.order.MoveToFront(el)
			return seenDone, e.val
		}
		d.order.Remove(el)
		delete(d.byID, id)
	}
	d.byID[id] = d.order.PushFront(&entry[V]{id: id, running: true, val: v})
	for d.order.Len() > d.size {
		last := d.order.Back()
		d.order.Remove(last)
		delete(d.byID, last.Value.(*entry[V]).id)
	}
	return seenNew, zero
}

// done marks id handled, remembering v until the TTL runs out.
func (d *dedupe[V]) done(id string, v V, now time.Time) {
	if d.size < 0 || id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.byID[id]; ok {
		e := el.Value.(*entry[V])
		e.running, e.val, e.expires = false, v, now.Add(d.ttl)
	}
}

// forget drops id, so that its next delivery is handled anew.
func (d *dedupe[V]) forget(id string) {
	if d.size < 0 || id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.byID[id]; ok {
		d.order.Remove(el)
		delete(d.byID, id)
	}
}

// release ends id's handling if its entry still holds v (a later delivery may have replaced it): keep marks
// it done until the TTL runs out, !keep forgets it.
func (d *dedupe[V]) release(id string, v V, keep bool, now time.Time) {
	if d.size < 0 || id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	el, ok := d.byID[id]
	if !ok {
		return
	}
	e := el.Value.(*entry[V])
	if e.val != v {
		return
	}
	if keep {
		e.running, e.expires = false, now.Add(d.ttl)
		return
	}
	d.order.Remove(el)
	delete(d.byID, id)
}

// len returns the number of remembered ids (for tests).
func (d *dedupe[V]) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.Len()
}
