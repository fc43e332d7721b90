package history

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// gatedAdvance is an advance that tells when it begins (began) and ends when the test lets it (release), or when
// its context ends; then, if set, it calls next. calls counts them.
type gatedAdvance struct {
	began, release chan struct{}
	calls          atomic.Int32
	next           func(ctx context.Context) error
}

func newGatedAdvance() *gatedAdvance {
	return &gatedAdvance{began: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gatedAdvance) advance(ctx context.Context) error {
	g.calls.Add(1)
	g.began <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if g.next != nil {
		return g.next(ctx)
	}
	return nil
}

// waitBegun fails t unless an advance begins within a minute.
func (g *gatedAdvance) waitBegun(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.began:
	case <-time.After(time.Minute):
		t.Fatalf("%s: no advance began", what)
	}
}

// TestPGAdvancerMakesOneAdvanceForTheKicksDuringOne kicks an advancer while its advance is under way: the kicks
// make one advance more, not one each, and settle returns when that one is done.
func TestPGAdvancerMakesOneAdvanceForTheKicksDuringOne(t *testing.T) {
	t.Parallel()
	g := newGatedAdvance()
	a := startPGAdvancer(g.advance, discardLogger())
	defer a.close()
	a.settle() // nothing asked: returns at once
	a.wake()
	g.waitBegun(t, "the first kick")
	for range 5 {
		a.wake()
	}
	settled := make(chan struct{})
	go func() { a.settle(); close(settled) }()
	g.release <- struct{}{}
	g.waitBegun(t, "the kicks during the first advance")
	select {
	case <-settled:
		t.Fatal("settle returned while an advance asked for was under way")
	default:
	}
	g.release <- struct{}{}
	<-settled
	if n := g.calls.Load(); n != 2 {
		t.Fatalf("%d advances for a kick and 5 kicks during it, want 2", n)
	}
}

// TestPGAdvancerCloseCancelsItsAdvance closes an advancer during its advance: the advance's context ends, close
// returns after it, and the kicks after it ask for nothing.
func TestPGAdvancerCloseCancelsItsAdvance(t *testing.T) {
	t.Parallel()
	g := newGatedAdvance()
	a := startPGAdvancer(g.advance, discardLogger())
	a.wake()
	g.waitBegun(t, "the kick")
	a.close()
	a.wake()
	a.settle()
	a.close() // twice: nothing more
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("%d advances, want the one closed", n)
	}
}

// TestPostgresWriteDoesNotWaitForTheAdvance writes executions of a minute that is over while the store's advance
// cannot go on: the write returns, and the frontier moves over the rows once the advance goes on.
func TestPostgresWriteDoesNotWaitForTheAdvance(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := openStore(t, "postgres").(*postgresStore)
	g := newGatedAdvance()
	g.next = s.advanceFromStored
	s.advancer.close()
	s.advancer = startPGAdvancer(g.advance, discardLogger()) // closed by s.Close
	recs := []ejserver.Execution{newExec("mail", 0, t0), newExec("pay", 0, t0.Add(time.Second))}
	before, err := pgReadFrontier(ctx, s.pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteExecutions(ctx, recs); err != nil {
		t.Fatal(err)
	}
	g.waitBegun(t, "the write of a minute that is over") // the write returned before it could end
	if f, err := pgReadFrontier(ctx, s.pool); err != nil || f != before {
		t.Fatalf("frontier %+v (%v) before the advance went on, want %+v", f, err, before)
	}
	close(g.release)
	if f := frontierOf(t, s); f.Minute <= t0.Unix()/60 {
		t.Fatalf("frontier %+v after the advance, want it past the rows' minute %d", f, t0.Unix()/60)
	}
	checkPGRollupTables(t, s, "advanced after the write")
}
