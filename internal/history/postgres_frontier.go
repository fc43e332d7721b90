package history

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// PostgreSQL's side of the rollup's frontier (migrations 0021 and 0023; the advance is rollup_frontier.go's).
// The executions' triggers count only the rows behind the frontier; after a write of executions commits, its
// store's advancer (postgres_advancer.go) moves the frontier over the rows that are due, a step at a time:
// each step is one statement (ejs_rollup_step) that takes the rollup's advisory lock, checks the frontier the
// step was planned from, counts a chunk's rows into the cells (ejs_rollup_count) and moves the frontier, and
// commits. The triggers and the steps take the lock (held to the transaction's end) before they read the
// frontier, so that a row is counted once, as its writer writes it or as a step passes it; and the lock is
// never held while a peer's round trip is under way (docs/benchmarks.md "the rollup's lock, held only inside
// the server").

// The frontier's statements.
const (
	pgFrontierRead = `SELECT minute, job FROM EXECUTION_ROLLUP_FRONTIER WHERE id = 1`
	// pgMinuteJobs: the jobs of minute $1 after job $2, in their names' byte order, with how many rows each has
	// there: the minute's plan, read once (without the lock: a step checks what it plans against the rows).
	pgMinuteJobs = `SELECT job_name, COUNT(*) FROM JOB_EXECUTION_LOG
		WHERE start_time >= to_timestamp($1::bigint * 60) AND start_time < to_timestamp(($1::bigint + 1) * 60)
		AND job_name COLLATE "C" > $2 GROUP BY job_name ORDER BY job_name COLLATE "C"`
	// pgRollupStep: one step of the advance from frontier ($1, $2): the chunk up to job $3, or with $3 NULL on
	// to the next minute with rows, or due ($4) (migration 0023).
	pgRollupStep = `SELECT at_minute, at_job, counted FROM ejs_rollup_step($1, $2, $3, $4)`
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

// advanceRollup moves the frontier from f (as a write of executions read it as it committed) over the rows that
// are due, when some are: a step at a time, each its own statement and transaction (pgSteps).
func (s *postgresStore) advanceRollup(ctx context.Context, f rollup.Frontier) error {
	if !s.due(f) {
		return nil
	}
	return s.advance(ctx, pgSteps{s.pool}, f)
}

// pgSteps is the pool as the frontier's advance uses it: each step a statement of its own (ejs_rollup_step).
type pgSteps struct{ pool *pgxpool.Pool }

func (t pgSteps) minuteJobs(ctx context.Context, f rollup.Frontier) ([]rollup.JobRows, error) {
	rows, err := t.pool.Query(ctx, pgMinuteJobs, f.Minute, f.Job)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (rollup.JobRows, error) {
		var j rollup.JobRows
		err := row.Scan(&j.Job, &j.Rows)
		return j, err
	})
}

func (t pgSteps) count(ctx context.Context, f rollup.Frontier, last string) (int, rollup.Frontier, error) {
	return t.step(ctx, f, &last, f.Minute+1) // f's minute is due: the advance plans only those
}

func (t pgSteps) next(ctx context.Context, f rollup.Frontier, due int64) (rollup.Frontier, error) {
	_, now, err := t.step(ctx, f, nil, due)
	return now, err
}

func (t pgSteps) step(ctx context.Context, f rollup.Frontier, last *string, due int64) (int, rollup.Frontier, error) {
	var (
		now rollup.Frontier
		n   int
	)
	err := t.pool.QueryRow(ctx, pgRollupStep, f.Minute, f.Job, last, due).Scan(&now.Minute, &now.Job, &n)
	if err == nil && n < 0 {
		err = errAnotherAdvances
	}
	return n, now, err
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
