package history

import (
	"context"
	"log/slog"
	"sync"
)

// pgAdvancer moves a PostgreSQL store's rollup frontier on a goroutine of its own, kicked by the store's writes
// of executions when their commit found rows due (frontierKeeper.due). A write then returns at its commit: it
// used to wait for the chunk it counted (~0.1 s on an idle host, 0.1-0.7 s at 100,000 jobs under load), while
// the peer's writer took no batch and its items' end acknowledgements waited for it (docs/benchmarks.md "the
// frontier moved off the writer's path").
//
// Kicks that come while an advance is under way make one more advance, not one each: an advance reads the
// frontier as it then is (another peer's steps may have moved it) and counts a write's budget of rows
// (advanceRows): at most one advance a write, as when the writes made them. The goroutine is the store's:
// openPostgres starts it, Close ends it.
type pgAdvancer struct {
	advance func(ctx context.Context) error // moves the frontier once (postgresStore.advanceFromStored)
	log     *slog.Logger
	kick    chan struct{} // holds one kick at most: those that come before it is taken are that one
	mu      sync.Mutex
	busy    bool       // a kick is waiting or an advance is under way
	idle    *sync.Cond // broadcast when busy turns false (settle)
	stop    context.CancelFunc
	done    chan struct{}
}

// startPGAdvancer starts an advancer that calls advance once a kick, on its goroutine, until close.
func startPGAdvancer(advance func(ctx context.Context) error, log *slog.Logger) *pgAdvancer {
	ctx, stop := context.WithCancel(context.Background())
	a := &pgAdvancer{advance: advance, log: log, kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	a.idle = sync.NewCond(&a.mu)
	go a.run(ctx)
	return a
}

// run advances once a kick, until ctx ends.
func (a *pgAdvancer) run(ctx context.Context) {
	defer func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.busy = false // nothing will take a kick any more
		close(a.done)  // under mu: a wake after it sees it, and leaves busy alone
		a.idle.Broadcast()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		}
		if err := a.advance(ctx); err != nil && ctx.Err() == nil {
			// the rows are stored: the next kick moves the frontier on
			a.log.Warn("history: the stats' rollup did not advance", "store", "postgres", "err", pgError("advance the rollup", err))
		}
		a.mu.Lock()
		if len(a.kick) == 0 { // kicks are sent under mu: none is on its way
			a.busy = false
			a.idle.Broadcast()
		}
		a.mu.Unlock()
	}
}

// wake asks for an advance: after the one under way, if one is.
func (a *pgAdvancer) wake() {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.done:
		return // closed: no advance will come
	default:
	}
	a.busy = true
	select {
	case a.kick <- struct{}{}:
	default: // one is waiting already
	}
}

// settle returns once no advance is under way or asked for: what the writes before it asked is done.
func (a *pgAdvancer) settle() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.busy {
		a.idle.Wait()
	}
}

// close ends the advancer, an advance under way cancelled (its step's transaction rolls back), and waits for it.
func (a *pgAdvancer) close() {
	a.stop()
	<-a.done
}

// advanceFromStored reads the frontier as it is and moves it over the rows that are due, a write's budget at most.
func (s *postgresStore) advanceFromStored(ctx context.Context) error {
	f, err := pgReadFrontier(ctx, s.pool)
	if err != nil {
		return err
	}
	return s.advanceRollup(ctx, f)
}
