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

var (
	advanceMinute = flag.Int("advance.rows", 20000, "BenchmarkAdvanceAMinute: rows in the minute")
	advanceJobs   = flag.Int("advance.jobs", 0, "BenchmarkAdvanceAMinute: jobs the minute's rows are of (0: a row a job)")
)

// BenchmarkAdvanceAMinute measures what the rollup's frontier costs to count one minute of -advance.rows rows
// of -advance.jobs jobs (a peer's minute of steady-N holds a row a job at N=60,000 and a period of 60 s; of
// steady-10k, 20,000 rows of 3,333 jobs), in writes of rollupAdvanceRows: the minute's rows are
// written first (not measured), then the frontier moved over them. It reports the CPU per row counted.
//
//	go test ./internal/history -run '^$' -bench BenchmarkAdvanceAMinute -benchtime 2x -args -advance.rows 20000 -advance.jobs 3333
func BenchmarkAdvanceAMinute(b *testing.B) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	s := openStore(b, "sqlite", WithClock(clk)).(*sqliteStore)
	rows, jobs := *advanceMinute, *advanceJobs
	if jobs <= 0 {
		jobs = rows
	}
	var cpu time.Duration
	for i := range b.N {
		minute := t0.Add(time.Duration(2*i) * time.Minute)
		clk.Advance(minute.Sub(clk.Now()))
		batch := make([]ejserver.Execution, 0, 500)
		for j := range rows {
			e := newExec(fmt.Sprintf("job-%06d", j*7919%jobs), 0, minute.Add(time.Duration(j)*time.Minute/time.Duration(rows)))
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
	for {
		moved, err := advanceOnce(ctx, s)
		if err != nil || !moved {
			return err
		}
	}
}

// advanceOnce moves s's frontier as one write's advance does (s.advanceRows rows at most), and says whether it
// moved.
func advanceOnce(ctx context.Context, s *sqliteStore) (moved bool, err error) {
	err = s.inTx(ctx, "advance", func(tx *sql.Tx) error {
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
	})
	return moved, err
}
