package history

import (
	"context"
	"errors"
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

// frontierTx is how the frontier's advance reads a store and moves its frontier: SQLite's writer's transaction
// (the writer is alone), PostgreSQL's pool (each step one statement under the rollup's lock).
type frontierTx interface {
	// minuteJobs reads the jobs of f's minute after f.Job, in their name's order (byte by byte), with how many
	// rows each has there.
	minuteJobs(ctx context.Context, f rollup.Frontier) ([]rollup.JobRows, error)
	// count counts into the cells the rows of f's minute whose jobs are after f.Job and up to last, moves the
	// frontier to (f.Minute, last), and says how many rows it counted.
	count(ctx context.Context, f rollup.Frontier, last string) (int, rollup.Frontier, error)
	// next moves the frontier f, whose minute has no rows after f.Job as the caller planned, to the first
	// minute after it that has rows, or to due when none is before it.
	//
	// Both return the frontier as it then is. With PostgreSQL that is not where they would have moved it when
	// another peer moved it first (nothing counted), or, for next, when rows were written after f.Job since the
	// plan was read (f: not moved); and they return errAnotherAdvances, having done nothing, while another
	// peer's step is under way.
	next(ctx context.Context, f rollup.Frontier, due int64) (rollup.Frontier, error)
}

// errAnotherAdvances is a step's answer while another writer steps the frontier: the advance is left to it.
var errAnotherAdvances = errors.New("history: another writer is moving the rollup's frontier")

// due says whether f has rows to count at the keeper's clock (a write that counts some).
func (k *frontierKeeper) due(f rollup.Frontier) bool {
	return k.advanceRows > 0 && f.Minute < rollup.DueMinute(k.clock.Now(), rollupSettle)
}

// advance counts into the rollup the rows of the minutes that are over (rollupSettle after their end), up to
// advanceRows of them, and moves the frontier from f past them, a step at a time (tx). A minute's chunks end
// where its plan says (rollup.Plan, its jobs read once): each chunk reads its jobs' rows from the minute's
// range of the start-ordered index, instead of sorting the rest of the minute again for each chunk. A count
// that finds the frontier moved by another writer (PostgreSQL's peers), or a step while another writer's is
// under way, ends the advance: that one goes on.
func (k *frontierKeeper) advance(ctx context.Context, tx frontierTx, f rollup.Frontier) error {
	if err := k.steps(ctx, tx, f); !errors.Is(err, errAnotherAdvances) {
		return err
	}
	return nil
}

// steps is advance's loop; it returns errAnotherAdvances from the step that met another writer's.
func (k *frontierKeeper) steps(ctx context.Context, tx frontierTx, f rollup.Frontier) error {
	due := rollup.DueMinute(k.clock.Now(), rollupSettle)
	for budget := k.advanceRows; f.Minute < due && budget > 0; {
		jobs, err := k.minuteAhead(ctx, tx, f)
		if err != nil {
			return err
		}
		if len(jobs) == 0 { // the minute is counted: on to the next one that has rows, or to due
			now, err := tx.next(ctx, f, due)
			if err != nil {
				return err
			}
			if now == f { // rows came after the plan was read: the minute is planned again
				budget--
			}
			f = now
			continue
		}
		last := jobs[rollup.Chunk(jobs, budget)-1].Job
		n, now, err := tx.count(ctx, f, last)
		if err != nil {
			return err
		}
		if now != (rollup.Frontier{Minute: f.Minute, Job: last}) {
			return nil
		}
		budget -= max(n, 1)
		f = now
	}
	return nil
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
