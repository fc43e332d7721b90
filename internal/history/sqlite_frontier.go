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
	// sqliteMinuteRows: the rows of minute ?1 after job ?2, in their job's order, at most ?3 (a minute's range
	// of the start-ordered covering index, sorted).
	sqliteMinuteRows = `SELECT ` + rollupColumns + ` FROM JOB_EXECUTION_LOG INDEXED BY job_execution_log_start
		WHERE start_time >= ?1 * 60000000 AND start_time < (?1 + 1) * 60000000 AND job_name > ?2
		ORDER BY job_name LIMIT ?3`
	// sqliteJobMinuteRows: the rows of job ?2 in minute ?1.
	sqliteJobMinuteRows = `SELECT ` + rollupColumns + ` FROM JOB_EXECUTION_LOG INDEXED BY job_execution_log_job_start
		WHERE job_name = ?2 AND start_time >= ?1 * 60000000 AND start_time < (?1 + 1) * 60000000`
	// sqliteNextRowMinute: the minute of the first row that started at minute ?1 or later (NULL: none).
	sqliteNextRowMinute = `SELECT MIN(start_time) / 60000000 FROM JOB_EXECUTION_LOG WHERE start_time >= ?1 * 60000000`
)

// frontierStatements are the frontier's statements, prepared with the writes'.
var frontierStatements = map[stmtKey]string{
	{"frontier", 1}: sqliteFrontierRead, {"frontier write", 1}: sqliteFrontierWrite,
	{"minute rows", 1}: sqliteMinuteRows, {"job minute rows", 1}: sqliteJobMinuteRows,
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
// end), up to advanceRows of them, and moves the frontier f (as tx holds it) past them, in tx.
func (s *sqliteStore) advanceRollup(ctx context.Context, tx *sql.Tx, f rollup.Frontier) error {
	if s.noRollup {
		return nil
	}
	start := f
	due := rollup.DueMinute(s.clock.Now(), rollupSettle)
	for budget := s.advanceRows; f.Minute < due && budget > 0; {
		rows, err := s.rollupRows(ctx, tx, "minute rows", f.Minute, f.Job, budget+1)
		if err != nil {
			return err
		}
		n, more := rollup.Chunk(rows, budget)
		switch {
		case len(rows) == 0: // the minute is counted: on to the next one that has rows, or to due
			var next sql.NullInt64
			if err := s.stmt(ctx, tx, "next row minute").QueryRowContext(ctx, f.Minute+1).Scan(&next); err != nil {
				return err
			}
			f = rollup.Frontier{Minute: due}
			if next.Valid && next.Int64 < due {
				f.Minute = next.Int64
			}
			continue
		case n == 0: // the first job alone has more rows than the budget: all of them
			if rows, err = s.rollupRows(ctx, tx, "job minute rows", f.Minute, rows[0].Job); err != nil {
				return err
			}
			n = len(rows)
		}
		counted := rows[:n]
		d := rollup.Aggregate(nil, counted)
		d.Fires(d.FireRows) // the rows of each fire counted are all of its rows in the minute
		if err := s.applyRollup(ctx, tx, d, f); err != nil {
			return err
		}
		budget -= n
		if more {
			f.Job = counted[n-1].Job
		} else {
			f = rollup.Frontier{Minute: f.Minute + 1}
		}
	}
	if f == start {
		return nil
	}
	_, err := s.stmt(ctx, tx, "frontier write").ExecContext(ctx, f.Minute, f.Job)
	return err
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
