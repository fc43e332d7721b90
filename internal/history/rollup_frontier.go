package history

import (
	"context"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/history/rollup"
)

// Both stores count the stats' rollup a minute at a time (SQLite's migration 0017, PostgreSQL's 0021): a
// batch's rows change the cells only where the rollup's frontier (rollup.Frontier) has counted them already,
// and each write moves the frontier over the minutes that are over, a chunk of whole jobs at a time, writing a
// minute's cells in their key's order. With 100,000 jobs an item's cells were ~2.5 scattered pages of an
// SQLite batch's transaction, and ~5 upserts of cells that PostgreSQL's triggers found there already; a
// minute's cells counted together fill consecutive leaves, each cell written once (docs/benchmarks.md "the
// rollup a minute at a time"). The stats read the rows the frontier has not reached beside the cells
// (planStats).

const (
	// rollupSettle is how long after a minute's end its rows are counted: the rows of its items have then
	// nearly all been written (an item is recorded at its end; a row written later, or replaced, changes its
	// cells as it is written, as every row did before).
	rollupSettle = 30 * time.Second
	// rollupAdvanceRows is how many rows one write counts at most (more when a single job has more rows in a
	// minute: its rows are counted together). At 100,000 jobs a peer's minute holds ~33,000 rows: the frontier
	// keeps up with a few chunks a minute out of the writer's hundreds of transactions, each chunk a few tens
	// of milliseconds, so that no commit an item's end waits for takes the whole minute's.
	rollupAdvanceRows = 2000
)

// frontierKeeper is what a store keeps to move its rollup's frontier.
type frontierKeeper struct {
	// clock tells which minutes are over: a write counts their rows into the rollup, advanceRows of them at
	// most (rollupAdvanceRows; tests make chunks small, or 0: no write counts any).
	clock       clock.Clock
	advanceRows int
	// plan is the jobs of the minute the frontier is in, as last read (minuteAhead).
	planMu sync.Mutex
	plan   rollup.Plan
}

func newFrontierKeeper(c clock.Clock) frontierKeeper {
	return frontierKeeper{clock: c, advanceRows: rollupAdvanceRows}
}

// frontierTx is a store's write transaction as the frontier's advance reads and writes it.
type frontierTx interface {
	// minuteJobs reads the jobs of f's minute after f.Job, in their name's order (byte by byte), with how many
	// rows each has there.
	minuteJobs(ctx context.Context, f rollup.Frontier) ([]rollup.JobRows, error)
	// nextRowMinute is the minute of the first row that started in minute from or later (ok false: none).
	nextRowMinute(ctx context.Context, from int64) (minute int64, ok bool, err error)
	// count counts into the cells the rows of f's minute whose jobs are after f.Job and up to last, and says
	// how many it counted.
	count(ctx context.Context, f rollup.Frontier, last string) (int, error)
	// writeFrontier stores f.
	writeFrontier(ctx context.Context, f rollup.Frontier) error
}

// due says whether f has rows to count at the keeper's clock (a write that counts some).
func (k *frontierKeeper) due(f rollup.Frontier) bool {
	return k.advanceRows > 0 && f.Minute < rollup.DueMinute(k.clock.Now(), rollupSettle)
}

// advance counts into the rollup the rows of the minutes that are over (rollupSettle after their end), up to
// advanceRows of them, and moves the frontier f (as tx holds it) past them, in tx. A minute's chunks end where
// its plan says (rollup.Plan, its jobs read once): each chunk reads its jobs' rows from the minute's range of
// the start-ordered index, instead of sorting the rest of the minute again for each chunk.
func (k *frontierKeeper) advance(ctx context.Context, tx frontierTx, f rollup.Frontier) error {
	start := f
	due := rollup.DueMinute(k.clock.Now(), rollupSettle)
	for budget := k.advanceRows; f.Minute < due && budget > 0; {
		jobs, err := k.minuteAhead(ctx, tx, f)
		if err != nil {
			return err
		}
		if len(jobs) == 0 { // the minute is counted: on to the next one that has rows, or to due
			next, ok, err := tx.nextRowMinute(ctx, f.Minute+1)
			if err != nil {
				return err
			}
			f = rollup.Frontier{Minute: due}
			if ok && next < due {
				f.Minute = next
			}
			continue
		}
		last := jobs[rollup.Chunk(jobs, budget)-1].Job
		n, err := tx.count(ctx, f, last)
		if err != nil {
			return err
		}
		budget -= max(n, 1)
		f.Job = last
	}
	if f == start {
		return nil
	}
	return tx.writeFrontier(ctx, f)
}

// minuteAhead is the jobs of f's minute that f has not reached, with their rows: from the minute's plan while
// it has some, else read again (the jobs whose rows were written since, or the minute's first plan). None:
// the minute is counted.
func (k *frontierKeeper) minuteAhead(ctx context.Context, tx frontierTx, f rollup.Frontier) ([]rollup.JobRows, error) {
	k.planMu.Lock()
	defer k.planMu.Unlock()
	if jobs := k.plan.Ahead(f); len(jobs) > 0 {
		return jobs, nil
	}
	jobs, err := tx.minuteJobs(ctx, f)
	if err != nil {
		return nil, err
	}
	k.plan = rollup.Plan{Minute: f.Minute, Jobs: jobs}
	return jobs, nil
}

// RollupReporter is a store whose stats rollup counts rows after they are written (a minute at a time):
// RollupBehind says how far behind it is.
type RollupReporter interface {
	// RollupBehind is how long ago the oldest row the rollup has not counted was due to be counted (its
	// minute's end and rollupSettle); 0 when none is due. While it grows the stats read more rows one by one.
	RollupBehind(ctx context.Context) (time.Duration, error)
}

var (
	_ RollupReporter = (*sqliteStore)(nil)
	_ RollupReporter = (*postgresStore)(nil)
	_ RollupReporter = (*Deferred)(nil)
)
