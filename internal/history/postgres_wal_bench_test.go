package history

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/testutil/pgtest"
)

var (
	pgWALFill       = flag.String("pgwal.fill", "20000x100", "BenchmarkPostgresWALAtScale: JOBSxEXECUTIONS written before the measured items")
	pgWALCheckpoint = flag.Int("pgwal.checkpoint", 9000, "BenchmarkPostgresWALAtScale: a CHECKPOINT every this many measured items")
	pgWALCompress   = flag.String("pgwal.compression", "off", "BenchmarkPostgresWALAtScale: the server's wal_compression (off, on, pglz, lz4, zstd)")
)

// BenchmarkPostgresWALAtScale measures what an item's execution row costs PostgreSQL's write-ahead log once the
// executions' job-ordered indexes hold a leaf of their own for each job, as they do after a day of 100,000
// jobs: with full-page writes on (PostgreSQL's default), the first change of a page after a checkpoint logs the
// whole page, and at 100,000 jobs firing once a minute a checkpoint's interval (26-57 s with max_wal_size's
// default in ejbench's steady-100000) sees each job's leaf about once, so every job-ordered B-tree costs an
// item a page image. A durable cluster (PostgreSQL's defaults) is filled with -pgwal.fill JOBSxEXECUTIONS rows
// in time order (by SQL, ahead of the rollup's frontier, so its triggers count none), then b.N items of distinct
// jobs continue it, written by the store in batches of 500 (WriteExecutions, the peers' path), with a
// CHECKPOINT every -pgwal.checkpoint items (the default: each job's leaf about once in an interval, as at
// 100,000 jobs; a longer interval, a larger max_wal_size), with -pgwal.compression as the server's
// wal_compression. It reports the WAL's bytes and full-page images per item (pg_stat_wal) and the time per batch.
// The rollup's counting (a minute's cells at a time, the same whatever the indexes) is not in it.
//
//	go test -c -o /tmp/h.test ./internal/history && /tmp/h.test -test.run '^$' \
//	    -test.bench BenchmarkPostgresWALAtScale -test.benchtime 45000x
func BenchmarkPostgresWALAtScale(b *testing.B) {
	var jobs, execs int
	if _, err := fmt.Sscanf(*pgWALFill, "%dx%d", &jobs, &execs); err != nil || jobs <= 0 || execs < 0 {
		b.Fatalf("-pgwal.fill %q: want JOBSxEXECUTIONS, e.g. 20000x100", *pgWALFill)
	}
	if !slices.Contains([]string{"off", "on", "pglz", "lz4", "zstd"}, *pgWALCompress) {
		b.Fatalf("-pgwal.compression %q: want off, on, pglz, lz4 or zstd", *pgWALCompress)
	}
	ctx := context.Background()
	f := pgWALFilledStore(b, jobs, execs)
	s := f.store
	name := func(n int) string { return fmt.Sprintf("job-%06d", n*pgWALSpread%jobs) }
	wal := func() (bytes, fpi int64) {
		if _, err := s.pool.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			b.Fatal(err)
		}
		if err := s.pool.QueryRow(ctx, "SELECT wal_bytes::bigint, wal_fpi FROM pg_stat_wal").Scan(&bytes, &fpi); err != nil {
			b.Fatal(err)
		}
		return bytes, fpi
	}
	checkpoint := func() {
		if _, err := s.pool.Exec(ctx, "CHECKPOINT"); err != nil {
			b.Fatal(err)
		}
	}
	for _, stmt := range []string{"ALTER SYSTEM SET wal_compression = '" + *pgWALCompress + "'", "SELECT pg_reload_conf()"} {
		if _, err := s.pool.Exec(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	checkpoint()
	bytes0, fpi0 := wal()
	const batch = 500
	recs := make([]ejserver.Execution, 0, batch)
	var written time.Duration
	flush := func() {
		t := time.Now()
		if err := s.WriteExecutions(ctx, recs); err != nil {
			b.Fatal(err)
		}
		written += time.Since(t)
		recs = recs[:0]
	}
	b.ResetTimer()
	for i := range b.N {
		n := jobs*execs + f.written + i
		e := newExec(name(n), 0, f.start.Add(time.Duration(n)*time.Millisecond))
		e.ScheduledAt = e.StartedAt.Truncate(time.Second)
		if recs = append(recs, e); len(recs) == batch {
			flush()
		}
		if (i+1)%*pgWALCheckpoint == 0 {
			flush()
			checkpoint()
		}
	}
	if len(recs) > 0 {
		flush()
	}
	b.StopTimer()
	f.written += b.N
	bytes1, fpi1 := wal()
	b.ReportMetric(float64(bytes1-bytes0)/float64(b.N), "WAL-bytes/item")
	b.ReportMetric(float64(fpi1-fpi0)/float64(b.N), "page-images/item")
	b.ReportMetric(float64(written.Milliseconds())/(float64(b.N)/batch), "ms/batch")
}

// pgWALSpread spaces a batch's jobs over the names: row n is of job (n x pgWALSpread) mod jobs.
const pgWALSpread = 7919

// pgWALFilled is BenchmarkPostgresWALAtScale's filled database, kept for the benchmark's next run in the process
// (Go runs a benchmark with b.N = 1 before the b.N it reports, and the fill is most of the time); TestMain
// closes it. written counts the items the runs have added after the fill.
type pgWALFilled struct {
	jobs, execs, written int
	start                time.Time
	cluster              *pgtest.Cluster
	store                *postgresStore
}

var pgWAL *pgWALFilled

// pgWALFilledStore returns a durable cluster's store holding jobs x execs executions in time order, a
// millisecond apart from start (a day ahead of the rollup's frontier, so its triggers count none), filled by SQL
// once for the process.
func pgWALFilledStore(b *testing.B, jobs, execs int) *pgWALFilled {
	b.Helper()
	if pgWAL != nil && pgWAL.jobs == jobs && pgWAL.execs == execs {
		return pgWAL
	}
	closePGWAL()
	if jobs%pgWALSpread == 0 {
		b.Fatalf("-pgwal.fill: the jobs must not be a multiple of %d", pgWALSpread)
	}
	ctx := context.Background()
	c, err := pgtest.StartWith(ctx, pgtest.Options{Durable: true})
	if err != nil {
		b.Fatal(err)
	}
	f := &pgWALFilled{jobs: jobs, execs: execs, start: time.Now().Add(24 * time.Hour).Truncate(time.Minute), cluster: c}
	pgWAL = f
	dsn, err := c.CreateDatabase(ctx, "wal")
	if err != nil {
		b.Fatal(err)
	}
	// the store's clock stays at the migration's: the rollup's frontier (a minute after it) is never due
	st, err := Open(ctx, dsn, WithLogger(discardLogger()), WithClock(clock.NewFake(time.Now())))
	if err != nil {
		b.Fatal(err)
	}
	f.store = st.(*postgresStore)
	filled := time.Now()
	if _, err := f.store.pool.Exec(ctx, `INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item,
		execution_source, is_success, start_time, complete_time, status_code, attempts, duration_ms, response_excerpt,
		instance_id, scheduled_at, sharding_total_count)
	SELECT '0' || lpad(n::text, 15, '0'), j, j || '@-@0@-@READY@-@10.0.0.7@-@4242', 'peer-1', '10.0.0.7', 0,
		'NORMAL_TRIGGER', TRUE, at, at + interval '120 ms', 200, 1, 120, '{"ok":true}', '10.0.0.7@-@4242',
		date_trunc('second', at), 1
	FROM generate_series(0, $1::bigint - 1) n,
		LATERAL (SELECT 'job-' || lpad((n * $2::bigint % $3::bigint)::text, 6, '0') AS j,
			$4::timestamptz + n * interval '1 ms' AS at) r
	ORDER BY n`, int64(jobs)*int64(execs), pgWALSpread, jobs, f.start); err != nil {
		b.Fatal(err)
	}
	if _, err := f.store.pool.Exec(ctx, "VACUUM ANALYZE JOB_EXECUTION_LOG"); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d rows in %s", jobs*execs, time.Since(filled).Round(time.Second))
	return f
}

// closePGWAL closes the benchmark's filled database, if one is open.
func closePGWAL() {
	if pgWAL == nil {
		return
	}
	if pgWAL.store != nil {
		_ = pgWAL.store.Close()
	}
	_ = pgWAL.cluster.Close()
	pgWAL = nil
}
