package history

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// The stores' Stats: the shared statements (stats.go) run on each driver.

func (s *sqliteStore) run(ctx context.Context, q *query, each func(rowScanner) error) error {
	rows, err := s.r.QueryContext(ctx, q.String(), q.args...)
	return scanAll(rows, err, each)
}

// scanAll calls each for every row of a query's rows (or returns its error), and closes them.
func scanAll(rows *sql.Rows, err error, each func(rowScanner) error) error {
	if err != nil {
		return sqliteError("stats", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		if err := each(rows); err != nil {
			return sqliteError("stats", err)
		}
	}
	return sqliteError("stats", rows.Err())
}

// inSnapshot runs fn with a runQuery whose statements read one snapshot of the file (a read transaction), and
// the rollup's frontier in it: the cells and the rows the frontier has not counted are then read as of the
// same moment, while the writer moves rows from one to the other.
func (s *sqliteStore) inSnapshot(ctx context.Context, fn func(run runQuery, front *rollup.Frontier) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return sqliteError("stats", err)
	}
	defer func() { _ = tx.Rollback() }()
	front, err := readFrontier(ctx, tx)
	if err != nil {
		return sqliteError("stats", err)
	}
	run := func(ctx context.Context, q *query, each func(rowScanner) error) error {
		rows, err := tx.QueryContext(ctx, q.String(), q.args...)
		return scanAll(rows, err, each)
	}
	return fn(run, &front)
}

func (s *sqliteStore) JobStats(ctx context.Context, q StatsQuery) (out JobStats, err error) {
	err = s.inSnapshot(ctx, func(run runQuery, front *rollup.Frontier) error {
		out, err = jobStats(ctx, run, sqliteDialect, q, true, front)
		return err
	})
	return out, err
}

func (s *sqliteStore) JobPoints(ctx context.Context, q StatsQuery) (PointList, error) {
	return jobPoints(ctx, s.run, sqliteDialect, q)
}

func (s *sqliteStore) ClusterStats(ctx context.Context, q StatsQuery) (out ClusterStats, err error) {
	err = s.inSnapshot(ctx, func(run runQuery, front *rollup.Frontier) error {
		out, err = clusterStats(ctx, run, sqliteDialect, q, true, front)
		return err
	})
	return out, err
}

func (s *postgresStore) run(ctx context.Context, q *query, each func(rowScanner) error) error {
	rows, err := s.pool.Query(ctx, q.String(), q.args...)
	return pgScanAll(rows, err, each)
}

// pgScanAll calls each for every row of a query's rows (or returns its error), and closes them.
func pgScanAll(rows pgx.Rows, err error, each func(rowScanner) error) error {
	if err != nil {
		return pgError("stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(pgRows{rows}); err != nil {
			return pgError("stats", err)
		}
	}
	return pgError("stats", rows.Err())
}

// pgRows is pgx's rows as a rowScanner.
type pgRows struct{ pgx.Rows }

func (s *postgresStore) JobStats(ctx context.Context, q StatsQuery) (out JobStats, err error) {
	err = s.inSnapshot(ctx, func(run runQuery, front *rollup.Frontier) error {
		out, err = jobStats(ctx, run, postgresDialect, q, true, front)
		return err
	})
	return out, err
}

func (s *postgresStore) JobPoints(ctx context.Context, q StatsQuery) (PointList, error) {
	return jobPoints(ctx, s.run, postgresDialect, q)
}

func (s *postgresStore) ClusterStats(ctx context.Context, q StatsQuery) (out ClusterStats, err error) {
	err = s.inSnapshot(ctx, func(run runQuery, front *rollup.Frontier) error {
		out, err = clusterStats(ctx, run, postgresDialect, q, true, front)
		return err
	})
	return out, err
}

// JobStats implements Store.
func (d *Deferred) JobStats(ctx context.Context, q StatsQuery) (JobStats, error) {
	s, err := d.get()
	if err != nil {
		return JobStats{}, err
	}
	return s.JobStats(ctx, q)
}

// JobPoints implements Store.
func (d *Deferred) JobPoints(ctx context.Context, q StatsQuery) (PointList, error) {
	s, err := d.get()
	if err != nil {
		return PointList{}, err
	}
	return s.JobPoints(ctx, q)
}

// ClusterStats implements Store.
func (d *Deferred) ClusterStats(ctx context.Context, q StatsQuery) (ClusterStats, error) {
	s, err := d.get()
	if err != nil {
		return ClusterStats{}, err
	}
	return s.ClusterStats(ctx, q)
}

// Shared implements Stats: an SQLite file holds one peer's history.
func (s *sqliteStore) Shared() bool { return false }

// Shared implements Stats: PostgreSQL holds every peer's history.
func (s *postgresStore) Shared() bool { return true }

// RollupBehind implements RollupReporter: the open store's (an EUNAVAILABLE error until it is open).
func (d *Deferred) RollupBehind(ctx context.Context) (time.Duration, error) {
	s, err := d.get()
	if err != nil {
		return 0, err
	}
	r, ok := s.(RollupReporter)
	if !ok {
		return 0, fmt.Errorf("history: %T does not report its rollup", s)
	}
	return r.RollupBehind(ctx)
}

// Shared implements Stats (false until the store is open).
func (d *Deferred) Shared() bool {
	s, err := d.get()
	return err == nil && s.Shared()
}
