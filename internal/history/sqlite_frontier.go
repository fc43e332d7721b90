package history

import (
	"context"
	"database/sql"
	"time"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// SQLite's side of the rollup's frontier (migration 0017; the advance is rollup_frontier.go's): its
// statements, run in the writer's transaction.

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

// advanceRollup moves the frontier f (as tx holds it) over the rows that are due, in tx (frontierKeeper.advance).
func (s *sqliteStore) advanceRollup(ctx context.Context, tx *sql.Tx, f rollup.Frontier) error {
	if s.noRollup {
		return nil
	}
	return s.advance(ctx, sqliteFrontierTx{s, tx}, f)
}

// sqliteFrontierTx is the writer's transaction as the frontier's advance uses it.
type sqliteFrontierTx struct {
	s  *sqliteStore
	tx *sql.Tx
}

func (t sqliteFrontierTx) minuteJobs(ctx context.Context, f rollup.Frontier) ([]rollup.JobRows, error) {
	rows, err := t.s.stmt(ctx, t.tx, "minute jobs").QueryContext(ctx, f.Minute, f.Job)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var jobs []rollup.JobRows
	for rows.Next() {
		var j rollup.JobRows
		if err := rows.Scan(&j.Job, &j.Rows); err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// next reads the minute of the first row after f's minute, in the writer's transaction: no other writer
// wrote rows since the plan was read in it.
func (t sqliteFrontierTx) next(ctx context.Context, f rollup.Frontier, due int64) (rollup.Frontier, error) {
	var next sql.NullInt64
	if err := t.s.stmt(ctx, t.tx, "next row minute").QueryRowContext(ctx, f.Minute+1).Scan(&next); err != nil {
		return f, err
	}
	now := rollup.Frontier{Minute: due}
	if next.Valid && next.Int64 < due {
		now.Minute = next.Int64
	}
	return now, t.writeFrontier(ctx, now)
}

// count reads the chunk's rows, aggregates them (rollup.Aggregate) and applies them.
func (t sqliteFrontierTx) count(ctx context.Context, f rollup.Frontier, last string) (int, rollup.Frontier, error) {
	rows, err := t.s.rollupRows(ctx, t.tx, t.s.advanceRows, "minute rows", f.Minute, f.Job, last)
	if err != nil {
		return 0, f, err
	}
	d := rollup.Aggregate(nil, rows)
	d.Fires(d.FireRows) // the rows of each fire counted are all of its rows in the minute
	if err := t.s.applyRollup(ctx, t.tx, d, f); err != nil {
		return 0, f, err
	}
	now := rollup.Frontier{Minute: f.Minute, Job: last}
	return len(rows), now, t.writeFrontier(ctx, now)
}

func (t sqliteFrontierTx) writeFrontier(ctx context.Context, f rollup.Frontier) error {
	_, err := t.s.stmt(ctx, t.tx, "frontier write").ExecContext(ctx, f.Minute, f.Job)
	return err
}

// rollupRows reads the rows of a minute that the prepared statement kind selects (rollupColumns), about n of
// them.
func (s *sqliteStore) rollupRows(ctx context.Context, tx *sql.Tx, n int, kind string, args ...any) ([]rollup.Row, error) {
	rows, err := s.stmt(ctx, tx, kind).QueryContext(ctx, args...)
	out := make([]rollup.Row, 0, n)
	err = eachRollupRow(rows, err, false, func(_ string, r rollup.Row) { out = append(out, r) })
	return out, err
}

// sqliteOldestUncounted: the start of the oldest row that frontier (?1, ?2) has not counted (NULL: none).
const sqliteOldestUncounted = `SELECT MIN(start_time) FROM JOB_EXECUTION_LOG INDEXED BY job_execution_log_start
	WHERE start_time >= ?1 * 60000000 AND (start_time >= (?1 + 1) * 60000000 OR job_name > ?2)`

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
