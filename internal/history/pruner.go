package history

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// DefaultRetention is how long history is kept unless configured (--history-retention).
const DefaultRetention = 7 * 24 * time.Hour

// PrunerConfig configures a Pruner. Zero fields take the defaults shown.
type PrunerConfig struct {
	// Retention is how long rows are kept: DefaultRetention (7 days).
	Retention time.Duration
	// Interval is the time between two prunes: 10 minutes. The first prune runs at Start.
	Interval time.Duration
	// BatchSize is the most rows of each table deleted in one statement: 1000.
	BatchSize int
	Logger    *slog.Logger
	Clock     clock.Clock
}

func (c PrunerConfig) withDefaults() PrunerConfig {
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.Interval <= 0 {
		c.Interval = 10 * time.Minute
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}

// Pruner deletes history older than the retention, in the background: at Start and then every Interval, in
// batches of BatchSize rows so that no statement holds locks (or SQLite's one writer) for long. With
// PostgreSQL every peer prunes; they skip each other's locked rows.
type Pruner struct {
	store Store
	cfg   PrunerConfig

	pruned atomic.Int64
	runs   atomic.Int64

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewPruner returns a Pruner of store; Start it to have it prune.
func NewPruner(store Store, cfg PrunerConfig) *Pruner {
	return &Pruner{store: store, cfg: cfg.withDefaults()}
}

// Pruned returns the number of rows deleted so far.
func (p *Pruner) Pruned() int64 { return p.pruned.Load() }

// Runs returns the number of prunes finished so far (successful or not).
func (p *Pruner) Runs() int64 { return p.runs.Load() }

// Start starts the Pruner's goroutine. It runs until Stop, or until ctx ends.
func (p *Pruner) Start(ctx context.Context) error {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if p.done != nil {
		return errors.New("history pruner: already started")
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go p.run(ctx, p.done)
	return nil
}

// Stop stops the Pruner and returns once its goroutine has exited; a prune in progress is cancelled between
// statements. It is safe to call twice, and before Start.
func (p *Pruner) Stop() {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if p.done == nil {
		return
	}
	p.cancel()
	<-p.done
	p.cancel, p.done = nil, nil
}

func (p *Pruner) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		p.prune(ctx)
		timer := p.cfg.Clock.NewTimer(p.cfg.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// prune deletes everything older than the retention, batch by batch.
func (p *Pruner) prune(ctx context.Context) {
	defer p.runs.Add(1)
	before := p.cfg.Clock.Now().Add(-p.cfg.Retention)
	var total int64
	for ctx.Err() == nil {
		n, err := p.store.Prune(ctx, before, p.cfg.BatchSize)
		total += n
		p.pruned.Add(n)
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Logger.Warn("history prune failed; retrying at the next interval", "err", err, "deleted", total)
			}
			return
		}
		if n == 0 {
			break
		}
	}
	if total > 0 {
		p.cfg.Logger.Info("history pruned", "deleted", total, "before", before)
	}
}
