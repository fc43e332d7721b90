package history

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// pgRollupLock takes the rollup's lock (0009's) as the executions' triggers and the frontier's steps do.
const pgRollupLock = `SELECT pg_advisory_xact_lock(7307779168248034672)`

// pgRollupTurn takes the steps' turn (0023's) as a step does, and holds it to the transaction's end.
const pgRollupTurn = `SELECT pg_advisory_xact_lock(7307779168248034673)`

// pgAdvisoryWaiters is the FROM and WHERE of the sessions of the current database waiting for an advisory lock
// (the rollup's, in these tests).
const pgAdvisoryWaiters = `FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// A batch writes its traces before its executions, whose triggers take the rollup's advisory lock and hold it
// to the commit: while another peer's write holds the lock, the batch waits for it with its traces already
// written (their table locked by its insert), so the peers' writers do not queue for the lock through their
// traces' inserts. Then it commits everything once the lock is free.
func TestPostgresBatchWritesItsTracesBeforeTheRollupLock(t *testing.T) {
	ctx := testCtx(t)
	s := openStore(t, "postgres").(*postgresStore)
	holder, err := s.pool.Begin(ctx) // another peer's write of executions, not yet committed
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, pgRollupLock); err != nil {
		t.Fatal(err)
	}

	recs, trs := execs(4, "locked"), testTraces(12, "locked")
	done := make(chan error, 1)
	go func() { done <- s.WriteBatch(ctx, recs, trs) }()
	var pid int
	eventually(t, "the batch waiting for the rollup's lock", func() bool {
		err := s.pool.QueryRow(ctx, `SELECT pid `+pgAdvisoryWaiters).Scan(&pid)
		return err == nil
	})
	rows, err := s.pool.Query(ctx, `SELECT c.relname::text FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE l.pid = $1 AND l.granted AND c.relkind = 'r' AND c.relnamespace <> 'pg_catalog'::regnamespace ORDER BY 1`, pid)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"job_execution_log", "job_status_trace_log"}; !slices.Equal(tables, want) {
		t.Errorf("waiting for the rollup's lock, the batch holds tables %v, want %v (its traces written, its executions' insert waiting in their trigger)", tables, want)
	}

	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		mustGet(t, s, r.ID)
	}
	got, err := s.ListTraces(ctx, TraceFilter{JobName: "locked", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(trs) {
		t.Errorf("%d traces stored, want %d", len(got), len(trs))
	}
}
