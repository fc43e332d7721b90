package history

import (
	"context"
	"database/sql"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// BenchmarkSmallBatchesAtScale is BenchmarkSmallBatchesOneTransaction on a store that already holds a history
// (-scale.fill JOBSxEXECUTIONS, each execution with its three status traces and the rollup, written at 1,000
// items a second in batches of 500), then measuring batches of -scale.batch items of distinct jobs that
// continue it. On a fresh store the job-ordered B-trees are a few pages, so an item's leaf is mostly one the
// batch's other items dirty too; at scale each item dirties its own leaf in each of them, as on a peer that has
// run for a while. It reports the pages the commits write (WAL frames) per item and their bytes, the process's
// CPU (user+sys) per item spent writing and checkpointing, and prints the frames per B-tree (dbstat). A
// batch's jobs are -scale.spread apart in name order (appendItem). It checkpoints every -scale.checkpoint
// batches itself; checkpointed-pages/item are the pages those checkpoints copied back (a page written by
// several commits between two checkpoints is copied once). -scale.drop drops indexes before measuring: what
// one costs an item is the difference (docs/benchmarks.md, "Issue 21's targets on `d266a66`").
//
//	go test -c -o /tmp/h.test ./internal/history && /tmp/h.test -test.run '^$' \
//	    -test.bench BenchmarkSmallBatchesAtScale -test.benchtime 20000x -scale.fill 10000x60 \
//	    -scale.cache /tmp/history-fill
//
// -scale.cache keeps the filled file (named by the fill and the schema's version) and copies it
// for each run: a fill of 10000x60 takes about a minute.
func BenchmarkSmallBatchesAtScale(b *testing.B) {
	var jobs, execs int
	if _, err := fmt.Sscanf(*scaleFill, "%dx%d", &jobs, &execs); err != nil || jobs <= 0 || execs < 0 {
		b.Fatalf("-scale.fill %q: want JOBSxEXECUTIONS, e.g. 10000x60", *scaleFill)
	}
	ctx := context.Background()
	path := filledStore(b, jobs, execs)
	period := time.Duration(jobs) * time.Millisecond // 1,000 items a second
	start := t0.Add(time.Duration(execs) * period)
	// the store's clock follows the items' (its rollup counts a minute's rows once the minute is over)
	clk := clock.NewFake(start)
	opened := time.Now()
	st, err := Open(ctx, path, WithLogger(discardLogger()), WithClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	// the migrations a cached file of an older schema takes
	fmt.Fprintf(os.Stderr, "opened in %s\n", time.Since(opened).Round(time.Millisecond))
	s := st.(*sqliteStore)
	w := s.w
	if _, err := w.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		b.Fatal(err)
	}
	for _, ix := range strings.FieldsFunc(*scaleDrop, func(r rune) bool { return r == ',' }) {
		if _, err := w.ExecContext(ctx, "DROP INDEX "+ix); err != nil {
			b.Fatal(err)
		}
	}
	wal, err := os.Open(path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = wal.Close() }()
	var (
		frames   int64
		copied   int64
		pageSize int64
		byPage   = map[uint32]int64{}
		cpu      time.Duration
	)
	if err := w.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		b.Fatal(err)
	}
	timed := func(fn func() error) {
		before := processCPU()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - before
	}
	// checkpoint copies the WAL back (CPU counted, as the store's own checkpoints are part of a write's cost)
	// and counts its frames by page, read off the WAL's frame headers (not counted).
	checkpoint := func() {
		var busy, log, done int64
		timed(func() error {
			return w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
		})
		frames += log
		interval := map[uint32]int64{}
		if err := walPages(wal, log, pageSize, interval); err != nil {
			b.Fatal(err)
		}
		copied += int64(len(interval)) // a checkpoint copies the last frame of each page
		for pg, n := range interval {
			byPage[pg] += n
		}
	}
	checkpoint()
	frames, copied, cpu = 0, 0, 0
	clear(byPage)

	execsB := make([]ejserver.Execution, 0, *scaleBatch)
	traces := make([]ejserver.StatusTrace, 0, 3*(*scaleBatch))
	b.ResetTimer()
	for i := range b.N {
		execsB, traces = appendItem(execsB, traces, jobs, i, *scaleSpread, start)
		if len(execsB) == *scaleBatch || i == b.N-1 {
			clockTo(clk, execsB)
			timed(func() error { return s.WriteBatch(ctx, execsB, traces) })
			execsB, traces = execsB[:0], traces[:0]
			if (i / *scaleBatch)%*scaleCheckpoint == *scaleCheckpoint-1 || i == b.N-1 {
				checkpoint()
			}
		}
	}
	// the rows the rollup has not counted yet (the last minutes'): counted as the next writes would, their
	// pages and CPU this run's
	clk.Advance(time.Hour)
	timed(func() error { return countDue(ctx, s) })
	checkpoint()
	b.StopTimer()
	b.ReportMetric(float64(frames)/float64(b.N), "pages/item")
	b.ReportMetric(float64(frames*(pageSize+24))/1024/float64(b.N), "WAL-KB/item")
	b.ReportMetric(float64(copied)/float64(b.N), "checkpointed-pages/item")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/item")
	logPagesByBTree(b, w, byPage, frames)
}

var (
	scaleFill       = flag.String("scale.fill", "10000x60", "BenchmarkSmallBatchesAtScale: the history first written, JOBSxEXECUTIONS")
	scaleBatch      = flag.Int("scale.batch", 16, "BenchmarkSmallBatchesAtScale: items a batch (a transaction)")
	scaleCache      = flag.String("scale.cache", "", "BenchmarkSmallBatchesAtScale: a directory keeping the filled files")
	scaleCheckpoint = flag.Int("scale.checkpoint", 64, "BenchmarkSmallBatchesAtScale: batches between checkpoints")
	scaleDrop       = flag.String("scale.drop", "", "BenchmarkSmallBatchesAtScale: indexes dropped before measuring, comma-separated")
	scaleSpread     = flag.Int("scale.spread", 7919, "BenchmarkSmallBatchesAtScale: item i is of job i*spread%jobs (coprime to jobs)")
)

// clockTo moves clk to the start of the last of batch, the items being written: a store's clock follows them.
func clockTo(clk *clock.Fake, batch []ejserver.Execution) {
	clk.Advance(batch[len(batch)-1].StartedAt.Sub(clk.Now()))
}

// appendItem appends item i of a history of jobs jobs at 1,000 items a second from start (job i%jobs): an
// ended execution and its task's three status traces. Item i is of job i*spread%jobs: with a spread coprime
// to jobs every job has one item in jobs items, and a batch's jobs are apart in the job-ordered B-trees, as
// the jobs of one wave are on a peer (steady-10k's job k fires at second k%10), not neighbours sharing a leaf.
func appendItem(execs []ejserver.Execution, traces []ejserver.StatusTrace, jobs, i, spread int, start time.Time) ([]ejserver.Execution, []ejserver.StatusTrace) {
	at := start.Add(time.Duration(i) * time.Millisecond)
	e := newExec(fmt.Sprintf("job-%06d", i*spread%jobs), 0, at)
	e.ScheduledAt = at.Add(-time.Duration(i%50) * time.Millisecond)
	e.DurationMs = int64(20 + i%200)
	e.CompletedAt = at.Add(time.Duration(e.DurationMs) * time.Millisecond)
	execs = append(execs, e)
	for k, state := range []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskRunning, ejserver.TaskFinished} {
		traces = append(traces, ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: e.JobName, TaskID: e.TaskID,
			InstanceID: e.InstanceID, ExecutionType: "READY", ShardingItems: "0", Source: e.Source, State: state,
			CreationTime: at.Add(time.Duration(k) * time.Millisecond)})
	}
	return execs, traces
}

// filledStore returns the path of a fresh copy of a store holding execs executions of each of jobs jobs (and
// their traces and rollup), filled once per -scale.cache.
func filledStore(b *testing.B, jobs, execs int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "history.db")
	var cached string
	if *scaleCache != "" {
		all, err := migrations("sqlite")
		if err != nil {
			b.Fatal(err)
		}
		// fill2: filled on the items' clock (a fill- file was filled on the system's: its frontier is past)
		cached = filepath.Join(*scaleCache, fmt.Sprintf("fill2-%dx%d-v%d.db", jobs, execs, all[len(all)-1].version))
		if err := copyFile(cached, path); err == nil {
			return path
		}
	}
	ctx := context.Background()
	// the store's clock follows the items', as in the measured batches: on the system's clock every minute of
	// the fill would be long over, its rollup's frontier would end past the measured items' minutes, and they
	// would change their cells batch by batch instead of being counted a minute at a time, as on a live peer
	clk := clock.NewFake(t0)
	st, err := Open(ctx, path, WithLogger(discardLogger()), WithClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	var (
		es []ejserver.Execution
		ts []ejserver.StatusTrace
	)
	for i := range jobs * execs {
		es, ts = appendItem(es, ts, jobs, i, 1, t0)
		if len(es) == 500 || i == jobs*execs-1 {
			clockTo(clk, es)
			if err := st.(BatchSink).WriteBatch(ctx, es, ts); err != nil {
				b.Fatal(err)
			}
			es, ts = es[:0], ts[:0]
		}
	}
	if _, err := st.(*sqliteStore).w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d executions of %d jobs in %s", jobs*execs, jobs, time.Since(began).Round(time.Second))
	if cached != "" {
		if err := os.MkdirAll(*scaleCache, 0o750); err != nil {
			b.Fatal(err)
		}
		if err := copyFile(path, cached); err != nil {
			b.Fatal(err)
		}
	}
	return path
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(to + ".tmp")
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(to+".tmp", to)
}

// walPages adds the page numbers of the WAL's first n frames to byPage (the WAL's frame headers: a 32-byte
// file header, then each frame's 24-byte header, the page number first, and the page).
func walPages(wal *os.File, n, pageSize int64, byPage map[uint32]int64) error {
	var h [4]byte
	for i := range n {
		if _, err := wal.ReadAt(h[:], 32+i*(24+pageSize)); err != nil {
			return err
		}
		byPage[binary.BigEndian.Uint32(h[:])]++
	}
	return nil
}

// logPagesByBTree prints the frames per item of each B-tree, by the pages' owners now (dbstat).
func logPagesByBTree(b *testing.B, w *sql.DB, byPage map[uint32]int64, frames int64) {
	rows, err := w.Query("SELECT name, pageno FROM dbstat")
	if err != nil {
		b.Fatal(err)
	}
	owner := map[uint32]string{}
	for rows.Next() {
		var (
			name string
			pg   uint32
		)
		if err := rows.Scan(&name, &pg); err != nil {
			b.Fatal(err)
		}
		owner[pg] = name
	}
	if err := rows.Close(); err != nil {
		b.Fatal(err)
	}
	byTree := map[string]int64{}
	for pg, n := range byPage {
		name, ok := owner[pg]
		if !ok {
			name = "(free or page 1)"
		}
		byTree[name] += n
	}
	names := slices.SortedFunc(maps.Keys(byTree), func(a, c string) int { return int(byTree[c] - byTree[a]) })
	out := fmt.Sprintf("%d items, %.2f pages an item:", b.N, float64(frames)/float64(b.N))
	for _, name := range names {
		out += fmt.Sprintf("\n  %-40s %.3f", name, float64(byTree[name])/float64(b.N))
	}
	// to stderr: the benchmark's log keeps only its first lines
	fmt.Fprintln(os.Stderr, out)
}

// processCPU is the process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
