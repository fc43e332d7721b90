package history

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// PostgreSQL's side of the rollup's frontier (migration 0021; the advance is rollup_frontier.go's). The
// executions' triggers count only the rows behind the frontier; each write of executions then moves the
// frontier over the rows that are due, in its transaction: ejs_rollup_count writes a chunk's cells. The
// triggers and the advance take one advisory lock (0009's, held to the transaction's end) before they read the
// frontier, so that a row is counted once, as its writer writes it or as the advance passes it.

// The frontier's statements.
const (
	pgFrontierRead  = `SELECT minute, job FROM EXECUTION_ROLLUP_FRONTIER WHERE id = 1`
	pgFrontierWrite = `UPDATE EXECUTION_ROLLUP_FRONTIER SET minute = $1, job = $2 WHERE id = 1`
	pgRollupLock    = `SELECT pg_advisory_xact_lock(7307779168248034672)` // 'ejrollup', 0009's
	// pgMinuteJobs: the jobs of minute $1 after job $2, in their names' byte order, with how many rows each has
	// there: the minute's plan, read once.
	pgMinuteJobs = `SELECT job_name, COUNT(*) FROM JOB_EXECUTION_LOG
		WHERE start_time >= to_timestamp($1::bigint * 60) AND start_time < to_timestamp(($1::bigint + 1) * 60)
		AND job_name COLLATE "C" > $2 GROUP BY job_name ORDER BY job_name COLLATE "C"`
	// pgNextRowMinute: the minute of the first row that started at minute $1 or later (NULL: none).
	pgNextRowMinute = `SELECT CAST(EXTRACT(EPOCH FROM MIN(start_time)) * 1000000 AS BIGINT) / 60000000
		FROM JOB_EXECUTION_LOG WHERE start_time >= to_timestamp($1::bigint * 60)`
	pgRollupCount = `SELECT ejs_rollup_count($1, $2, $3)`
	// pgOldestUncounted: the start of the oldest row that frontier ($1, $2) has not counted (NULL: none).
	pgOldestUncounted = `SELECT MIN(start_time) FROM JOB_EXECUTION_LOG
		WHERE start_time >= to_timestamp($1::bigint * 60)
		AND (start_time >= to_timestamp(($1::bigint + 1) * 60) OR job_name COLLATE "C" > $2)`
)

// pgFrontierMigration is the migration that creates the frontier (0021). It starts the frontier two minutes
// ahead of the clock, for a writer of an older release that may be waiting on the lock with a row of this
// minute, whose trigger counts it; until then every row is counted by its writer's trigger, a cell at a time
// (~13x the server's work an item: docs/benchmarks.md "a fresh database's first two minutes"). A database
// the migrating transaction creates has no such writer: nothing could write its tables before that
// transaction commits, and after it every writer's triggers read the frontier. There pgFrontierFresh starts
// the frontier before every row, as SQLite's 0017 does on an empty table: rows are counted once their minute
// is over.
const (
	pgFrontierMigration = 21
	pgFrontierFresh     = `UPDATE EXECUTION_ROLLUP_FRONTIER SET minute = 0, job = '' WHERE id = 1`
)

// pgQueryer is a transaction or the pool: what reads the frontier.
type pgQueryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgReadFrontier reads how far the rollup has counted, in q.
func pgReadFrontier(ctx context.Context, q pgQueryer) (rollup.Frontier, error) {
	var f rollup.Frontier
	err := q.QueryRow(ctx, pgFrontierRead).Scan(&f.Minute, &f.Job)
	return f, err
}

// advanceRollup moves the frontier over the rows that are due, in tx (a write of executions), when some are:
// with the rollup's lock, and the frontier read again under it.
func (s *postgresStore) advanceRollup(ctx context.Context, tx pgx.Tx) error {
	f, err := pgReadFrontier(ctx, tx)
	if err != nil || !s.due(f) {
		return err
	}
	if _, err := tx.Exec(ctx, pgRollupLock); err != nil {
		return err
	}
	if f, err = pgReadFrontier(ctx, tx); err != nil {
		return err
	}
	return s.advance(ctx, pgFrontierTx{tx}, f)
}

// pgFrontierTx is a write's transaction as the frontier's advance uses it.
type pgFrontierTx struct{ tx pgx.Tx }

func (t pgFrontierTx) minuteJobs(ctx context.Context, f rollup.Frontier) ([]rollup.JobRows, error) {
	rows, err := t.tx.Query(ctx, pgMinuteJobs, f.Minute, f.Job)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (rollup.JobRows, error) {
		var j rollup.JobRows
		err := row.Scan(&j.Job, &j.Rows)
		return j, err
	})
}

func (t pgFrontierTx) nextRowMinute(ctx context.Context, from int64) (int64, bool, error) {
	var next *int64
	if err := t.tx.QueryRow(ctx, pgNextRowMinute, from).Scan(&next); err != nil || next == nil {
		return 0, false, err
	}
	return *next, true, nil
}

func (t pgFrontierTx) count(ctx context.Context, f rollup.Frontier, last string) (int, error) {
	var n int
	err := t.tx.QueryRow(ctx, pgRollupCount, f.Minute, f.Job, last).Scan(&n)
	return n, err
}

func (t pgFrontierTx) writeFrontier(ctx context.Context, f rollup.Frontier) error {
	_, err := t.tx.Exec(ctx, pgFrontierWrite, f.Minute, f.Job)
	return err
}

// inSnapshot runs fn with a runQuery whose statements read one snapshot of the database (a read-only
// repeatable-read transaction), and the rollup's frontier in it: the cells and the rows the frontier has not
// counted are then read as of the same moment, while the writers move rows from one to the other.
func (s *postgresStore) inSnapshot(ctx context.Context, fn func(run runQuery, front *rollup.Frontier) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return pgError("stats", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	front, err := pgReadFrontier(ctx, tx)
	if err != nil {
		return pgError("stats", err)
	}
	return fn(func(ctx context.Context, q *query, each func(rowScanner) error) error {
		rows, err := tx.Query(ctx, q.String(), q.args...)
		return pgScanAll(rows, err, each)
	}, &front)
}

func (s *postgresStore) RollupBehind(ctx context.Context) (time.Duration, error) {
	var oldest *time.Time
	err := s.inSnapshot(ctx, func(run runQuery, f *rollup.Frontier) error { // the frontier and the rows of one moment
		q := &query{d: postgresDialect, args: []any{f.Minute, f.Job}}
		q.write(pgOldestUncounted)
		return run(ctx, q, func(r rowScanner) error { return r.Scan(&oldest) })
	})
	if err != nil || oldest == nil {
		return 0, err
	}
	return rollup.Behind(rollup.Row{Start: oldest.UnixMicro()}.Minute(), s.clock.Now(), rollupSettle), nil
}
