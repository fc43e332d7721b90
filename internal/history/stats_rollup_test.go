package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history/rollup"
)

// rawStats answers a stats query from the rows alone (the reference the rollup must agree with).
func rawStats(t *testing.T, s Store) (runQuery, dialect) {
	t.Helper()
	switch st := s.(type) {
	case *sqliteStore:
		return st.run, sqliteDialect
	case *postgresStore:
		return st.run, postgresDialect
	}
	t.Fatalf("no raw stats for %T", s)
	return nil, dialect{}
}

// shorterEnds returns, for every every-th record of later that has ended, a later end record of its
// execution, a second later and shrink times shorter: the cell's largest value it replaces must be read again.
func shorterEnds(later []ejserver.Execution, every int, shrink int64) []ejserver.Execution {
	var redo []ejserver.Execution
	for j, e := range later {
		if j%every == 0 && !e.CompletedAt.IsZero() {
			e.CompletedAt, e.DurationMs = e.CompletedAt.Add(time.Second), e.DurationMs/shrink
			redo = append(redo, e)
		}
	}
	return redo
}

// randomHistory is a seeded history over three hours after t0 on three peers: fires of 1-5 items, some
// items late by up to 90 s (so fires straddle minutes and hours) or early (negative lateness), durations
// from 0 to 2,000 s, every outcome and source, running items, async items with heartbeats, and end records
// that replace start records, some of them moving the item to another minute and peer (a failover's re-POST
// of the same execution).
func randomHistory(r *rand.Rand, n int) (starts, later []ejserver.Execution) {
	jobs := []string{"pay", "payroll", "mail"}
	peers := []string{"10.0.0.1@-@1", "10.0.0.2@-@1", "10.0.0.3@-@1"}
	sources := []ejserver.Source{ejserver.SourceNormal, ejserver.SourceNormal, ejserver.SourceMisfire, ejserver.SourceFailover, ejserver.SourceManual}
	for len(starts) < n {
		job := jobs[r.IntN(len(jobs))]
		sched := t0.Add(time.Duration(r.Int64N(int64(3*time.Hour))) / time.Second * time.Second)
		for item := range 1 + r.IntN(5) {
			late := time.Duration(r.Int64N(int64(2*time.Second))) - 200*time.Millisecond
			if r.IntN(10) == 0 {
				late = time.Duration(r.Int64N(int64(90 * time.Second)))
			}
			peer := peers[r.IntN(len(peers))]
			e := newExec(job, item, sched.Add(late))
			e.ScheduledAt, e.InstanceID, e.IP, e.Hostname = sched, peer, peer[:8], "host-"+peer[:8]
			e.Source = sources[r.IntN(len(sources))]
			if r.IntN(20) == 0 {
				e.ScheduledAt = time.Time{}
			}
			starts = append(starts, running(e))
			end := e
			switch r.IntN(10) {
			case 0: // still running
				continue
			case 1: // async: a heartbeat, then the end
				later = append(later, accepted(e, e.StartedAt.Add(time.Second), 50))
			case 2: // re-POSTed on another peer a little later: the same execution moves
				end.StartedAt = end.StartedAt.Add(time.Duration(r.Int64N(int64(2 * time.Minute))))
				end.InstanceID = peers[(r.IntN(2)+1+slicesIndex(peers, peer))%len(peers)]
			}
			dur := time.Duration(r.Int64N(int64(2 * time.Second)))
			if r.IntN(8) == 0 {
				dur = time.Duration(r.Int64N(int64(2000 * time.Second)))
			}
			end.CompletedAt, end.DurationMs, end.Success = end.StartedAt.Add(dur), dur.Milliseconds(), r.IntN(6) != 0
			later = append(later, end)
		}
	}
	return starts, later
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// randomQuery is a window inside the history (whole minutes half the time) and a bucket that fits it.
func randomQuery(r *rand.Rand) StatsQuery {
	from := t0.Add(-10*time.Minute + time.Duration(r.Int64N(int64(200*time.Minute))))
	if r.IntN(2) == 0 {
		from = from.Truncate(time.Minute)
	} else {
		from = from.Add(time.Duration(r.Int64N(int64(time.Second))))
	}
	w := time.Duration(1+r.Int64N(int64(4*time.Hour)/int64(time.Second))) * time.Second
	if r.IntN(3) == 0 {
		w = w.Truncate(time.Minute) + time.Minute
	}
	bucket := []time.Duration{time.Second, 7 * time.Second, time.Minute, 5 * time.Minute, time.Hour}[r.IntN(5)]
	for (w+bucket-1)/bucket > MaxBuckets {
		bucket *= 60
	}
	q := StatsQuery{From: from, To: from.Add(w), Bucket: bucket}
	switch r.IntN(4) {
	case 0:
		q.Jobs = &JobSet{Names: []string{"mail"}}
	case 1:
		q.Jobs = &JobSet{Prefixes: []string{"pay"}}
	}
	return q
}

// noAdvance keeps a store's writes from moving its rollup's frontier.
func noAdvance(s Store) {
	settled(s)
	keeperOf(s).advanceRows = 0
}

// settled returns once the advances s's writes asked for are done: PostgreSQL's advancer moves the frontier
// after a write returns; SQLite's writes move it in their transaction.
func settled(s Store) {
	if st, ok := s.(*postgresStore); ok {
		st.advancer.settle()
	}
}

// keeperOf is what moves s's rollup's frontier.
func keeperOf(s Store) *frontierKeeper {
	switch st := s.(type) {
	case *sqliteStore:
		return &st.frontierKeeper
	case *postgresStore:
		return &st.frontierKeeper
	}
	panic(fmt.Sprintf("no frontier in %T", s))
}

// advanceRollupBy moves s's frontier over n rows at most (whole jobs of a minute, all of a job's rows of the
// minute when they are more), in one write, as a write's advance does.
func advanceRollupBy(t *testing.T, s Store, n int) {
	t.Helper()
	settled(s)
	k := keeperOf(s)
	defer func(before int) { k.advanceRows = before }(k.advanceRows)
	k.advanceRows = n
	if _, err := advancer(s)(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// frontierOf reads how far s's rollup has counted.
func frontierOf(t *testing.T, s Store) rollup.Frontier {
	t.Helper()
	settled(s)
	var (
		f   rollup.Frontier
		err error
	)
	switch st := s.(type) {
	case *sqliteStore:
		f, err = readFrontier(testCtx(t), st.r)
	case *postgresStore:
		f, err = pgReadFrontier(testCtx(t), st.pool)
	default:
		t.Fatalf("no frontier in %T", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pgFrontierAfterRows moves a PostgreSQL store's frontier back to just after its newest row, as SQLite's
// migration sets it (PostgreSQL's sets it after the clock's next minute too): a test's history, all in the
// past, is then counted by the advance. Every row there must be counted already.
func pgFrontierAfterRows(t *testing.T, s *postgresStore) {
	t.Helper()
	if _, err := s.pool.Exec(testCtx(t), `UPDATE EXECUTION_ROLLUP_FRONTIER SET job = '',
		minute = (SELECT COALESCE(MAX(CAST(EXTRACT(EPOCH FROM start_time) * 1000000 AS BIGINT)) / 60000000 + 1, 0)
			FROM JOB_EXECUTION_LOG)`); err != nil {
		t.Fatal(err)
	}
}

// TestRollupAnswersAsTheRows writes a random history in several ways (rows there before the migration, batches
// of start records, end records that replace them, heartbeats, two peers writing at once, pruning) and checks
// that every stats answer read through the rollup equals the one read off the rows, on both stores.
func TestRollupAnswersAsTheRows(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(25, 9))
			starts, later := randomHistory(r, 1000)
			dsn := newDSN(t, kind)
			// rows written before the rollup existed: the migration fills it from them (the earliest 150, so
			// that SQLite's frontier, which the migrations start after the newest row, starts early)
			slices.SortStableFunc(starts, func(a, b ejserver.Execution) int { return a.StartedAt.Compare(b.StartedAt) })
			migrateTo(t, kind, dsn, 6)
			before := starts[:150]
			insertV1(t, kind, dsn, before...)
			s := openDSN(t, dsn)
			if st, ok := s.(*postgresStore); ok {
				pgFrontierAfterRows(t, st)
			}
			// the rollup counts nothing as the rows are written (it counts them below, a part at a time)
			noAdvance(s)
			mustWrite(t, s, starts[150:500]...)
			// two peers' writers at once on the same database
			other := openDSN(t, dsn)
			noAdvance(other)
			var wg sync.WaitGroup
			for i, st := range []Store{s, other} {
				wg.Go(func() {
					rest := starts[500:]
					for j := i * 100; j < len(rest); j += 200 {
						if err := st.WriteExecutions(context.Background(), rest[j:min(j+100, len(rest))]); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			for j := 0; j < len(later); j += 150 {
				mustWrite(t, s, later[j:min(j+150, len(later))]...)
			}
			// a later end record of some items, shorter: a removed largest value must be re-read
			mustWrite(t, s, shorterEnds(later, 5, 3)...)
			run, d := rawStats(t, s)
			ctx := testCtx(t)
			check := func(stage string, queries int) {
				if raceEnabled { // the reads are one goroutine's: the pass without -race asks them all
					queries = min(queries, 3)
				}
				for i := range queries {
					q := randomQuery(r)
					if i < 3 { // the minutes about the prune's cut-off, partly pruned
						q = StatsQuery{From: t0.Add(89 * time.Minute), To: t0.Add(92 * time.Minute), Bucket: time.Minute}
					}
					jq := q
					jq.Job, jq.Jobs = []string{"pay", "payroll", "mail"}[i%3], nil
					gotJ, err := s.JobStats(ctx, jq)
					if err != nil {
						t.Fatal(err)
					}
					wantJ, err := jobStats(ctx, run, d, jq, false, nil)
					if err != nil {
						t.Fatal(err)
					}
					if d := diff(wantJ, gotJ); d != "" {
						t.Fatalf("%s: job stats %s %s..%s by %s, rollup against rows:\n%s", stage, jq.Job, jq.From, jq.To, jq.Bucket, d)
					}
					gotC, err := s.ClusterStats(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					wantC, err := clusterStats(ctx, run, d, q, false, nil)
					if err != nil {
						t.Fatal(err)
					}
					if d := diff(wantC, gotC); d != "" {
						t.Fatalf("%s: cluster stats %s..%s by %s (%+v), rollup against rows:\n%s", stage, q.From, q.To, q.Bucket, q.Jobs, d)
					}
					if gotC.Total.Items == 0 && i == 0 {
						t.Logf("%s: an empty window", stage)
					}
				}
			}
			check("written", 12)
			// the frontier at places through the history: where the migration set it (the rows before it
			// counted, the later ones not), moved by a few rows (inside a minute), by more, to the end (five
			// windows each: the statements are slow under -race)
			for _, n := range []int{17, 230, 1 << 20} {
				advanceRollupBy(t, s, n)
				f := frontierOf(t, s)
				check(fmt.Sprintf("counted %d rows more (up to minute %d, job %q)", n, f.Minute, f.Job), 5)
			}
			switch st := s.(type) {
			case *sqliteStore:
				checkRollupTables(t, st, "counted")
			case *postgresStore:
				checkPGRollupTables(t, st, "counted")
			}
			// pruning the first hour and a half, in batches
			for {
				n, err := s.Prune(ctx, t0.Add(90*time.Minute+17*time.Second), 400)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			check("pruned", 12)
			// the cells pruning emptied went with the rows
			cut := t0.Add(90*time.Minute + 17*time.Second)
			for _, c := range []struct {
				table, col, count string
				unit              time.Duration
			}{
				{"EXECUTION_STATS_MINUTE", "minute", "items", time.Minute},
				{"EXECUTION_FIRES_MINUTE", "minute", "fires", time.Minute},
				{"EXECUTION_STATS_HIST", "hour", "n", time.Hour},
				{"EXECUTION_PEER_STATS_MINUTE", "minute", "items", time.Minute},
				{"EXECUTION_CLUSTER_FIRES_MINUTE", "minute", "fires", time.Minute},
				{"EXECUTION_PEER_STATS_HIST", "hour", "n", time.Hour},
			} {
				q := &query{d: d}
				q.write("SELECT COUNT(*) FROM ", c.table, " WHERE ", c.count, " = 0 AND ", c.col, " < ", q.arg(rollupPeriod(cut, c.unit)))
				var n int64
				if err := run(ctx, q, func(r rowScanner) error { return r.Scan(&n) }); err != nil || n != 0 {
					t.Errorf("%s: %d, %v", q, n, err)
				}
			}
			whole, err := s.ClusterStats(ctx, StatsQuery{From: t0.Add(-time.Hour), To: t0.Add(5 * time.Hour), Bucket: time.Hour})
			if err != nil || whole.Total.Items == 0 {
				t.Fatalf("%v %s", err, fmt.Sprint(whole.Total.Items))
			}
		})
	}
}
