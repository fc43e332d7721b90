package history

import (
	"context"
	"database/sql"
	"time"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// SQLite's writer counts the stats' rollup a minute at a time (migration 0017): a batch's rows change the
// cells only where the rollup's frontier (rollup.Frontier) has counted them already, and each write moves the
// frontier over the minutes that are over, a chunk of whole jobs at a time, writing a minute's cells in their
// key's order. With 100,000 jobs an item's cells were ~2.5 scattered pages of a batch's transaction; a
// minute's cells counted together fill consecutive leaves (docs/benchmarks.md "the rollup a minute at a
// time"). The stats read the rows the frontier has not reached beside the cells (planStats).

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

// The frontier's statements.
const (
	sqliteFrontierRead  = `SELECT minute, job FROM EXECUTION_ROLLUP_FRONTIER WHERE id = 1`
	sqliteFrontierWrite = `UPDATE EXECUTION_ROLLUP_FRONTIER SET minute = ?, job = ? WHERE id = 1`
	// sqliteMinuteJobs: the jobs of minute ?1 after job ?2, in order, with how many rows each has there (the
	// minute's range of the start-ordered covering index, the names sorted): the minute's plan, read once.
	sqliteMinuteJobs = `SELECT job_name, COUNT(*) FROM JOB_EXECUTION_LOG INDEXED BY job_execution_log_start
		WHERE start_time >= ?1 * 60000000 AND start_time < (?1 + 1) * 60000000 AND job_name > ?2
		GROUP BY job_name ORDER BY job_name`
	// sqliteMinuteRows: the rows of minute ?1 of the jobs after ?2 up to ?3 (the minute's range of the same
	// index, not sorted: the rollup's aggregate orders the cells it writes).
	sqliteMinuteRows = `SELECT ` + rollupColumns + ` FROM JOB_EXECUTION_LOG INDEXED BY job_execution_log_start
		WHERE start_time >= ?1 * 60000000 AND start_time < (?1 + 1) * 60000000 AND job_name > ?2 AND job_name <= ?3`
	// sqliteNextRowMinute: the minute of the first row that started at minute ?1 or later (NULL: none).
	sqliteNextRowMinute = `SELECT MIN(start_time) / 60000000 FROM JOB_EXECUTION_LOG WHERE start_time >= ?1 * 60000000`
)

// frontierStatements are the frontier's statements, prepared with the writes'.
var frontierStatements = map[stmtKey]string{
	{"frontier", 1}: sqliteFrontierRead, {"frontier write", 1}: sqliteFrontierWrite,
	{"minute jobs", 1}: sqliteMinuteJobs, {"minute rows", 1}: sqliteMinuteRows,
	{"next row minute", 1}: sqliteNextRowMinute,
}

// queryer is a transaction or a connection pool: what reads the frontier.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readFrontier reads how far the rollup has counted, in q (a stats read's transaction, a test's pool).
func readFrontier(ctx context.Context, q queryer) (rollup.Frontier, error) {
	return scanFrontier(q.QueryRowContext(ctx, sqliteFrontierRead))
}

// frontier reads it in the writer's transaction tx, through the prepared statement.
func (s *sqliteStore) frontier(ctx context.Context, tx *sql.Tx) (rollup.Frontier, error) {
	return scanFrontier(s.stmt(ctx, tx, "frontier").QueryRowContext(ctx))
}

func scanFrontier(row *sql.Row) (rollup.Frontier, error) {
	var f rollup.Frontier
	err := row.Scan(&f.Minute, &f.Job)
	return f, err
}

// stmt is the prepared statement named kind (of one row) in tx.
func (s *sqliteStore) stmt(ctx context.Context, tx *sql.Tx, kind string) *sql.Stmt {
	return tx.StmtContext(ctx, s.prepared[stmtKey{kind, 1}])
}

// advanceRollup counts into the rollup the rows of the minutes that are over (rollupSettle after their
// end), up to advanceRows of them, and moves the frontier f (as tx holds it) past them, in tx. A minute's
// chunks end where its plan says (rollup.Plan, its jobs read once): each chunk reads its jobs' rows from the
// minute's range of the index, instead of sorting the rest of the minute again for each chunk.
func (s *sqliteStore) advanceRollup(ctx context.Context, tx *sql.Tx, f rollup.Frontier) error {
	if s.noRollup {
		return nil
	}
	start := f
	due := rollup.DueMinute(s.clock.Now(), rollupSettle)
	for budget := s.advanceRows; f.Minute < due && budget > 0; {
		jobs, err := s.minuteAhead(ctx, tx, f)
		if err != nil {
			return err
		}
		if len(jobs) == 0 { // the minute is counted: on to the next one that has rows, or to due
			var next sql.NullInt64
			if err := s.stmt(ctx, tx, "next row minute").QueryRowContext(ctx, f.Minute+1).Scan(&next); err != nil {
				return err
			}
			f = rollup.Frontier{Minute: due}
			if next.Valid && next.Int64 < due {
				f.Minute = next.Int64
			}
			continue
		}
		last := jobs[rollup.Chunk(jobs, budget)-1].Job
		rows, err := s.rollupRows(ctx, tx, "minute rows", f.Minute, f.Job, last)
		if err != nil {
			return err
		}
		d := rollup.Aggregate(nil, rows)
		d.Fires(d.FireRows) // the rows of each fire counted are all of its rows in the minute
		if err := s.applyRollup(ctx, tx, d, f); err != nil {
			return err
		}
		budget -= max(len(rows), 1)
		f.Job = last
	}
	if f == start {
		return nil
	}
	_, err := s.stmt(ctx, tx, "frontier write").ExecContext(ctx, f.Minute, f.Job)
	return err
}

// minuteAhead is the jobs of f's minute that f has not reached, with their rows: from the minute's plan while
// it has some, else read again (the jobs whose rows were written since, or the minute's first plan). None:
// the minute is counted.
func (s *sqliteStore) minuteAhead(ctx context.Context, tx *sql.Tx, f rollup.Frontier) ([]rollup.JobRows, error) {
	s.planMu.Lock()
	defer s.planMu.Unlock()
	if jobs := s.plan.Ahead(f); len(jobs) > 0 {
		return jobs, nil
	}
	rows, err := s.stmt(ctx, tx, "minute jobs").QueryContext(ctx, f.Minute, f.Job)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	plan := rollup.Plan{Minute: f.Minute}
	for rows.Next() {
		var j rollup.JobRows
		if err := rows.Scan(&j.Job, &j.Rows); err != nil {
			return nil, err
		}
		plan.Jobs = append(plan.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.plan = plan
	return plan.Jobs, nil
}

// rollupRows reads the rows of a minute that the prepared statement kind selects (rollupColumns).
func (s *sqliteStore) rollupRows(ctx context.Context, tx *sql.Tx, kind string, args ...any) ([]rollup.Row, error) {
	rows, err := s.stmt(ctx, tx, kind).QueryContext(ctx, args...)
	got, err := collectRollupRows(rows, err, false)
	if err != nil {
		return nil, err
	}
	out := make([]rollup.Row, len(got))
	for i, g := range got {
		out[i] = g.Row
	}
	return out, nil
}

// sqliteOldestUncounted: the start of the oldest row that frontier (?1, ?2) has not counted (NULL: none).
const sqliteOldestUncounted = `SELECT MIN(start_time) FROM JOB_EXECUTION_LOG INDEXED BY job_execution_log_start
	WHERE start_time >= ?1 * 60000000 AND (start_time >= (?1 + 1) * 60000000 OR job_name > ?2)`

// RollupReporter is a store whose stats rollup counts rows after they are written (SQLite's, a minute at a
// time): RollupBehind says how far behind it is.
type RollupReporter interface {
	// RollupBehind is how long ago the oldest row the rollup has not counted was due to be counted (its
	// minute's end and rollupSettle); 0 when none is due. While it grows the stats read more rows one by one.
	RollupBehind(ctx context.Context) (time.Duration, error)
}

var _ RollupReporter = (*sqliteStore)(nil)

func (s *sqliteStore) RollupBehind(ctx context.Context) (time.Duration, error) {
	var oldest sql.NullInt64
	err := s.inSnapshot(ctx, func(run runQuery, f *rollup.Frontier) error { // the frontier and the rows of one moment
		q := &query{d: sqliteDialect, args: []any{f.Minute, f.Job}}
		q.write(sqliteOldestUncounted)
		return run(ctx, q, func(r rowScanner) error { return r.Scan(&oldest) })
	})
	if err != nil || !oldest.Valid {
		return 0, err
	}
	return rollup.Behind(rollup.Row{Start: oldest.Int64}.Minute(), s.clock.Now(), rollupSettle), nil
}
