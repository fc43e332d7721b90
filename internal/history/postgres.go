package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ejserver/ejserver"
)

// postgresStore is the history in PostgreSQL, shared by every peer of a cluster.
type postgresStore struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// frontierKeeper moves the rollup's frontier as executions are written (postgres_frontier.go), on
	// advancer's goroutine (postgres_advancer.go).
	frontierKeeper
	advancer *pgAdvancer
}

var _ Store = (*postgresStore)(nil)

func openPostgres(ctx context.Context, dsn string, o options) (*postgresStore, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message redacts the password.
		return nil, fmt.Errorf("history: parse the PostgreSQL DSN: %w", err)
	}
	switch {
	case o.maxConns > 0:
		cfg.MaxConns = int32(o.maxConns)
	case cfg.MaxConns > 8:
		cfg.MaxConns = 8
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A peer must find out quickly that the database is gone: the Writer then keeps its batch and retries.
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("history: open PostgreSQL: %w", err)
	}
	s := &postgresStore{pool: pool, log: o.logger, frontierKeeper: newFrontierKeeper(o.clock)}
	all, err := migrations("postgres")
	if err == nil {
		err = s.migrate(ctx, all)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.advancer = startPGAdvancer(s.advanceFromStored, s.log)
	return s, nil
}

// migrate applies the pending ones of all (the dialect's migrations, or the first of them when a test builds
// an older schema) in one transaction that holds an advisory lock, so peers starting together wait for each
// other and the first one migrates.
func (s *postgresStore) migrate(ctx context.Context, all []migration) error {
	fail := func(op string, err error) error { return pgError("migrate: "+op, err) }
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail("begin", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey); err != nil {
		return fail("lock", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER     PRIMARY KEY,
		name       TEXT        NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fail("create schema_migrations", err)
	}
	rows, err := tx.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fail("read schema_migrations", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return fail("read schema_migrations", err)
	}
	todo, highest := pending(all, applied)
	warnNewer(s.log, "postgres", highest, all)
	for _, m := range todo {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fail(fmt.Sprintf("apply %04d_%s", m.version, m.name), err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fail("record migration", err)
		}
	}
	if len(applied) == 0 && slices.ContainsFunc(todo, func(m migration) bool { return m.version == pgFrontierMigration }) {
		if _, err := tx.Exec(ctx, pgFrontierFresh); err != nil {
			return fail("start the rollup's frontier", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fail("commit", err)
	}
	for _, m := range todo {
		s.log.Info("history schema migrated", "store", "postgres", "version", m.version, "migration", m.name)
	}
	return nil
}

const pgUpsertExecutions = `INSERT INTO JOB_EXECUTION_LOG AS t (` + executionColumns + `)
SELECT u.id, u.job_name, u.task_id, u.hostname, u.ip, u.sharding_item, u.execution_source,
       NULLIF(u.failure_cause, ''), u.is_success, u.start_time, u.complete_time, u.status_code, u.attempts,
       u.duration_ms, NULLIF(u.response_excerpt, ''), u.instance_id, u.scheduled_at, u.sharding_total_count, u.permanent,
       u.is_async, NULLIF(u.state, ''), u.progress, NULLIF(u.message, ''), u.heartbeat_at, u.lease_expires_at,
       NULLIF(u.output, ''), NULLIF(u.trace_id, ''), NULLIF(u.replay_of, '')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[],
            $9::bool[], $10::timestamptz[], $11::timestamptz[], $12::int[], $13::int[], $14::bigint[], $15::text[],
            $16::text[], $17::timestamptz[], $18::int[], $19::bool[],
            $20::bool[], $21::text[], $22::int[], $23::text[], $24::timestamptz[], $25::timestamptz[], $26::text[], $27::text[], $28::text[])
     AS u(` + executionColumns + `)
ON CONFLICT (id) DO UPDATE SET ` + executionUpdate + `
WHERE ` + executionWins

func (s *postgresStore) WriteExecutions(ctx context.Context, recs []ejserver.Execution) error {
	if len(recs) == 0 {
		return nil
	}
	return s.WriteBatch(ctx, recs, nil) // the rows in one round trip, then the rollup's frontier moved
}

// executionArgs are pgUpsertExecutions' arguments for recs (merged: no statement names an id twice).
func executionArgs(recs []ejserver.Execution) []any {
	recs = mergeExecutions(recs)
	n := len(recs)
	var (
		ids, jobs, tasks, hosts, ips, sources, causes = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		excerpts, instances           = make([]string, n), make([]string, n)
		items, codes, attempts, total = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		durations                     = make([]int64, n)
		success, permanent            = make([]bool, n), make([]bool, n)
		starts                        = make([]time.Time, n)
		completes, scheduled          = make([]*time.Time, n), make([]*time.Time, n)
		async                         = make([]bool, n)
		states, messages, outputs     = make([]string, n), make([]string, n), make([]string, n)
		traceIDs, replayOf            = make([]string, n), make([]string, n)
		progress                      = make([]*int32, n)
		heartbeats, expiries          = make([]*time.Time, n), make([]*time.Time, n)
	)
	for i, r := range recs {
		ids[i], jobs[i], tasks[i], hosts[i], ips[i] = r.ID, r.JobName, r.TaskID, r.Hostname, r.IP
		sources[i], causes[i], excerpts[i], instances[i] = string(r.Source), r.FailureCause, r.ResponseExcerpt, r.InstanceID
		items[i], codes[i], attempts[i], total[i] = int32(r.ShardingItem), int32(r.StatusCode), int32(r.Attempts), int32(r.ShardingTotalCount)
		durations[i], success[i], permanent[i], starts[i] = r.DurationMs, r.Success, r.Permanent, r.StartedAt
		completes[i], scheduled[i] = timePtr(r.CompletedAt), timePtr(r.ScheduledAt)
		async[i], states[i], messages[i], outputs[i], traceIDs[i] = r.Async, r.State, r.Message, r.Output, r.TraceID
		replayOf[i] = r.ReplayOf
		heartbeats[i], expiries[i] = timePtr(r.HeartbeatAt), timePtr(r.LeaseExpiresAt)
		if r.Progress != nil {
			p := int32(*r.Progress)
			progress[i] = &p
		}
	}
	return []any{ids, jobs, tasks, hosts, ips, items, sources, causes, success,
		starts, completes, codes, attempts, durations, excerpts, instances, scheduled, total, permanent,
		async, states, progress, messages, heartbeats, expiries, outputs, traceIDs, replayOf}
}

const pgInsertTraces = `INSERT INTO JOB_STATUS_TRACE_LOG (` + traceColumns + `)
SELECT u.id, u.job_name, u.original_task_id, u.task_id, u.slave_id, u.source, u.execution_type, u.sharding_item,
       u.state, NULLIF(u.message, ''), u.creation_time
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
            $9::text[], $10::text[], $11::timestamptz[])
     AS u(` + traceColumns + `)
ON CONFLICT (id) DO NOTHING`

func (s *postgresStore) WriteTraces(ctx context.Context, recs []ejserver.StatusTrace) error {
	if len(recs) == 0 {
		return nil
	}
	return pgError("write traces", insertTraces(ctx, s.pool, recs)) // one statement: its own transaction
}

// pgExecer runs a statement: the pool (a transaction of its own) or a transaction.
type pgExecer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertTraces inserts recs (a trace stored already is left as it is) with q.
func insertTraces(ctx context.Context, q pgExecer, recs []ejserver.StatusTrace) error {
	_, err := q.Exec(ctx, pgInsertTraces, traceArgs(recs)...)
	return err
}

// traceArgs are pgInsertTraces' arguments for recs.
func traceArgs(recs []ejserver.StatusTrace) []any {
	n := len(recs)
	cols := make([][]string, 10)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	times := make([]time.Time, n)
	for i, r := range recs {
		r = sanitizeTrace(r)
		for c, v := range []string{r.ID, r.JobName, r.OriginalTaskID, r.TaskID, r.InstanceID, string(r.Source),
			r.ExecutionType, r.ShardingItems, string(r.State), r.Message} {
			cols[c][i] = v
		}
		times[i] = r.CreationTime
	}
	return []any{cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8], cols[9], times}
}

func (s *postgresStore) ListExecutions(ctx context.Context, f ExecutionFilter) (ExecutionPage, error) {
	c, err := f.check()
	if err != nil {
		return ExecutionPage{}, err
	}
	q := listExecutions(postgresDialect, c)
	rows, err := s.pool.Query(ctx, q.String(), q.args...)
	if err != nil {
		return ExecutionPage{}, pgError("list executions", err)
	}
	items, err := pgx.CollectRows(rows, scanPGExecution)
	if err != nil {
		return ExecutionPage{}, pgError("list executions", err)
	}
	return page(items, c.limit), nil
}

func (s *postgresStore) GetExecution(ctx context.Context, id string) (ejserver.Execution, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+executionSelect+" FROM JOB_EXECUTION_LOG WHERE id = $1", id)
	if err != nil {
		return ejserver.Execution{}, pgError("get execution", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanPGExecution)
	if errors.Is(err, pgx.ErrNoRows) {
		return ejserver.Execution{}, notFound(id)
	}
	return e, pgError("get execution", err)
}

func (s *postgresStore) ListTraces(ctx context.Context, f TraceFilter) ([]ejserver.StatusTrace, error) {
	limit, err := f.check()
	if err != nil {
		return nil, err
	}
	q := listTraces(postgresDialect, f, limit)
	rows, err := s.pool.Query(ctx, q.String(), q.args...)
	if err != nil {
		return nil, pgError("list traces", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ejserver.StatusTrace, error) {
		var t ejserver.StatusTrace
		err := row.Scan(&t.ID, &t.JobName, &t.OriginalTaskID, &t.TaskID, &t.InstanceID, &t.Source,
			&t.ExecutionType, &t.ShardingItems, &t.State, &t.Message, &t.CreationTime)
		t.CreationTime = t.CreationTime.UTC()
		return t, err
	})
	return out, pgError("list traces", err)
}

func (s *postgresStore) CountsSince(ctx context.Context, jobs []string, since time.Time) (map[string]Counts, error) {
	out := make(map[string]Counts, len(jobs))
	if len(jobs) == 0 {
		return out, nil
	}
	for _, j := range jobs {
		out[j] = Counts{}
	}
	rows, err := s.pool.Query(ctx, `SELECT job_name,
		count(*) FILTER (WHERE complete_time IS NOT NULL AND is_success),
		count(*) FILTER (WHERE complete_time IS NOT NULL AND NOT is_success),
		count(*) FILTER (WHERE complete_time IS NULL)
		FROM JOB_EXECUTION_LOG WHERE job_name = ANY($1) AND start_time >= $2 GROUP BY job_name`,
		jobs, normalize(since))
	if err != nil {
		return nil, pgError("count executions", err)
	}
	var (
		job string
		c   Counts
	)
	_, err = pgx.ForEachRow(rows, []any{&job, &c.Success, &c.Failure, &c.Running}, func() error {
		out[job] = c
		return nil
	})
	if err != nil {
		return nil, pgError("count executions", err)
	}
	return out, nil
}

func (s *postgresStore) LastExecutions(ctx context.Context, jobs []string) (map[string]ejserver.Execution, error) {
	out := make(map[string]ejserver.Execution, len(jobs))
	if len(jobs) == 0 {
		return out, nil
	}
	// One index probe per job, newest first.
	rows, err := s.pool.Query(ctx, `SELECT e.* FROM unnest($1::text[]) AS j(name)
		CROSS JOIN LATERAL (SELECT `+executionSelect+` FROM JOB_EXECUTION_LOG
			WHERE job_name = j.name ORDER BY start_time DESC, id DESC LIMIT 1) AS e`, jobs)
	if err != nil {
		return nil, pgError("last executions", err)
	}
	items, err := pgx.CollectRows(rows, scanPGExecution)
	if err != nil {
		return nil, pgError("last executions", err)
	}
	for _, e := range items {
		out[e.JobName] = e
	}
	return out, nil
}

func (s *postgresStore) Prune(ctx context.Context, before time.Time, batch int) (int64, error) {
	if err := checkBatch(batch); err != nil {
		return 0, err
	}
	// SKIP LOCKED: peers pruning at the same time take different rows instead of waiting on each other.
	var total int64
	for _, stmt := range []string{
		`WITH doomed AS (SELECT id FROM JOB_EXECUTION_LOG WHERE start_time < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
		 DELETE FROM JOB_EXECUTION_LOG t USING doomed WHERE t.id = doomed.id`,
		`WITH doomed AS (SELECT id FROM JOB_STATUS_TRACE_LOG WHERE creation_time < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
		 DELETE FROM JOB_STATUS_TRACE_LOG t USING doomed WHERE t.id = doomed.id`,
		`WITH doomed AS (SELECT id FROM NOTIFICATION_LOG WHERE finished_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
		 DELETE FROM NOTIFICATION_LOG t USING doomed WHERE t.id = doomed.id`,
		`WITH doomed AS (SELECT id FROM AUDIT_LOG WHERE at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
		 DELETE FROM AUDIT_LOG t USING doomed WHERE t.id = doomed.id`,
		`WITH doomed AS (SELECT id FROM WORKFLOW_RUNS WHERE created_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
		 DELETE FROM WORKFLOW_RUNS t USING doomed WHERE t.id = doomed.id`,
	} {
		tag, err := s.pool.Exec(ctx, stmt, normalize(before), batch)
		if err != nil {
			return total, pgError("prune", err)
		}
		total += tag.RowsAffected()
	}
	// the rollup's cells the deletes emptied (not counted: the triggers keep the others)
	for _, p := range pruneRollup {
		if _, err := s.pool.Exec(ctx, strings.Replace(p.stmt, "?", "$1", 1), rollupPeriod(before, p.unit)); err != nil {
			return total, pgError("prune", err)
		}
	}
	return total, nil
}

func (s *postgresStore) Ping(ctx context.Context) error {
	return pgError("ping", s.pool.Ping(ctx))
}

func (s *postgresStore) Close() error {
	s.advancer.close()
	s.pool.Close()
	return nil
}

func scanPGExecution(row pgx.CollectableRow) (ejserver.Execution, error) {
	var (
		e                                        ejserver.Execution
		completed, scheduled, heartbeat, expires *time.Time
	)
	err := row.Scan(&e.ID, &e.JobName, &e.TaskID, &e.Hostname, &e.IP, &e.ShardingItem, &e.Source,
		&e.FailureCause, &e.Success, &e.StartedAt, &completed, &e.StatusCode, &e.Attempts, &e.DurationMs,
		&e.ResponseExcerpt, &e.InstanceID, &scheduled, &e.ShardingTotalCount, &e.Permanent,
		&e.Async, &e.State, &e.Progress, &e.Message, &heartbeat, &expires, &e.Output, &e.TraceID, &e.ReplayOf)
	e.StartedAt = e.StartedAt.UTC()
	e.CompletedAt, e.ScheduledAt = utcOrZero(completed), utcOrZero(scheduled)
	e.HeartbeatAt, e.LeaseExpiresAt = utcOrZero(heartbeat), utcOrZero(expires)
	return e, err
}

func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// pgError classifies a pgx error: connection failures and the server's "try again" classes (08 connection,
// 40 rollback/deadlock, 53 resources, 57 operator intervention such as a shutdown, 58 system) are transient.
func pgError(op string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		transient := false
		switch pgErr.Code[:2] {
		case "08", "40", "53", "57", "58":
			transient = true
		}
		return storeError(op, err, transient || pgErr.Code == "55P03")
	}
	return storeError(op, err, !errors.Is(err, context.Canceled))
}

// warnNewer logs when another peer has migrated the schema past what this binary knows: it goes on, since
// migrations are additive, but an operator should finish the upgrade.
func warnNewer(log *slog.Logger, store string, highest int, all []migration) {
	if len(all) > 0 && highest > all[len(all)-1].version {
		log.Warn("history schema is newer than this ejserver; finish upgrading the peers", "store", store,
			"version", highest, "known", all[len(all)-1].version)
	}
}
