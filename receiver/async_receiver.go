package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
)

// AsyncFunc does the work of an accepted item, in its own goroutine, after AsyncHandler has answered the
// request 202 Accepted. Returning nil completes the item with success, returning an error completes it
// with failure (the error's text as the message); r reports progress on the way, or a completion of its own
// (with Output or HasMore).
//
// ctx is cancelled when ejserver says the item is over for this receiver (a heartbeat's answer is not
// RUNNING, or is 401, 404 or 409) and when Shutdown gives up waiting; context.Cause(ctx) says which
// (ErrNotRunning, a *CallbackError, ErrShutdown). fn must return soon after: no completion is sent for a
// cancelled item, whose lease decides what happens next.
type AsyncFunc func(ctx context.Context, d Delivery, r *Reporter) error

// Causes of an AsyncFunc's cancelled context.
var (
	// ErrNotRunning: a heartbeat's answer says the execution is no longer RUNNING (it was cancelled,
	// completed elsewhere, or its lease ran out and the item is being POSTed again).
	ErrNotRunning = errors.New("the execution is no longer running")
	// ErrShutdown: Shutdown's context ran out before the work returned.
	ErrShutdown = errors.New("the receiver is shutting down")
)

// AsyncHandler returns a receiver for long-running items (docs/long-running.md). It verifies, decodes and
// dedupes like Handler, answers 202 Accepted at once and runs fn in a goroutine. While fn runs it sends a
// heartbeat every Options.HeartbeatInterval (a third of the delivery's leaseSeconds by default), carrying
// the progress last given to Reporter.Progress, so that the lease holds even if fn never reports; when fn
// returns, it completes the item (unless fn did). A completion is retried on network errors and 5xx
// (Callback's policy); errors that remain are told to Options.OnAsyncError.
//
// A duplicate of an accepted delivery (the same webhook-id) is answered 202 without running fn again. When
// it carries a later attempt (ejserver retried because the 202 was lost, or because the lease ran out),
// its callbackToken replaces the earlier one, and if fn has already finished its completion is sent again
// with the new token. An item whose execution ended under it (see AsyncFunc) is forgotten, so that a later
// delivery of it runs fn anew.
//
// Answers: 202 Accepted; 400 for a delivery without callbackUrl and callbackToken (ErrNoCallback) and the
// other refusals of Handler; 503 with Retry-After once Shutdown has begun.
//
// Call Shutdown to wait for the running work before the process exits.
func AsyncHandler(opts Options, fn AsyncFunc) *AsyncReceiver {
	opts = opts.withDefaults()
	base, cancel := context.WithCancelCause(context.Background())
	return &AsyncReceiver{
		intake: intake{opts: opts},
		fn:     fn,
		seen:   newDedupe[*Reporter](opts.DedupeSize, opts.DedupeTTL),
		clock:  clockOr(opts.clock),
		base:   base,
		cancel: cancel,
		idle:   make(chan struct{}),
	}
}

// AsyncReceiver is the http.Handler of AsyncHandler; it owns the goroutines running the accepted items.
type AsyncReceiver struct {
	intake
	fn    AsyncFunc
	seen  *dedupe[*Reporter]
	clock clock

	// base is the parent of every item's contexts; Shutdown cancels it when its wait runs out.
	base   context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	active  int  // goroutines running an item or re-sending a completion
	closing bool // Shutdown has begun: no new work
	idle    chan struct{}
}

var _ http.Handler = (*AsyncReceiver)(nil)

func (h *AsyncReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d, ok := h.delivery(w, r)
	if !ok {
		return
	}
	cb, err := h.callback(d)
	if err != nil {
		h.reject(w, r, http.StatusBadRequest, err)
		return
	}
	rep := &Reporter{h: h, d: d, cb: cb, attempt: d.Payload.Attempt, progress: -1}

	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	state, prev := h.seen.begin(d.ID, h.opts.Now(), rep)
	start := state == seenNew
	// A later attempt's token replaces the earlier one; an item already finished sends its completion again.
	replay := !start && prev.adopt(cb, d.Payload.Attempt) && state == seenDone && prev.beginReplay()
	if start || replay {
		h.active++
	}
	h.mu.Unlock()

	if !start && h.opts.OnDuplicate != nil {
		h.opts.OnDuplicate(d)
	}
	// Answer before the work starts, so that ejserver hears of the acceptance before any callback.
	w.WriteHeader(http.StatusAccepted)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	switch {
	case start:
		go h.run(rep)
	case replay:
		go h.replay(prev)
	}
}

// Shutdown refuses new deliveries (503) and waits for the running items: their work, heartbeats and
// completions. When ctx is done first it cancels them (cause ErrShutdown; no completion is sent, the lease
// decides), waits for fn to return, and returns ctx's error. Safe to call more than once.
func (h *AsyncReceiver) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if !h.closing {
		h.closing = true
		if h.active == 0 {
			close(h.idle)
		}
	}
	h.mu.Unlock()
	select {
	case <-h.idle:
		h.cancel(ErrShutdown)
		return nil
	case <-ctx.Done():
		h.cancel(ErrShutdown)
		<-h.idle
		return ctx.Err()
	}
}

func (h *AsyncReceiver) exit() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active--
	if h.closing && h.active == 0 {
		close(h.idle)
	}
}

func (h *AsyncReceiver) callback(d Delivery) (*Callback, error) {
	cb, err := callbackOf(d)
	if err != nil {
		return nil, err
	}
	cb.Client, cb.clock = h.opts.Client, h.clock
	return cb, nil
}

// callbackOf returns the Callback of a delivery: the body's fields, else the headers'.
func callbackOf(d Delivery) (*Callback, error) {
	p := d.Payload
	if p.CallbackURL == "" && p.CallbackToken == "" && d.Header != nil {
		p.CallbackURL, p.CallbackToken = d.Header.Get(HeaderCallbackURL), d.Header.Get(HeaderCallbackToken)
	}
	return NewCallback(p)
}

func (h *AsyncReceiver) report(d Delivery, err error) {
	if h.opts.OnAsyncError != nil {
		h.opts.OnAsyncError(d, err)
	}
}

// run is an accepted item's goroutine: fn, heartbeats beside it, then the completion.
func (h *AsyncReceiver) run(r *Reporter) {
	defer h.exit()
	work, cancel := context.WithCancelCause(h.base)
	defer cancel(nil)
	r.mu.Lock()
	r.cancelWork = cancel
	r.mu.Unlock()

	stop, beaten := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beaten)
		r.heartbeats(work, stop)
	}()
	err := r.call(work)
	close(stop)
	<-beaten

	r.mu.Lock()
	done, send := r.completion, false
	if done == nil && r.stopped == nil && h.base.Err() == nil {
		c := completionOf(err)
		done, send, r.completion = &c, true, &c // remembered, for a later attempt's delivery
	}
	r.mu.Unlock()
	if send {
		if _, err := r.send(h.base, func(cb *Callback) (Lease, error) { return cb.Complete(h.base, *done) }); err != nil {
			h.report(r.d, err)
		}
	}
	// Keep a completed item, to answer its duplicates; forget one that ended without a completion.
	h.seen.release(r.d.ID, r, done != nil, h.opts.Now())
}

// replay sends r's completion again, with the token of a later attempt.
func (h *AsyncReceiver) replay(r *Reporter) {
	defer h.exit()
	defer r.endReplay()
	r.mu.Lock()
	done := *r.completion
	r.mu.Unlock()
	if _, err := r.send(h.base, func(cb *Callback) (Lease, error) { return cb.Complete(h.base, done) }); err != nil {
		h.report(r.d, err)
	}
}

func completionOf(err error) Completion {
	if err == nil {
		return Completion{Status: StatusSuccess}
	}
	return Completion{Status: StatusFailure, Message: err.Error()}
}

// Reporter reports an accepted item's progress and end; AsyncHandler gives one to each AsyncFunc call. Its
// methods are safe for concurrent use.
type Reporter struct {
	h *AsyncReceiver
	d Delivery

	mu         sync.Mutex
	cb         *Callback // of the latest attempt seen
	attempt    int
	progress   int // -1: none reported yet
	message    string
	completion *Completion // once sent (by fn or by AsyncHandler)
	stopped    error       // why the work was cancelled
	cancelWork context.CancelCauseFunc
	replaying  bool
}

// Progress records progress (0-100) and message for the next automatic heartbeat, without a request.
func (r *Reporter) Progress(progress int, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if progress >= 0 {
		r.progress = progress
	}
	r.message = message
}

// Heartbeat sends a heartbeat now, with progress and message (see Callback.Heartbeat), and records them for
// the automatic ones. An answer other than RUNNING, or a final error (401, 404, 409), cancels fn's context.
func (r *Reporter) Heartbeat(ctx context.Context, progress int, message string) (Lease, error) {
	r.Progress(progress, message)
	lease, err := r.send(ctx, func(cb *Callback) (Lease, error) { return cb.Heartbeat(ctx, progress, message) })
	r.check(lease, err)
	return lease, err
}

// Complete ends the item with done's outcome now (with retries, see Callback.Complete), for a completion
// with Output or HasMore. AsyncHandler then sends no heartbeat and no completion of its own, whatever fn
// returns and whether or not this one succeeded: call it again on an error you want to retry.
func (r *Reporter) Complete(ctx context.Context, done Completion) (Lease, error) {
	r.mu.Lock()
	r.completion = &done
	r.mu.Unlock()
	return r.send(ctx, func(cb *Callback) (Lease, error) { return cb.Complete(ctx, done) })
}

// send calls op with the latest attempt's Callback; when op's token turned out stale because a later
// attempt arrived meanwhile, it calls op again with the new one.
func (r *Reporter) send(ctx context.Context, op func(*Callback) (Lease, error)) (Lease, error) {
	for {
		r.mu.Lock()
		cb := r.cb
		r.mu.Unlock()
		lease, err := op(cb)
		r.mu.Lock()
		adopted := r.cb != cb
		r.mu.Unlock()
		if !errors.Is(err, ErrStaleAttempt) || !adopted {
			return lease, err
		}
	}
}

// adopt takes the Callback of a later attempt's delivery; it reports whether attempt is later.
func (r *Reporter) adopt(cb *Callback, attempt int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if attempt <= r.attempt {
		return false
	}
	r.cb, r.attempt = cb, attempt
	return true
}

// beginReplay reports whether a completion is to be sent again now (there is one, and no resend is on).
func (r *Reporter) beginReplay() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.completion == nil || r.replaying {
		return false
	}
	r.replaying = true
	return true
}

func (r *Reporter) endReplay() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaying = false
}

// call runs fn; a panic fails the item instead of the process.
func (r *Reporter) call(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
			r.h.report(r.d, fmt.Errorf("async work of %s panicked: %v\n%s", r.d.ID, v, debug.Stack()))
		}
	}()
	return r.h.fn(ctx, r.d, r)
}

// heartbeats sends a heartbeat every interval until stop closes or ctx is done. A heartbeat that fails on
// the way is sent again after a back-off shorter than the interval; one whose answer ends the item stops
// the work (check).
func (r *Reporter) heartbeats(ctx context.Context, stop <-chan struct{}) {
	r.mu.Lock()
	interval, backoff := r.h.opts.HeartbeatInterval, r.cb.Backoff
	if interval <= 0 {
		interval = r.cb.HeartbeatInterval()
	}
	r.mu.Unlock()
	if backoff <= 0 {
		backoff = DefaultCallbackBackoff
	}
	wait, failures := interval, 0
	for {
		t := r.h.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		r.mu.Lock()
		done, progress, message := r.completion != nil, r.progress, r.message
		r.mu.Unlock()
		if done {
			return
		}
		body := newHeartbeatBody(progress, message)
		lease, err := r.send(ctx, func(cb *Callback) (Lease, error) { return cb.post(ctx, "heartbeat", body, 1) })
		r.check(lease, err)
		switch {
		case err == nil:
			wait, failures = interval, 0
		case ctx.Err() != nil:
			return
		default:
			failures++
			wait = min(jitter(expBackoff(backoff, interval, failures)), interval)
			r.h.report(r.d, err)
		}
	}
}

// check stops the work when a heartbeat's answer ends the item for this receiver: a state other than
// RUNNING, or a final error other than 400 (which says this request was wrong, not that the item is over).
func (r *Reporter) check(lease Lease, err error) {
	var cerr *CallbackError
	switch {
	case err == nil && lease.State != "" && lease.State != StateRunning:
		r.stop(fmt.Errorf("%w: it is %s", ErrNotRunning, lease.State))
	case errors.As(err, &cerr) && !cerr.Temporary() && cerr.StatusCode != http.StatusBadRequest:
		r.stop(err)
	}
}

// stop cancels the work with cause and forgets the item, so that a later delivery of it runs anew. An item
// fn has completed is left alone.
func (r *Reporter) stop(cause error) {
	r.mu.Lock()
	if r.stopped != nil || r.completion != nil {
		r.mu.Unlock()
		return
	}
	r.stopped = cause
	cancel := r.cancelWork
	r.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	r.h.seen.release(r.d.ID, r, false, r.h.opts.Now())
	r.h.report(r.d, fmt.Errorf("work on %s stopped: %w", r.d.ID, cause))
}
