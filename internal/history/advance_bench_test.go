package history

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

var advanceMinute = flag.Int("advance.rows", 20000, "BenchmarkAdvanceAMinute: rows in the minute (one a job)")

// BenchmarkAdvanceAMinute measures what the rollup's frontier costs to count one minute of -advance.rows rows
// (one a job, as a peer's minute of steady-N holds), in writes of rollupAdvanceRows: the minute's rows are
// written first (not measured), then the frontier moved over them. It reports the CPU per row counted.
//
//	go test -run '^$' -bench BenchmarkAdvanceAMinute -benchtime 5x ./internal/history -advance.rows 33000
func BenchmarkAdvanceAMinute(b *testing.B) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	s := openStore(b, "sqlite", WithClock(clk)).(*sqliteStore)
	rows := *advanceMinute
	var cpu time.Duration
	for i := range b.N {
		minute := t0.Add(time.Duration(2*i) * time.Minute)
		clk.Advance(minute.Sub(clk.Now()))
		batch := make([]ejserver.Execution, 0, 500)
		for j := range rows {
			e := newExec(fmt.Sprintf("job-%06d", j*7919%rows), 0, minute.Add(time.Duration(j)*time.Minute/time.Duration(rows)))
			e.ScheduledAt = e.StartedAt.Add(-time.Millisecond)
			if batch = append(batch, e); len(batch) == cap(batch) || j == rows-1 {
				mustWrite(b, s, batch...) // the minute is not over: nothing counted
				batch = batch[:0]
			}
		}
		clk.Advance(time.Minute + rollupSettle + time.Second)
		before := processCPU()
		if err := countDue(ctx, s); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - before
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*rows), "cpu-µs/row")
}

// countDue counts every row of s that is due into the rollup, in writes of s.advanceRows as the writer would.
func countDue(ctx context.Context, s *sqliteStore) error {
	for moved := true; moved; {
		if err := s.inTx(ctx, "advance", func(tx *sql.Tx) error {
			before, err := s.frontier(ctx, tx)
			if err != nil {
				return err
			}
			if err := s.advanceRollup(ctx, tx, before); err != nil {
				return err
			}
			after, err := s.frontier(ctx, tx)
			moved = after != before
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
