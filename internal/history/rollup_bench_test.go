package history

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// BenchmarkPruneHotCell measures what removing rows costs the rollup when one cell (one job, one peer, one
// minute) holds b.N of them: the rows are written first (not timed), then pruned in batches of 400, oldest
// first; ns/op and records/s are per pruned row. Each pruned row that held its cell's largest duration or
// lateness makes the trigger re-read the cell's largest. "equal": every row has the same duration and
// lateness (BenchmarkWriter's rows), so every row holds the largest; "decreasing": each row is shorter than
// the one before, so the oldest always does. "/0010" is the schema; "/0009" puts back migration 0009's
// trigger, which re-read by scanning the cell (quadratic: keep it to a few thousand rows):
//
//	go test ./internal/history -run '^$' -bench 'BenchmarkPruneHotCell/.*/.*/0010' -benchtime 20000x
//	go test ./internal/history -run '^$' -bench 'BenchmarkPruneHotCell/sqlite' -benchtime 5000x
func BenchmarkPruneHotCell(b *testing.B) {
	for _, kind := range storeKinds {
		for _, order := range []string{"equal", "decreasing"} {
			for _, old := range []bool{false, true} {
				if old && kind != "sqlite" {
					continue // PostgreSQL re-reads once per statement and cell
				}
				name := kind + "/" + order + "/0010"
				if old {
					name = kind + "/" + order + "/0009"
				}
				b.Run(name, func(b *testing.B) {
					s := openStore(b, kind)
					if old {
						restore0009Trigger(b, s)
					}
					ctx := context.Background()
					batch := make([]ejserver.Execution, 0, 1000)
					for i := range b.N {
						e := newExec("hot", i%4, t0.Add(time.Duration(i)*time.Microsecond))
						if order == "decreasing" {
							e.DurationMs = int64(b.N - i)
							e.CompletedAt = e.StartedAt.Add(time.Duration(e.DurationMs) * time.Millisecond)
						}
						if batch = append(batch, e); len(batch) == cap(batch) || i == b.N-1 {
							if err := s.WriteExecutions(ctx, batch); err != nil {
								b.Fatal(err)
							}
							batch = batch[:0]
						}
					}
					b.ResetTimer()
					var pruned int64
					for {
						n, err := s.Prune(ctx, t0.Add(time.Minute), 400)
						if err != nil {
							b.Fatal(err)
						}
						if n == 0 {
							break
						}
						pruned += n
					}
					b.StopTimer()
					if pruned != int64(b.N) {
						b.Fatalf("pruned %d of %d", pruned, b.N)
					}
					b.ReportMetric(float64(pruned)/b.Elapsed().Seconds(), "records/s")
				})
			}
		}
	}
}

// restore0009Trigger puts migration 0009's rollup trigger back on an SQLite store (its re-read of a cell's
// largest value scans the cell), for an A/B against migration 0010's.
func restore0009Trigger(b testing.TB, s Store) {
	b.Helper()
	src, err := fs.ReadFile(migrationFS, "migrations/sqlite/0009_stats_rollup.sql")
	if err != nil {
		b.Fatal(err)
	}
	text := string(src)
	start := strings.Index(text, "CREATE TRIGGER execution_stats_change")
	end := start + strings.Index(text[start:], "\nEND;") + len("\nEND;")
	db := s.(*sqliteStore).w
	for _, stmt := range []string{"DROP TRIGGER execution_stats_change", text[start:end]} {
		if _, err := db.ExecContext(context.Background(), stmt); err != nil {
			b.Fatal(err)
		}
	}
}
