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
	advanceStore  = flag.String("advance.store", "sqlite", "BenchmarkAdvanceAMinute: the store, sqlite or postgres")
)

// BenchmarkAdvanceAMinute measures what the rollup's frontier costs to count one minute of -advance.rows rows
// of -advance.jobs jobs (a peer's minute of steady-N holds a row a job at N=60,000 and a period of 60 s; of
// steady-10k, 20,000 rows of 3,333 jobs; with PostgreSQL the peers share one minute: 100,000 rows at
// steady-100000), in writes of rollupAdvanceRows: the minute's rows are written first (not measured), then the
// frontier moved over them. It reports the CPU per row counted (this process's: PostgreSQL's server is
// another), and how long a write's advance took on average and at most: with PostgreSQL the rollup's lock is
// held that long, and every peer's write of executions waits for it.
//
//	go test ./internal/history -run '^$' -bench BenchmarkAdvanceAMinute -benchtime 2x -args -advance.rows 20000 -advance.jobs 3333
//	go test ./internal/history -run '^$' -bench BenchmarkAdvanceAMinute -benchtime 2x -args -advance.rows 100000 -advance.store postgres
func BenchmarkAdvanceAMinute(b *testing.B) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	s := openStore(b, *advanceStore, WithClock(clk))
	advance := advancer(s)
	rows, jobs := *advanceMinute, *advanceJobs
	if jobs <= 0 {
		jobs = rows
	}
	var (
		cpu, took, longest time.Duration
		writes             int
	)
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
		for {
			start := time.Now()
			moved, err := advance(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if !moved {
				break
			}
			d := time.Since(start)
			writes++
			took += d
			longest = max(longest, d)
		}
		cpu += processCPU() - before
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*rows), "cpu-µs/row")
	b.ReportMetric(float64(took.Microseconds())/1000/float64(max(writes, 1)), "ms/write")
	b.ReportMetric(float64(longest.Microseconds())/1000, "max-ms/write")
}

// advancer moves s's frontier as one write's advance does (s.advanceRows rows at most), and says whether it
// moved.
func advancer(s Store) func(ctx context.Context) (moved bool, err error) {
	switch st := s.(type) {
	case *sqliteStore:
		return func(ctx context.Context) (bool, error) { return advanceOnce(ctx, st) }
	case *postgresStore:
		return func(ctx context.Context) (bool, error) {
			before, err := pgReadFrontier(ctx, st.pool)
			if err != nil {
				return false, err
			}
			if err := st.advanceRollup(ctx, before); err != nil {
				return false, err
			}
			after, err := pgReadFrontier(ctx, st.pool)
			return after != before, err
		}
	}
	panic(fmt.Sprintf("no frontier in %T", s))
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
