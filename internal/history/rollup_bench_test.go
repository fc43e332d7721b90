package history

import (
	"context"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// BenchmarkPruneHotCell measures what removing rows costs the rollup when one cell (one job, one peer, one
// minute) holds b.N of them: the rows are written first (not timed), then pruned in batches of 400, oldest
// first; ns/op and records/s are per pruned row. A pruned batch that held its cell's largest duration or
// lateness makes the store re-read the cell's largest (SQLite: once per batch and cell, off the rows left;
// PostgreSQL: its trigger, once per statement and cell). "equal": every row has the same duration and
// lateness (BenchmarkWriter's rows), so every row holds the largest; "decreasing": each row is shorter than
// the one before, so the oldest always does:
//
//	go test ./internal/history -run '^$' -bench 'BenchmarkPruneHotCell' -benchtime 20000x
func BenchmarkPruneHotCell(b *testing.B) {
	for _, kind := range storeKinds {
		for _, order := range []string{"equal", "decreasing"} {
			b.Run(kind+"/"+order, func(b *testing.B) {
				s := openStore(b, kind)
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
