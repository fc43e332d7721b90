package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// Store is where a Recorder writes (the history store satisfies it).
type Store interface {
	WriteAudit(ctx context.Context, entries []Entry) error
}

// RecorderConfig configures a Recorder. Zero fields take the defaults shown.
type RecorderConfig struct {
	Store Store
	// Instance is this peer's instance id, written into every entry it records.
	Instance string
	// MaxSources bounds the sources folded separately per minute: 1000.
	MaxSources int
	// FlushInterval is how often folded denials are written: 15 seconds.
	FlushInterval time.Duration
	// WriteTimeout bounds one write to the store: 5 seconds.
	WriteTimeout time.Duration
	// MaxPending bounds the entries kept to be written again after a write failed (a history database
	// whose one write connection a saturated history writer holds past WriteTimeout): 10,000. They are
	// written again at every FlushInterval and when the Recorder stops; past the bound they are dropped
	// (logged).
	MaxPending int
	Logger     *slog.Logger
	Clock      clock.Clock
}

// Recorder writes audit entries to the store: changes at once (the caller waits, so an answered change is
// recorded), denials folded per source per minute. An entry whose write failed is kept and written again
// (MaxPending).
type Recorder struct {
	cfg RecorderConfig

	mu     sync.Mutex
	folder *Folder
	// pending are the entries of failed writes, to be written again (the store ignores an id written twice,
	// as a write that timed out may have landed)
	pending []Entry
	batch   batcher

	runMu sync.Mutex
	stop  chan struct{}
	done  chan struct{}
}

// NewRecorder returns a Recorder; Start it to have folded denials written.
func NewRecorder(cfg RecorderConfig) *Recorder {
	if cfg.MaxSources <= 0 {
		cfg.MaxSources = 1000
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	return &Recorder{cfg: cfg, folder: NewFolder(cfg.MaxSources)}
}

// NewID returns a new entry id: the time in microseconds (so ids sort by time) and 8 random bytes.
func NewID(t time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x-%s", t.UnixMicro(), hex.EncodeToString(b[:]))
}

// fill completes an entry: id, time, instance and count.
func (r *Recorder) fill(e *Entry) {
	if e.Time.IsZero() {
		e.Time = r.cfg.Clock.Now()
	}
	e.Time = e.Time.UTC()
	if e.ID == "" {
		e.ID = NewID(e.Time)
	}
	if e.Instance == "" {
		e.Instance = r.cfg.Instance
	}
	if e.Count == 0 {
		e.Count = 1
	}
	if e.Outcome == "" {
		e.Outcome = OutcomeOK
	}
}

// Record writes one entry and returns the error of the write (also logged).
func (r *Recorder) Record(ctx context.Context, e Entry) error {
	if r == nil {
		return nil
	}
	r.fill(&e)
	return r.write(ctx, []Entry{e})
}

// write writes es in the next batch (batch.go) and returns that batch's error.
func (r *Recorder) write(ctx context.Context, es []Entry) error {
	if len(es) == 0 {
		return nil
	}
	return r.batch.write(ctx, es, r.writeNow)
}

// writeNow writes one batch to the store.
func (r *Recorder) writeNow(ctx context.Context, es []Entry) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.WriteTimeout)
	defer cancel()
	err := r.cfg.Store.WriteAudit(ctx, es)
	if err != nil {
		kept := r.keep(es)
		r.cfg.Logger.Error("audit entry not recorded yet: kept to be written again", "action", string(es[0].Action),
			"job", es[0].Job, "entries", len(es), "kept", kept, "err", err)
	}
	return err
}

// keep adds es to the entries written again, up to MaxPending, and returns how many it kept; the others are
// dropped, logged.
func (r *Recorder) keep(es []Entry) int {
	r.mu.Lock()
	n := max(min(len(es), r.cfg.MaxPending-len(r.pending)), 0)
	r.pending = append(r.pending, es[:n]...)
	r.mu.Unlock()
	if n < len(es) {
		r.cfg.Logger.Error("audit entries dropped: too many waiting to be written again", "dropped", len(es)-n,
			"max_pending", r.cfg.MaxPending)
	}
	return n
}

// Pending is the number of entries waiting to be written again.
func (r *Recorder) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// Deny takes a refused request: the first of its source in a minute is written at once, the others are
// folded into one entry written when the minute is over.
func (r *Recorder) Deny(ctx context.Context, d Denial) {
	if r == nil {
		return
	}
	if d.Time.IsZero() {
		d.Time = r.cfg.Clock.Now()
	}
	r.mu.Lock()
	e, now := r.folder.Observe(d)
	r.mu.Unlock()
	if now {
		r.fill(&e)
		_ = r.write(ctx, []Entry{e})
	}
}

// Flush writes the folded denials of the minutes that are over, and the entries of failed writes again (a
// write that fails keeps them once more).
func (r *Recorder) Flush(ctx context.Context) {
	r.mu.Lock()
	es := r.folder.Flush(r.cfg.Clock.Now())
	again := r.pending
	r.pending = nil
	r.mu.Unlock()
	for i := range es {
		r.fill(&es[i])
	}
	if r.write(ctx, append(again, es...)) == nil && len(again) > 0 {
		r.cfg.Logger.Info("audit entries recorded on a second try", "entries", len(again))
	}
}

// Start starts the goroutine that flushes folded denials every FlushInterval; Stop ends it.
func (r *Recorder) Start(ctx context.Context) error {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	if r.done != nil {
		return nil
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.run(ctx, r.stop, r.done)
	return nil
}

func (r *Recorder) run(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		if !clock.Sleep(r.cfg.Clock, r.cfg.FlushInterval, stop) {
			r.Flush(ctx) // what is over by now
			return
		}
		select {
		case <-ctx.Done():
			return
		default:
		}
		r.Flush(ctx)
	}
}

// Stop stops the flushing goroutine and returns once it has exited; safe twice and before Start.
func (r *Recorder) Stop() {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	if r.done == nil {
		return
	}
	close(r.stop)
	<-r.done
	r.stop, r.done = nil, nil
}
