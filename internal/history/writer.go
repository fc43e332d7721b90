package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// Sink is what a Writer writes to; a Store is one. An error whose code is EUNAVAILABLE (the store is down or
// busy) makes the Writer keep the batch and retry it; any other error makes it retry the batch record by
// record and drop the records that still fail.
type Sink interface {
	WriteExecutions(ctx context.Context, recs []ejserver.Execution) error
	WriteTraces(ctx context.Context, recs []ejserver.StatusTrace) error
}

// BatchSink is a Sink that can write executions and status traces in one transaction (both stores): the
// Writer then commits once per batch instead of once per table.
type BatchSink interface {
	Sink
	WriteBatch(ctx context.Context, execs []ejserver.Execution, traces []ejserver.StatusTrace) error
}

// WriterConfig configures a Writer. Zero fields take the defaults shown.
type WriterConfig struct {
	// QueueSize bounds the records held (queued, being written or waiting for a retry): DefaultQueueSize.
	QueueSize int
	// BatchSize is the most executions written in one transaction: 500, with up to three status traces
	// each beside them (a task's), or up to BatchSize traces alone. A full batch is written at once.
	BatchSize int
	// FlushInterval is how long a record may wait for a batch to fill: 250ms.
	FlushInterval time.Duration
	// RetryMin and RetryMax bound the back-off after a failed write: 500ms doubling up to 15s.
	RetryMin, RetryMax time.Duration
	// WriteTimeout bounds one batch's write: 10s.
	WriteTimeout time.Duration
	// StopTimeout bounds the final flush of Stop: 5s.
	StopTimeout time.Duration
	// CommitDelay is how long a record someone waits for (EnqueueCommitted) may wait for others to join its
	// batch: 5ms. Records that arrive while a batch is being written join the next one, so under load the
	// batches stay large (group commit) while an idle peer's waiter pays one transaction.
	CommitDelay time.Duration
	// CommitWindow bounds how long such a batch gathers while more waited-for records keep joining it: after
	// CommitDelay the Writer waits another CommitDelay as long as one arrived during the last, until
	// CommitWindow after the first (default: CommitDelay, one wait). A wave of item ends, which arrive over
	// tens of milliseconds, is then one transaction rather than one every CommitDelay.
	CommitWindow time.Duration
	// DropLogInterval is the least time between two logs of dropped records: 10s.
	DropLogInterval time.Duration
	// StartHold is how long a running record nobody waits for (an item's start record, an accepted item's
	// heartbeat) may stay queued so that the record replacing it (its end) can take its place: a short item
	// is then written as one row instead of an insert and an update of that row, each with its indexes and
	// the stats rollup's triggers. A held record is written StartHold (plus up to FlushInterval) after it was
	// queued if nothing replaced it, and at once by Stop. 0 (the default) holds nothing.
	// A task's staging and running traces are held as long, until the trace of its end is queued
	// (holdTraces), so that the task's traces are written in one transaction.
	StartHold time.Duration
	// Yield, if set, is asked before each batch how long to hold off so the peer's own work goes first
	// (dispatch.Activity.Busy: a burst of webhooks is leaving, or about to). A flush holds off at most
	// MaxYield in all (default 1s), so records are late by that much at worst and never starved; the
	// final flush at Stop does not hold off.
	Yield    func() time.Duration
	MaxYield time.Duration
	// NoStatusTraces leaves JOB_STATUS_TRACE_LOG alone: EnqueueTrace accepts a trace and writes nothing (as
	// ElasticJob writes no trace without a tracing configuration). With SQLite at 10,000 jobs a task's three
	// traces are ~40 % of the writer's CPU (docs/benchmarks.md); the executions and the stats stay.
	NoStatusTraces bool
	// ShedTracesAt is the backlog (records held) at which the Writer sheds status traces to keep up with the
	// executions: StatusTraces answers false, so a producer traces no new task, until the backlog is back down
	// to half of it. An execution is worth more than its task's traces, and with SQLite a task's traces cost about
	// as much to write as its execution (docs/benchmarks.md): a writer that falls behind (a peer whose machine
	// saturates) then drops traces first rather than executions. Default QueueSize/2; negative: never shed.
	ShedTracesAt int
	Logger       *slog.Logger
	Clock        clock.Clock
}

// DefaultQueueSize is WriterConfig.QueueSize's default (and --history-queue's): ~10-13 MB held at most.
const DefaultQueueSize = 20000

func (c WriterConfig) withDefaults() WriterConfig {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.ShedTracesAt == 0 {
		c.ShedTracesAt = max(c.QueueSize/2, 1)
	}
	set(&c.FlushInterval, 250*time.Millisecond)
	set(&c.RetryMin, 500*time.Millisecond)
	set(&c.RetryMax, 15*time.Second)
	set(&c.WriteTimeout, 10*time.Second)
	set(&c.StopTimeout, 5*time.Second)
	set(&c.CommitDelay, 5*time.Millisecond)
	set(&c.CommitWindow, c.CommitDelay)
	set(&c.DropLogInterval, 10*time.Second)
	set(&c.MaxYield, time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}

// HealthState is the Writer's health.
type HealthState string

// The health states.
const (
	HealthOK       HealthState = "ok"       // the last write succeeded (or none was needed yet)
	HealthDegraded HealthState = "degraded" // the last write failed; records queue up, then are dropped
)

// Health is the Writer's state for /readyz and metrics.
type Health struct {
	State HealthState `json:"state"`
	// LastError is the last write error while degraded.
	LastError string `json:"lastError,omitempty"`
	// Since is when the state began (zero before any state change).
	Since time.Time `json:"since,omitzero"`
}

// WriterStats are the Writer's counters.
type WriterStats struct {
	Backlog  int   `json:"backlog"`  // records held: queued, being written or waiting for a retry
	Written  int64 `json:"written"`  // records written since the Writer was made
	Dropped  int64 `json:"dropped"`  // records lost: queue full, rejected by the store, or left at Stop
	Failures int64 `json:"failures"` // failed write attempts
	// TracesShed counts the tasks left without status traces because the writer was behind (ShedTracesAt).
	TracesShed int64 `json:"tracesShed"`
}

// Writer records executions and status traces in the background, so that a fire never waits for the store.
// Enqueue never blocks: a record that finds the queue full is dropped, counted and logged (rate-limited).
// Records are written in batches of up to BatchSize, one transaction each, as soon as a batch is full or
// FlushInterval after the first record. When the store fails, the Writer keeps the batch, reports degraded
// health and retries with back-off; the queue fills meanwhile and then drops; writes resume by themselves
// when the store answers again. Records enqueued before Start (or after Stop) wait in the queue for the next
// Start.
type Writer struct {
	sink Sink
	cfg  WriterConfig
	log  *slog.Logger

	kick   chan struct{} // a full batch is waiting
	urgent chan struct{} // a record someone waits for is queued

	mu        sync.Mutex
	execs     []ejserver.Execution // queued
	execWaits []*waiter            // beside execs: the waiter of each record (nil: nobody waits)
	execAt    []time.Time          // beside execs: when each record was queued (only with StartHold)
	draining  bool                 // the final flush: hold nothing back
	traces    []ejserver.StatusTrace
	traceAt   []time.Time // beside traces: when each was queued (only with StartHold)
	// heldExecs and heldTraces are the records the last take kept back, at the queues' heads: a full batch
	// is BatchSize records queued since, so that held records do not make every Enqueue wake the writer.
	heldExecs, heldTraces int
	inflight              int // records taken by the goroutine and not yet written or dropped
	health                Health
	unlogged              int64 // drops not logged yet
	lastDropLog           time.Time

	written, dropped, failures atomic.Int64
	shedding                   atomic.Bool  // status traces are shed (ShedTracesAt) until the backlog is down to half
	tracesShed                 atomic.Int64 // the tasks StatusTraces answered false for while shedding
	waited                     atomic.Int64 // records queued with a waiter: gather's measure of a wave

	runMu  sync.Mutex
	cancel context.CancelFunc // ends the goroutine's context: Stop
	done   chan struct{}

	// Owned by the goroutine: records taken from the queue, written in BatchSize chunks.
	pendExecs  []ejserver.Execution
	pendWaits  []*waiter // beside pendExecs
	pendTraces []ejserver.StatusTrace
	// takenExecs and takenTraces are the arrays of the last take, whole (pend* advance through them); under
	// mu, with bufs (the arrays kept for reuse).
	takenExecs  queued
	takenTraces queuedTraces
	bufs        queueBufs
}

// NewWriter returns a Writer to sink; Start it to have it write.
func NewWriter(sink Sink, cfg WriterConfig) *Writer {
	cfg = cfg.withDefaults()
	return &Writer{
		sink:   sink,
		cfg:    cfg,
		log:    cfg.Logger,
		kick:   make(chan struct{}, 1),
		urgent: make(chan struct{}, 1),
		health: Health{State: HealthOK},
	}
}

// Enqueue queues an execution record (a start or an end record) and reports whether it was accepted. It never
// blocks; a record that finds the queue full is dropped and counted.
func (w *Writer) Enqueue(e ejserver.Execution) bool {
	queued, _ := w.enqueue(e, nil)
	return queued
}

// enqueue queues e with its waiter (if any) and reports whether it was accepted. While the Writer is
// degraded a waiter is not kept: the record is queued without it and failing is the Writer's health, for the
// caller to tell the waiter at once. The health is read under the lock that queues the record, so an item's
// end takes the Writer's lock once (a fanout fire's ends arrive together, and each took it twice).
func (w *Writer) enqueue(e ejserver.Execution, wait *waiter) (queued bool, failing *Health) {
	w.mu.Lock()
	if w.fullLocked() {
		w.dropLocked(1)
		w.mu.Unlock()
		return false, nil
	}
	if wait != nil && w.health.State == HealthDegraded {
		h := w.health
		wait, failing = nil, &h
	}
	w.execs = append(w.execs, e)
	w.execWaits = append(w.execWaits, wait)
	if wait != nil {
		w.waited.Add(1)
	}
	if w.cfg.StartHold > 0 {
		w.execAt = append(w.execAt, w.cfg.Clock.Now())
	}
	full := len(w.execs)-w.heldExecs >= w.cfg.BatchSize
	w.mu.Unlock()
	if full {
		w.signal()
	}
	if wait != nil {
		select {
		case w.urgent <- struct{}{}:
		default:
		}
	}
	return true, failing
}

// ErrNotCommitted is EnqueueCommitted's answer when the record was queued but is not known to be in the
// store: the store is failing (degraded), the wait was cut short, or the record was dropped.
var ErrNotCommitted = ejserver.Errorf(ejserver.EUNAVAILABLE, "history record not committed")

// EnqueueCommitted queues an execution record like Enqueue and waits until the transaction holding it has
// committed (nil), or until ctx ends, the record is dropped or the Writer is degraded (an error wrapping
// ErrNotCommitted; a record still queued is written later, as Enqueue's are). The record still travels in a
// batch: the Writer writes at most CommitDelay after the first such record, with whatever joined it.
// While the Writer is degraded it does not wait at all, so that a store that is down never holds up the
// work that waits here.
func (w *Writer) EnqueueCommitted(ctx context.Context, e ejserver.Execution) error {
	done := make(chan error, 1)
	w.EnqueueCommittedThen(ctx, e, func(err error) { done <- err })
	return <-done
}

// StatusTraces reports whether the Writer takes the status traces of a task beginning now: not with
// NoStatusTraces, nor while it sheds them (ShedTracesAt), which counts the task in TracesShed. A producer asks
// once per task and leaves the task's traces unbuilt on false (dispatch.StatusTracer), so a task is traced
// whole or not at all.
func (w *Writer) StatusTraces() bool {
	if w.cfg.NoStatusTraces {
		return false
	}
	if w.cfg.ShedTracesAt < 0 {
		return true
	}
	backlog := w.backlog()
	switch {
	case backlog >= w.cfg.ShedTracesAt && w.shedding.CompareAndSwap(false, true):
		w.log.Warn("history writer behind: new tasks get no status traces until it catches up", "backlog", backlog,
			"shed_at", w.cfg.ShedTracesAt)
	case backlog <= w.cfg.ShedTracesAt/2 && w.shedding.CompareAndSwap(true, false):
		w.log.Info("history writer caught up: status traces resumed", "backlog", backlog,
			"tasks_without_traces", w.tracesShed.Load())
	}
	if w.shedding.Load() {
		w.tracesShed.Add(1)
		return false
	}
	return true
}

// EnqueueTrace queues a status trace, like Enqueue; with NoStatusTraces it takes it and writes nothing.
func (w *Writer) EnqueueTrace(t ejserver.StatusTrace) bool {
	if w.cfg.NoStatusTraces {
		return true
	}
	w.mu.Lock()
	if w.fullLocked() {
		w.dropLocked(1)
		w.mu.Unlock()
		return false
	}
	w.traces = append(w.traces, t)
	if w.cfg.StartHold > 0 {
		w.traceAt = append(w.traceAt, w.cfg.Clock.Now())
	}
	full := len(w.traces)-w.heldTraces >= w.tracesBeside(w.cfg.BatchSize) // what a full batch's transaction takes
	w.mu.Unlock()
	if full {
		w.signal()
	}
	return true
}

func (w *Writer) signal() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Writer) fullLocked() bool {
	return w.backlogLocked() >= w.cfg.QueueSize
}

// dropLocked counts n lost records; the goroutine logs them, so that Enqueue does no I/O.
func (w *Writer) dropLocked(n int) {
	w.dropped.Add(int64(n))
	w.unlogged += int64(n)
}

// Stats returns the Writer's counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Backlog: w.backlog(), Written: w.written.Load(), Dropped: w.dropped.Load(), Failures: w.failures.Load(),
		TracesShed: w.tracesShed.Load()}
}

// backlog is the records held: queued, being written or waiting for a retry.
func (w *Writer) backlog() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.backlogLocked()
}

func (w *Writer) backlogLocked() int { return len(w.execs) + len(w.traces) + w.inflight }

// Health returns the Writer's health.
func (w *Writer) Health() Health {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.health
}

// Start starts the Writer's goroutine. It runs until Stop, or until ctx ends.
func (w *Writer) Start(ctx context.Context) error {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	if w.done != nil {
		return errors.New("history writer: already started")
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.run(ctx, w.done)
	return nil
}

// Stop cancels the write in flight, writes what it can within StopTimeout (writes are idempotent, so the
// cancelled batch is simply written again), counts the rest as dropped, and returns once the goroutine has
// exited. It is safe to call twice, and before Start.
func (w *Writer) Stop() {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	if w.done == nil {
		return
	}
	w.cancel()
	<-w.done
	w.cancel, w.done = nil, nil
}

func (w *Writer) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	var backoff time.Duration // non-zero while the store fails
	for {
		wait, kick, urgent := w.cfg.FlushInterval, w.kick, w.urgent
		if backoff > 0 {
			// Don't let a full queue hammer a store that is down.
			wait, kick, urgent = backoff, nil, nil
		}
		timer := w.cfg.Clock.NewTimer(wait)
		yield := true
		select {
		case <-ctx.Done():
			timer.Stop()
			w.final(ctx)
			return
		case <-kick:
			timer.Stop()
		case <-urgent:
			// someone waits for a commit: let the records arriving meanwhile join it, and don't hold off
			timer.Stop()
			w.gather(ctx)
			yield = false
		case <-timer.C():
		}
		if err := w.flush(ctx, yield); err != nil {
			backoff = min(max(2*backoff, w.cfg.RetryMin), w.cfg.RetryMax)
		} else {
			backoff = 0
		}
		w.logDrops(false)
	}
}

// final is the last flush: one pass within StopTimeout; what is left is dropped.
func (w *Writer) final(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.StopTimeout)
	defer cancel()
	w.mu.Lock()
	w.draining = true
	w.mu.Unlock()
	err := w.flush(fctx, false)
	w.mu.Lock()
	w.draining = false // a later Start holds again
	left := w.backlogLocked()
	settle(w.execWaits, fmt.Errorf("%w: the writer stopped", ErrNotCommitted))
	settle(w.pendWaits, fmt.Errorf("%w: the writer stopped", ErrNotCommitted))
	w.execs, w.execWaits, w.execAt, w.traces, w.traceAt, w.inflight = nil, nil, nil, nil, nil, 0
	w.heldExecs, w.heldTraces = 0, 0
	w.pendExecs, w.pendWaits, w.pendTraces = nil, nil, nil
	w.takenExecs, w.takenTraces = queued{}, queuedTraces{}
	if left > 0 {
		w.dropLocked(left)
	}
	w.mu.Unlock()
	if left > 0 {
		w.log.Warn("history records lost at stop", "count", left, "err", err)
	}
	w.logDrops(true)
}

// flush writes everything queued, in batches, holding off before each while Yield asks (if yield). It
// returns the first transient error (or ctx's end), keeping the records it could not write for the next
// attempt.
func (w *Writer) flush(ctx context.Context, yield bool) error {
	since := w.cfg.Clock.Now()
	hold := func() {
		if yield {
			w.holdOff(ctx, since)
		}
	}
	for {
		if len(w.pendExecs) == 0 && len(w.pendTraces) == 0 && !w.take() {
			return nil
		}
		for len(w.pendExecs) > 0 && len(w.pendTraces) > 0 {
			hold()
			if together, err := w.writeTogether(ctx); err != nil {
				return err
			} else if !together {
				break // the store rejected the batch: the loops below retry its records one by one
			}
		}
		for len(w.pendExecs) > 0 {
			hold()
			n := min(len(w.pendExecs), w.cfg.BatchSize)
			waits := w.pendWaits[:n]
			kept, err := writeBatch(w, ctx, w.pendExecs[:n], w.sink.WriteExecutions, func(e ejserver.Execution) string { return e.ID },
				func(i int, err error) { tellWaiter(waits[i], err) })
			if err != nil {
				w.pendExecs = w.pendExecs[n-len(kept):] // kept is the batch's unwritten tail
				w.pendWaits = w.pendWaits[n-len(kept):]
				if w.Health().State == HealthDegraded {
					// the waiters are not held up by a store that is down: their records stay queued
					settle(w.pendWaits, fmt.Errorf("%w: %w", ErrNotCommitted, err))
					clear(w.pendWaits)
				}
				return err
			}
			w.pendExecs = w.pendExecs[n:]
			w.pendWaits = w.pendWaits[n:]
		}
		for len(w.pendTraces) > 0 {
			hold()
			n := min(len(w.pendTraces), w.cfg.BatchSize)
			kept, err := writeBatch(w, ctx, w.pendTraces[:n], w.sink.WriteTraces, func(t ejserver.StatusTrace) string { return t.ID }, nil)
			if err != nil {
				w.pendTraces = w.pendTraces[n-len(kept):] // kept is the batch's unwritten tail
				return err
			}
			w.pendTraces = w.pendTraces[n:]
		}
	}
}

// gather lets the records of a wave join a batch that someone waits for: it waits CommitDelay, and again as
// long as a waited-for record arrived during the last wait, until CommitWindow after it began or ctx's end.
func (w *Writer) gather(ctx context.Context) {
	start := w.cfg.Clock.Now()
	for {
		before := w.waited.Load()
		if !clock.Sleep(w.cfg.Clock, w.cfg.CommitDelay, ctx.Done()) {
			return
		}
		if w.waited.Load() == before || w.cfg.Clock.Since(start)+w.cfg.CommitDelay > w.cfg.CommitWindow {
			return
		}
	}
}

// holdOff waits while Yield asks, until MaxYield after since at the latest, or until ctx ends.
func (w *Writer) holdOff(ctx context.Context, since time.Time) {
	if w.cfg.Yield == nil {
		return
	}
	for {
		d, left := w.cfg.Yield(), w.cfg.MaxYield-w.cfg.Clock.Since(since)
		if d <= 0 || left <= 0 || !clock.Sleep(w.cfg.Clock, min(d, left), ctx.Done()) {
			return
		}
	}
}

// take moves the queue to the goroutine's pending lists, but for the running records StartHold keeps back
// (and those already replaced, which it drops: their replacement is written instead); it reports whether it
// moved anything.
//
// It is called once the batch taken last is written: that batch's arrays, and the queue's once split, serve
// again (queueBufs).
func (w *Writer) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bufs.execs.put(w.takenExecs)
	w.bufs.traces.put(w.takenTraces)
	w.takenExecs, w.takenTraces = queued{}, queuedTraces{}
	hold := w.cfg.StartHold > 0 && !w.draining
	var keep queued
	if hold && len(w.execs) > 0 {
		q := queued{w.execs, w.execWaits, w.execAt}
		last := w.bufs.lastIndex()
		if len(q.recs) > bufKeepMax {
			last = map[string]int{} // a backlog's index is not kept
		}
		now, kept, replaced := holdStartsInto(q, w.cfg.Clock.Now(), w.cfg.StartHold, w.bufs.execs.get(), w.bufs.execs.get(), last)
		w.bufs.execs.put(q) // its records are copied to now and kept
		w.execs, w.execWaits, w.execAt, keep = now.recs, now.waits, now.at, kept
		w.written.Add(int64(replaced)) // written with the record that replaced them
	}
	if keep.recs == nil {
		keep = w.bufs.execs.get()
	}
	var keepTraces queuedTraces
	if hold && len(w.traces) > 0 {
		q := queuedTraces{w.traces, w.traceAt}
		ended := w.bufs.endedSet()
		if len(q.recs) > bufKeepMax {
			ended = map[[2]string]bool{}
		}
		now, kept := holdTracesInto(q, w.cfg.Clock.Now(), w.cfg.StartHold, w.bufs.traces.get(), w.bufs.traces.get(), ended)
		w.bufs.traces.put(q)
		w.traces, w.traceAt, keepTraces = now.recs, now.at, kept
	}
	if keepTraces.recs == nil {
		keepTraces = w.bufs.traces.get()
	}
	n := len(w.execs) + len(w.traces)
	w.heldExecs, w.heldTraces = len(keep.recs), len(keepTraces.recs)
	if n == 0 {
		w.bufs.execs.put(queued{w.execs, w.execWaits, w.execAt})
		w.bufs.traces.put(queuedTraces{w.traces, w.traceAt})
		w.execs, w.execWaits, w.execAt = keep.recs, keep.waits, keep.at
		w.traces, w.traceAt = keepTraces.recs, keepTraces.at
		return false
	}
	// Swap rather than copy: Enqueue appends to the kept (or emptied) arrays meanwhile.
	w.takenExecs = queued{w.execs, w.execWaits, w.execAt}
	w.takenTraces = queuedTraces{w.traces, w.traceAt}
	w.pendExecs, w.execs = w.execs, keep.recs
	w.pendWaits, w.execWaits = w.execWaits, keep.waits
	w.execAt = keep.at
	w.pendTraces, w.traces, w.traceAt = w.traces, keepTraces.recs, keepTraces.at
	w.inflight += n
	return true
}

// writeBatch writes one batch. On a transient error it returns the batch (to be retried) with the error. On
// another error it writes the records one by one and drops those the store still rejects; if the store
// becomes unavailable meanwhile, it returns the records not yet written with that error.
// settled, if set, is told the fate of each record of the batch by its index: nil once written, an error once
// dropped.
func writeBatch[T any](w *Writer, ctx context.Context, batch []T, write func(context.Context, []T) error, id func(T) string,
	settled func(i int, err error)) ([]T, error) {
	if settled == nil {
		settled = func(int, error) {}
	}
	err := writeOnce(w, ctx, batch, write)
	if err == nil {
		w.account(len(batch), 0)
		for i := range batch {
			settled(i, nil)
		}
		return nil, nil
	}
	if transient(ctx, err) {
		return batch, err
	}
	w.log.Warn("history store rejected a batch; retrying its records one by one", "count", len(batch), "err", err)
	for i, rec := range batch {
		err := writeOnce(w, ctx, []T{rec}, write)
		switch {
		case err == nil:
			w.account(1, 0)
			settled(i, nil)
		case transient(ctx, err):
			return batch[i:], err
		default:
			w.log.Error("history store rejected a record; dropped", "execution_id", id(rec), "err", err)
			w.account(0, 1)
			settled(i, fmt.Errorf("%w: the store rejected it: %w", ErrNotCommitted, err))
		}
	}
	return nil, nil
}

// writeOnce runs one write with WriteTimeout and keeps the health up to date.
func writeOnce[T any](w *Writer, ctx context.Context, batch []T, write func(context.Context, []T) error) error {
	wctx, cancel := context.WithTimeout(ctx, w.cfg.WriteTimeout)
	defer cancel()
	err := write(wctx, batch)
	if ctx.Err() == nil {
		// A write cut short by Stop says nothing about the store.
		w.setHealth(err, transient(ctx, err))
	}
	return err
}

func transient(ctx context.Context, err error) bool {
	return err != nil && (ejserver.ErrorCodeOf(err) == ejserver.EUNAVAILABLE || ctx.Err() != nil)
}

// account accounts for written and dropped records that leave the pending lists.
func (w *Writer) account(written, dropped int) {
	w.written.Add(int64(written))
	w.mu.Lock()
	w.inflight -= written + dropped
	if dropped > 0 {
		w.dropLocked(dropped)
	}
	w.mu.Unlock()
}

// setHealth records a write's outcome: only transient failures (the store is down) degrade the Writer.
func (w *Writer) setHealth(err error, transient bool) {
	if err != nil {
		w.failures.Add(1)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil || !transient:
		if w.health.State == HealthDegraded {
			w.log.Info("history store writable again", "after", w.cfg.Clock.Now().Sub(w.health.Since).String(),
				"backlog", w.backlogLocked())
			w.health = Health{State: HealthOK, Since: w.cfg.Clock.Now()}
		}
	case w.health.State != HealthDegraded:
		w.log.Warn("history store unavailable; records queue up and are dropped when the queue is full",
			"err", err, "queue", w.cfg.QueueSize)
		w.health = Health{State: HealthDegraded, LastError: err.Error(), Since: w.cfg.Clock.Now()}
	default:
		w.health.LastError = err.Error()
	}
}

// logDrops logs the records dropped since the last log, at most once per DropLogInterval (or now, at stop).
func (w *Writer) logDrops(force bool) {
	w.mu.Lock()
	n := w.unlogged
	now := w.cfg.Clock.Now()
	if n == 0 || (!force && now.Sub(w.lastDropLog) < w.cfg.DropLogInterval) {
		w.mu.Unlock()
		return
	}
	w.unlogged, w.lastDropLog = 0, now
	total, state := w.dropped.Load(), w.health.State
	w.mu.Unlock()
	w.log.Warn("history records dropped", "count", n, "total", total, "health", string(state), "queue", w.cfg.QueueSize)
}
