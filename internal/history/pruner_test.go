package history

import (
	"context"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// TestPruner keeps 7 days: at Start it deletes (in batches) what is older, and one interval later, with the
// clock moved on, what has aged past the retention since.
func TestPruner(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		now := t0.Add(30 * 24 * time.Hour)
		clk := clock.NewFake(now)
		var old, aging, young []ejserver.Execution
		for i := range 7 {
			old = append(old, newExec("pruned", i, now.Add(-8*24*time.Hour-time.Duration(i)*time.Minute)))
			aging = append(aging, newExec("pruned", i, now.Add(-6*24*time.Hour)))
			young = append(young, newExec("pruned", i, now.Add(-time.Hour)))
		}
		mustWrite(t, s, old...)
		mustWrite(t, s, aging...)
		mustWrite(t, s, young...)
		if err := s.WriteTraces(testCtx(t), []ejserver.StatusTrace{
			{ID: "old", JobName: "pruned", TaskID: "x", State: ejserver.TaskFinished, CreationTime: now.Add(-8 * 24 * time.Hour)},
			{ID: "young", JobName: "pruned", TaskID: "x", State: ejserver.TaskFinished, CreationTime: now},
		}); err != nil {
			t.Fatal(err)
		}
		left := func() int {
			p, err := s.ListExecutions(testCtx(t), ExecutionFilter{JobName: "pruned", Limit: MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			return len(p.Items)
		}

		p := NewPruner(s, PrunerConfig{Interval: time.Hour, BatchSize: 3, Clock: clk, Logger: discardLogger()})
		p.Stop() // before Start: nothing to do
		looped := clk.TimerCreated()
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		<-looped // the first prune is done and the Pruner waits for the next
		if got := p.Pruned(); got != 8 {
			t.Errorf("first prune deleted %d rows, want 8 (7 executions and a trace)", got)
		}
		if n := left(); n != 14 {
			t.Errorf("%d executions left, want 14", n)
		}

		looped = clk.TimerCreated()
		clk.Advance(2 * 24 * time.Hour)
		<-looped
		if got, runs := p.Pruned(), p.Runs(); got != 15 || runs != 2 {
			t.Errorf("after two prunes: %d rows deleted in %d runs, want 15 in 2", got, runs)
		}
		if n := left(); n != 7 {
			t.Errorf("%d executions left, want the 7 young ones", n)
		}
		tr, err := s.ListTraces(testCtx(t), TraceFilter{JobName: "pruned"})
		if err != nil || len(tr) != 1 {
			t.Errorf("traces left %+v, %v", tr, err)
		}
		p.Stop()
		p.Stop()
	})
}
