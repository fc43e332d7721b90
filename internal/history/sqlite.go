package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history/rollup"
)

// sqliteStore is the history in an SQLite file (WAL): one writer connection, whose transactions begin
// IMMEDIATE (they take the write lock at once, so they never fail half-way on a lock upgrade), and a small
// pool of read-only connections that WAL lets read while the writer writes.
type sqliteStore struct {
	w   *sql.DB
	r   *sql.DB
	log *slog.Logger
	// Full-size multi-row statements, prepared once on the writer connection: modernc parses a statement
	// on every Exec that is not prepared, and parsing dominated writes.
	// prepared are the writes' statements (sqliteStatements), by kind and number of rows.
	prepared map[stmtKey]*sql.Stmt
	// noRollup leaves the rollup alone: BenchmarkWriter's "no-rollup", to measure what the rollup costs.
	noRollup bool
	// frontierKeeper moves the rollup's frontier as the writer writes (rollup_frontier.go).
	frontierKeeper
}

var _ Store = (*sqliteStore)(nil)

// sqliteParams are the connection settings: WAL, wait up to 10 s for a lock another process holds, and
// synchronous=NORMAL (WAL stays consistent; a power cut may lose the last commits, which history can afford).
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=temp_store(MEMORY)"

// sqliteWriterCache is the writer connection's page cache: 32 MB instead of SQLite's 2 MB. A batch of 500
// executions of as many jobs dirties a leaf page at a scattered place of each job-ordered index (five of
// JOB_EXECUTION_LOG's, two of the status traces'): with 2 MB the transaction spilled dirty pages to the WAL
// before its commit (written twice) and read back evicted ones (a pread each), 20-30% of the writer's CPU in
// steady-10k's profile. The readers keep the default.
//
// It also checkpoints the WAL every 10,000 pages (40 MB) instead of every 1,000: a checkpoint copies each
// page the WAL holds once however many commits wrote it, and the pages every commit writes (the B-trees'
// upper levels, the time-ordered indexes' last leaves, the rollup's peer cells) were copied back after every
// few commits (17% of a peer's CPU in steady-10k's profile). The WAL file stays at about that size.
const sqliteWriterCache = "&_pragma=cache_size(-32768)&_pragma=wal_autocheckpoint(10000)"

func openSQLite(ctx context.Context, path string, o options) (*sqliteStore, error) {
	if path == "" {
		return nil, ejserver.Invalid("history", "give an SQLite file path or a postgres:// DSN")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, ejserver.Invalid("history", "the SQLite path %q must not contain '?' or '#'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	w, err := sql.Open("sqlite", path+"?"+sqliteParams+"&_txlock=immediate"+sqliteWriterCache)
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	if err := connectSQLite(ctx, w); err != nil {
		_ = w.Close()
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	s := &sqliteStore{w: w, log: o.logger, frontierKeeper: newFrontierKeeper(o.clock)}
	all, err := migrations("sqlite")
	if err == nil {
		err = s.migrate(ctx, all)
	}
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	s.prepared = make(map[stmtKey]*sql.Stmt)
	for k, q := range sqliteStatements() {
		if s.prepared[k], err = w.PrepareContext(ctx, q); err != nil {
			break
		}
	}
	if err != nil {
		_ = s.Close()
		return nil, sqliteError("prepare", err)
	}
	r, err := sql.Open("sqlite", path+"?"+sqliteParams+"&_pragma=query_only(1)")
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	readers := o.maxConns
	if readers <= 0 {
		readers = 4
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	return s, nil
}

// connectSQLite opens db's first connection, retrying while it is refused as busy. A new connection switches a
// fresh file to WAL (journal_mode in sqliteParams); when several processes open a fresh file at once, the
// switch can meet another connection's lock in a way SQLite treats as a deadlock, and it then answers
// SQLITE_BUSY at once instead of waiting the busy_timeout. Once one switch has committed the file stays in
// WAL, so a retry a few milliseconds later succeeds. The retries end with ctx or after sqliteConnectWait.
func connectSQLite(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, sqliteConnectWait)
	defer cancel()
	backoff := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil || !isSQLiteBusy(err) {
			return sqliteError("connect", err)
		}
		select {
		case <-ctx.Done():
			return sqliteError("connect", err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// sqliteConnectWait bounds connectSQLite's retries: as long as the busy_timeout in sqliteParams.
const sqliteConnectWait = 10 * time.Second

// isSQLiteBusy says whether err is SQLite's SQLITE_BUSY (any extended code).
func isSQLiteBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// migrate applies the pending ones of all (the dialect's migrations, or the first of them when a test builds
// an older schema) in one immediate transaction: another process opening the same file waits for the write
// lock (busy_timeout) and then finds the schema current.
func (s *sqliteStore) migrate(ctx context.Context, all []migration) error {
	fail := func(op string, err error) error { return sqliteError("migrate: "+op, err) }
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL DEFAULT CURRENT_TIMESTAMP)`); err != nil {
		return fail("create schema_migrations", err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fail("read schema_migrations", err)
	}
	var applied []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			return fail("read schema_migrations", err)
		}
		applied = append(applied, v)
	}
	if err := rows.Err(); err != nil {
		return fail("read schema_migrations", err)
	}
	todo, highest := pending(all, applied)
	warnNewer(s.log, "sqlite", highest, all)
	for _, m := range todo {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fail(fmt.Sprintf("apply %04d_%s", m.version, m.name), err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name) VALUES (?, ?)", m.version, m.name); err != nil {
			return fail("record migration", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	for _, m := range todo {
		s.log.Info("history schema migrated", "store", "sqlite", "version", m.version, "migration", m.name)
	}
	return nil
}

// sqliteRowsPerStatement is how many rows one INSERT carries at most (executionColumnCount parameters a row;
// SQLite allows 32766).
const sqliteRowsPerStatement = 100

// sqliteChunk is how many of n rows the next statement carries: 100, or the largest power of two up to 64
// (a batch of 37 rows is three statements of 32, 4 and 1), so that every statement is one prepared when the
// store opens. modernc parses a statement on every Exec that is not prepared, and a peer's batches are
// mostly small (a wave of item ends): each one parsed its own statement of its size.
func sqliteChunk(n int) int {
	if n >= sqliteRowsPerStatement {
		return sqliteRowsPerStatement
	}
	c := 64
	for c > n {
		c /= 2
	}
	return c
}

// stmtKey names a prepared statement: what it writes and for how many rows.
type stmtKey struct {
	what string
	rows int
}

// sqliteStatements are the statements the writer connection prepares when the store opens.
func sqliteStatements() map[stmtKey]string {
	out := map[stmtKey]string{{"stored rows", 1}: sqliteStoredRows, {"fire rows", 1}: sqliteFireRows}
	maps.Copy(out, frontierStatements)
	for n := sqliteRowsPerStatement; n >= 1; n = sqliteChunk(n - 1) {
		out[stmtKey{"executions", n}] = sqliteUpsertExecutions(n) + ` RETURNING id, ` + rollupColumns
		out[stmtKey{"executions uncounted", n}] = sqliteUpsertExecutions(n)
		out[stmtKey{"traces", n}] = sqliteInsertTraces(n)
		if n <= rollupChunk {
			for _, u := range rollupUpserts {
				out[stmtKey{u.table, n}] = u.sql(n)
			}
		}
	}
	return out
}

// sqliteUpsertExecutions returns the upsert of n executions.
func sqliteUpsertExecutions(n int) string {
	return `INSERT INTO JOB_EXECUTION_LOG AS t (` + executionColumns + `) VALUES ` +
		repeatTuple("(?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?, ?, "+
			"?, NULLIF(?, ''), ?, NULLIF(?, ''), ?, ?, NULLIF(?, ''), NULLIF(?, ''), NULLIF(?, ''))", n) +
		` ON CONFLICT (id) DO UPDATE SET ` + executionUpdate + ` WHERE ` + executionWins
}

// countsAny reports whether the frontier f counts a row of the batch recs, as stored before it (by id) or as
// it writes them (an upsert replaces the whole row).
func countsAny(f rollup.Frontier, stored map[string]rollup.Row, recs []ejserver.Execution) bool {
	for _, r := range stored {
		if f.Counted(r) {
			return true
		}
	}
	for _, r := range recs {
		if f.Counted(rollup.Row{Job: r.JobName, Start: micros(r.StartedAt)}) {
			return true
		}
	}
	return false
}

func sqliteInsertTraces(n int) string {
	return `INSERT INTO JOB_STATUS_TRACE_LOG (` + traceColumns + `) VALUES ` +
		repeatTuple("(?, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?)", n) + ` ON CONFLICT (id) DO NOTHING`
}

func repeatTuple(tuple string, n int) string {
	var sb strings.Builder
	sb.Grow(n * (len(tuple) + 2))
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(tuple)
	}
	return sb.String()
}

func (s *sqliteStore) WriteExecutions(ctx context.Context, recs []ejserver.Execution) error {
	if len(recs) == 0 {
		return nil
	}
	return s.inTx(ctx, "write executions", func(tx *sql.Tx) error { return s.writeExecutions(ctx, tx, recs) })
}

// writeExecutions upserts recs in tx, with the rollup's change.
func (s *sqliteStore) writeExecutions(ctx context.Context, tx *sql.Tx, recs []ejserver.Execution) error {
	// Merged, so that no statement names an id twice (SQLite would apply both, in order, which the
	// merge reproduces) and rows are locked in id order as with PostgreSQL.
	recs = mergeExecutions(recs)
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	// the rollup: the stored versions the upsert replaces go, the versions it writes (RETURNING) come
	stored, err := s.storedRollupRows(ctx, tx, ids)
	if err != nil {
		return err
	}
	// the frontier, read once (it moves only in this transaction): the batch's rows behind it change their
	// cells, then it moves on
	f, err := s.frontier(ctx, tx)
	if err != nil {
		return err
	}
	// a batch with no row behind the frontier, stored or written, changes no cell: its upsert returns nothing
	// (at 100,000 jobs every batch but a few: the frontier counts minutes that are over)
	returning := !s.noRollup && countsAny(f, stored, recs)
	upsert := "executions uncounted"
	if returning {
		upsert = "executions"
	}
	var removed, added []rollup.Row
	args := make([]any, 0, executionColumnCount*min(len(recs), sqliteRowsPerStatement))
	for rest := recs; len(rest) > 0; {
		chunk := rest[:sqliteChunk(len(rest))]
		rest = rest[len(chunk):]
		args = args[:0]
		for _, r := range chunk {
			args = append(args, r.ID, r.JobName, r.TaskID, r.Hostname, r.IP, r.ShardingItem,
				string(r.Source), r.FailureCause, r.Success, micros(r.StartedAt), nullMicros(r.CompletedAt),
				r.StatusCode, r.Attempts, r.DurationMs, r.ResponseExcerpt, r.InstanceID, nullMicros(r.ScheduledAt),
				r.ShardingTotalCount, r.Permanent,
				r.Async, r.State, nullInt(r.Progress), r.Message, nullMicros(r.HeartbeatAt),
				nullMicros(r.LeaseExpiresAt), r.Output, r.TraceID, r.ReplayOf)
		}
		stmt := tx.StmtContext(ctx, s.prepared[stmtKey{upsert, len(chunk)}])
		if !returning {
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
			continue
		}
		rows, err := stmt.QueryContext(ctx, args...)
		if err := eachRollupRow(rows, err, true, func(id string, r rollup.Row) {
			added = append(added, r)
			if old, ok := stored[id]; ok {
				removed = append(removed, old) // replaced (the upsert's condition held)
			}
		}); err != nil {
			return err
		}
	}
	if err := s.rollup(ctx, tx, f, removed, added); err != nil {
		return err
	}
	return s.advanceRollup(ctx, tx, f)
}

func (s *sqliteStore) WriteTraces(ctx context.Context, recs []ejserver.StatusTrace) error {
	if len(recs) == 0 {
		return nil
	}
	return s.inTx(ctx, "write traces", func(tx *sql.Tx) error { return s.writeTraces(ctx, tx, recs) })
}

// writeTraces inserts recs in tx.
func (s *sqliteStore) writeTraces(ctx context.Context, tx *sql.Tx, recs []ejserver.StatusTrace) error {
	args := make([]any, 0, 11*min(len(recs), sqliteRowsPerStatement))
	for rest := recs; len(rest) > 0; {
		chunk := rest[:sqliteChunk(len(rest))]
		rest = rest[len(chunk):]
		args = args[:0]
		for _, r := range chunk {
			r = sanitizeTrace(r)
			args = append(args, r.ID, r.JobName, r.OriginalTaskID, r.TaskID, r.InstanceID,
				string(r.Source), r.ExecutionType, r.ShardingItems, string(r.State), r.Message,
				micros(r.CreationTime))
		}
		if _, err := tx.StmtContext(ctx, s.prepared[stmtKey{"traces", len(chunk)}]).ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// inTx runs fn in a write transaction and commits it.
func (s *sqliteStore) inTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return sqliteError(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return sqliteError(op, err)
	}
	return sqliteError(op, tx.Commit())
}

func (s *sqliteStore) ListExecutions(ctx context.Context, f ExecutionFilter) (ExecutionPage, error) {
	c, err := f.check()
	if err != nil {
		return ExecutionPage{}, err
	}
	q := listExecutions(sqliteDialect, c)
	items, err := s.queryExecutions(ctx, q.String(), q.args...)
	if err != nil {
		return ExecutionPage{}, sqliteError("list executions", err)
	}
	return page(items, c.limit), nil
}

func (s *sqliteStore) GetExecution(ctx context.Context, id string) (ejserver.Execution, error) {
	items, err := s.queryExecutions(ctx, "SELECT "+executionSelect+" FROM JOB_EXECUTION_LOG WHERE id = ?", id)
	if err != nil {
		return ejserver.Execution{}, sqliteError("get execution", err)
	}
	if len(items) == 0 {
		return ejserver.Execution{}, notFound(id)
	}
	return items[0], nil
}

func (s *sqliteStore) queryExecutions(ctx context.Context, query string, args ...any) ([]ejserver.Execution, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []ejserver.Execution
	for rows.Next() {
		var (
			e                                        ejserver.Execution
			start                                    int64
			completed, scheduled, heartbeat, expires sql.NullInt64
			progress                                 sql.Null[int]
		)
		if err := rows.Scan(&e.ID, &e.JobName, &e.TaskID, &e.Hostname, &e.IP, &e.ShardingItem, &e.Source,
			&e.FailureCause, &e.Success, &start, &completed, &e.StatusCode, &e.Attempts, &e.DurationMs,
			&e.ResponseExcerpt, &e.InstanceID, &scheduled, &e.ShardingTotalCount, &e.Permanent,
			&e.Async, &e.State, &progress, &e.Message, &heartbeat, &expires, &e.Output, &e.TraceID, &e.ReplayOf); err != nil {
			return nil, err
		}
		e.StartedAt = fromMicros(start)
		e.CompletedAt = nullFromMicros(completed)
		e.ScheduledAt = nullFromMicros(scheduled)
		e.HeartbeatAt = nullFromMicros(heartbeat)
		e.LeaseExpiresAt = nullFromMicros(expires)
		if progress.Valid {
			e.Progress = &progress.V
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// sqliteCollect runs q and scans each row with scan: the row loop of the SQLite lists, as pgx.CollectRows is
// PostgreSQL's. Errors are wrapped as op.
func sqliteCollect[T any](ctx context.Context, s *sqliteStore, op string, q *query, scan func(*sql.Rows) (T, error)) ([]T, error) {
	rows, err := s.r.QueryContext(ctx, q.String(), q.args...)
	if err != nil {
		return nil, sqliteError(op, err)
	}
	defer func() { _ = rows.Close() }()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, sqliteError(op, err)
		}
		out = append(out, v)
	}
	return out, sqliteError(op, rows.Err())
}

func (s *sqliteStore) ListTraces(ctx context.Context, f TraceFilter) ([]ejserver.StatusTrace, error) {
	limit, err := f.check()
	if err != nil {
		return nil, err
	}
	return sqliteCollect(ctx, s, "list traces", listTraces(sqliteDialect, f, limit), func(rows *sql.Rows) (ejserver.StatusTrace, error) {
		var (
			t       ejserver.StatusTrace
			created int64
		)
		err := rows.Scan(&t.ID, &t.JobName, &t.OriginalTaskID, &t.TaskID, &t.InstanceID, &t.Source,
			&t.ExecutionType, &t.ShardingItems, &t.State, &t.Message, &created)
		t.CreationTime = fromMicros(created)
		return t, err
	})
}

// The job list's reads (CountsSince, LastExecutions) of the jobs listed in a JSON array: their outcomes counted
// since a time, and each job's newest row, one probe of the job's end of job_execution_log_job_start. Both read
// that index alone (0019 keeps is_success and complete_time in it; TestJobListReadsTheJobIndexAlone).
const (
	sqliteCountsSince = `SELECT job_name,
		SUM(complete_time IS NOT NULL AND is_success),
		SUM(complete_time IS NOT NULL AND NOT is_success),
		SUM(complete_time IS NULL)
		FROM JOB_EXECUTION_LOG WHERE job_name IN (SELECT value FROM json_each(?)) AND start_time >= ?
		GROUP BY job_name`
	sqliteLastExecutions = `SELECT ` + executionSelect + ` FROM JOB_EXECUTION_LOG WHERE rowid IN (
		SELECT (SELECT e.rowid FROM JOB_EXECUTION_LOG AS e WHERE e.job_name = j.value
			ORDER BY e.start_time DESC, e.id DESC LIMIT 1)
		FROM json_each(?) AS j)`
)

func (s *sqliteStore) CountsSince(ctx context.Context, jobs []string, since time.Time) (map[string]Counts, error) {
	out := make(map[string]Counts, len(jobs))
	if len(jobs) == 0 {
		return out, nil
	}
	for _, j := range jobs {
		out[j] = Counts{}
	}
	names, err := json.Marshal(jobs)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, sqliteCountsSince, string(names), micros(normalize(since)))
	if err != nil {
		return nil, sqliteError("count executions", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			job string
			c   Counts
		)
		if err := rows.Scan(&job, &c.Success, &c.Failure, &c.Running); err != nil {
			return nil, sqliteError("count executions", err)
		}
		out[job] = c
	}
	return out, sqliteError("count executions", rows.Err())
}

func (s *sqliteStore) LastExecutions(ctx context.Context, jobs []string) (map[string]ejserver.Execution, error) {
	out := make(map[string]ejserver.Execution, len(jobs))
	if len(jobs) == 0 {
		return out, nil
	}
	names, err := json.Marshal(jobs)
	if err != nil {
		return nil, err
	}
	items, err := s.queryExecutions(ctx, sqliteLastExecutions, string(names))
	if err != nil {
		return nil, sqliteError("last executions", err)
	}
	for _, e := range items {
		out[e.JobName] = e
	}
	return out, nil
}

func (s *sqliteStore) Prune(ctx context.Context, before time.Time, batch int) (int64, error) {
	if err := checkBatch(batch); err != nil {
		return 0, err
	}
	var total int64
	err := s.inTx(ctx, "prune", func(tx *sql.Tx) error {
		// the executions, with the rollup's change (their cells lose them)
		rows, err := tx.QueryContext(ctx, `DELETE FROM JOB_EXECUTION_LOG WHERE rowid IN
			(SELECT rowid FROM JOB_EXECUTION_LOG WHERE start_time < ? ORDER BY start_time LIMIT ?)
			RETURNING `+rollupColumns, micros(normalize(before)), batch)
		var removed []rollup.Row
		if err := eachRollupRow(rows, err, false, func(_ string, r rollup.Row) { removed = append(removed, r) }); err != nil {
			return err
		}
		total += int64(len(removed))
		f, err := s.frontier(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.rollup(ctx, tx, f, removed, nil); err != nil {
			return err
		}
		for _, stmt := range []string{
			`DELETE FROM JOB_STATUS_TRACE_LOG WHERE rowid IN
				(SELECT rowid FROM JOB_STATUS_TRACE_LOG WHERE creation_time < ? ORDER BY creation_time LIMIT ?)`,
			`DELETE FROM NOTIFICATION_LOG WHERE rowid IN
				(SELECT rowid FROM NOTIFICATION_LOG WHERE finished_at < ? ORDER BY finished_at LIMIT ?)`,
			`DELETE FROM AUDIT_LOG WHERE rowid IN
				(SELECT rowid FROM AUDIT_LOG WHERE at < ? ORDER BY at LIMIT ?)`,
			`DELETE FROM WORKFLOW_RUNS WHERE rowid IN
				(SELECT rowid FROM WORKFLOW_RUNS WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
		} {
			res, err := tx.ExecContext(ctx, stmt, micros(normalize(before)), batch)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += n
		}
		// the rollup's cells the deletes emptied (not counted)
		for _, p := range pruneRollup {
			if _, err := tx.ExecContext(ctx, p.stmt, rollupPeriod(before, p.unit)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

func (s *sqliteStore) Ping(ctx context.Context) error {
	return sqliteError("ping", s.r.PingContext(ctx))
}

func (s *sqliteStore) Close() error {
	var errs []error
	for _, st := range s.prepared {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	return errors.Join(errs...)
}

func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}

// nullFromMicros is the inverse of nullMicros.
func nullFromMicros(us sql.NullInt64) time.Time {
	if !us.Valid {
		return time.Time{}
	}
	return fromMicros(us.Int64)
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// sqliteError classifies an SQLite error: a lock held too long, I/O trouble or a full disk are transient;
// a constraint or a malformed statement is not.
func sqliteError(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_IOERR,
			sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
			return storeError(op, err, true)
		}
		return storeError(op, err, false)
	}
	return storeError(op, err, !errors.Is(err, context.Canceled))
}
