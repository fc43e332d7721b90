package history

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// Deferred is a Store that opens its database in the background: until the database answers, every call
// fails with EUNAVAILABLE (so the Writer keeps or drops records and the API answers 503) while the peer
// goes on dispatching. It retries with back-off from 1 s to 30 s and logs each failure.
type Deferred struct {
	open func(ctx context.Context) (Store, error)
	log  *slog.Logger
	clk  clock.Clock

	mu      sync.Mutex
	store   Store
	lastErr error
	stop    chan struct{}
	done    chan struct{}
}

// OpenDeferred tries to open dsnOrPath once and, if that fails, keeps trying in the background.
func OpenDeferred(ctx context.Context, dsnOrPath string, log *slog.Logger, clk clock.Clock, opts ...Option) *Deferred {
	if log == nil {
		log = slog.Default()
	}
	if clk == nil {
		clk = clock.Real{}
	}
	opts = append(opts, WithLogger(log))
	d := &Deferred{
		open: func(ctx context.Context) (Store, error) { return Open(ctx, dsnOrPath, opts...) },
		log:  log, clk: clk, stop: make(chan struct{}), done: make(chan struct{}),
	}
	if s, err := d.open(ctx); err == nil {
		d.store = s
		close(d.done)
		return d
	} else {
		d.lastErr = err
		log.Warn("history store unavailable at start-up: jobs fire anyway; retrying in the background", "err", err)
	}
	go d.retry()
	return d
}

func (d *Deferred) retry() {
	defer close(d.done)
	wait := time.Second
	for {
		if !clock.Sleep(d.clk, wait, d.stop) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := d.open(ctx)
		cancel()
		if err == nil {
			d.mu.Lock()
			d.store, d.lastErr = s, nil
			d.mu.Unlock()
			d.log.Info("history store connected")
			return
		}
		d.mu.Lock()
		d.lastErr = err
		d.mu.Unlock()
		d.log.Warn("history store still unavailable; retrying", "err", err, "next_in", wait)
		wait = min(2*wait, 30*time.Second)
	}
}

func (d *Deferred) get() (Store, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.store == nil {
		return nil, ejserver.Unavailable(d.lastErr, "the history store is not reachable yet")
	}
	return d.store, nil
}

// Ready reports whether the database has been opened.
func (d *Deferred) Ready() bool {
	_, err := d.get()
	return err == nil
}

// WriteExecutions implements Store.
func (d *Deferred) WriteExecutions(ctx context.Context, recs []ejserver.Execution) error {
	s, err := d.get()
	if err != nil {
		return err
	}
	return s.WriteExecutions(ctx, recs)
}

// WriteTraces implements Store.
func (d *Deferred) WriteTraces(ctx context.Context, recs []ejserver.StatusTrace) error {
	s, err := d.get()
	if err != nil {
		return err
	}
	return s.WriteTraces(ctx, recs)
}

// ListExecutions implements Store.
func (d *Deferred) ListExecutions(ctx context.Context, f ExecutionFilter) (ExecutionPage, error) {
	s, err := d.get()
	if err != nil {
		return ExecutionPage{}, err
	}
	return s.ListExecutions(ctx, f)
}

// GetExecution implements Store.
func (d *Deferred) GetExecution(ctx context.Context, id string) (ejserver.Execution, error) {
	s, err := d.get()
	if err != nil {
		return ejserver.Execution{}, err
	}
	return s.GetExecution(ctx, id)
}

// ListTraces implements Store.
func (d *Deferred) ListTraces(ctx context.Context, f TraceFilter) ([]ejserver.StatusTrace, error) {
	s, err := d.get()
	if err != nil {
		return nil, err
	}
	return s.ListTraces(ctx, f)
}

// CountsSince implements Store.
func (d *Deferred) CountsSince(ctx context.Context, jobs []string, since time.Time) (map[string]Counts, error) {
	s, err := d.get()
	if err != nil {
		return nil, err
	}
	return s.CountsSince(ctx, jobs, since)
}

// LastExecutions implements Store.
func (d *Deferred) LastExecutions(ctx context.Context, jobs []string) (map[string]ejserver.Execution, error) {
	s, err := d.get()
	if err != nil {
		return nil, err
	}
	return s.LastExecutions(ctx, jobs)
}

// Prune implements Store.
func (d *Deferred) Prune(ctx context.Context, before time.Time, batch int) (int64, error) {
	s, err := d.get()
	if err != nil {
		return 0, err
	}
	return s.Prune(ctx, before, batch)
}

// Ping implements Store.
func (d *Deferred) Ping(ctx context.Context) error {
	s, err := d.get()
	if err != nil {
		return err
	}
	return s.Ping(ctx)
}

// Close stops retrying and closes the database if it was opened. Safe twice.
func (d *Deferred) Close() error {
	d.mu.Lock()
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	d.mu.Unlock()
	<-d.done
	d.mu.Lock()
	s := d.store
	d.store = nil
	d.lastErr = errClosed
	d.mu.Unlock()
	if s != nil {
		return s.Close()
	}
	return nil
}

var errClosed = ejserver.Errorf(ejserver.EUNAVAILABLE, "history store closed")

var _ Store = (*Deferred)(nil)
