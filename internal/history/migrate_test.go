package history

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ejserver/ejserver"
)

// TestConcurrentOpenMigratesOnce opens one fresh database from several goroutines at once, as peers starting
// together do: every Open succeeds, each migration is applied once (one log line, one schema_migrations row),
// and the stores work.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var dsn string
			switch kind {
			case "sqlite":
				dsn = filepath.Join(t.TempDir(), "history.db")
			case "postgres":
				dsn = pg.NewDatabase(t)
			}
			all, err := migrations(kind)
			if err != nil {
				t.Fatal(err)
			}
			rec := newLogRecorder()
			const peers = 4
			stores := make([]Store, peers)
			errs := make([]error, peers)
			var wg sync.WaitGroup
			for i := range peers {
				wg.Go(func() {
					stores[i], errs[i] = Open(testCtx(t), dsn, WithLogger(slog.New(rec)))
				})
			}
			wg.Wait()
			for i := range peers {
				if errs[i] != nil {
					t.Fatalf("Open %d: %v", i, errs[i])
				}
				t.Cleanup(func() { _ = stores[i].Close() })
			}
			if n := rec.count("history schema migrated"); n != len(all) {
				t.Errorf("%d migrations logged, want %d", n, len(all))
			}
			if n := countMigrations(t, kind, dsn); n != len(all) {
				t.Errorf("schema_migrations has %d rows, want %d", n, len(all))
			}
			e := newExec("m", 0, t0)
			mustWrite(t, stores[0], e)
			for i, s := range stores {
				if got := mustGet(t, s, e.ID); got.ID != e.ID {
					t.Errorf("store %d read %+v", i, got)
				}
			}

			// Opening again applies nothing.
			s, err := Open(testCtx(t), dsn, WithLogger(slog.New(rec)))
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			if n := rec.count("history schema migrated"); n != len(all) {
				t.Errorf("reopening migrated again: %d migrations logged, want %d", n, len(all))
			}
		})
	}
}

func countMigrations(t *testing.T, kind, dsn string) int {
	t.Helper()
	ctx := testCtx(t)
	var n int
	switch kind {
	case "sqlite":
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
			t.Fatal(err)
		}
	case "postgres":
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func TestMigrationFiles(t *testing.T) {
	t.Parallel()
	// Both dialects have the same versions, so a peer on either store has the same columns.
	sq, err := migrations("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	pq, err := migrations("postgres")
	if err != nil {
		t.Fatal(err)
	}
	if len(sq) == 0 || len(sq) != len(pq) {
		t.Fatalf("sqlite has %d migrations, postgres %d", len(sq), len(pq))
	}
	for i := range sq {
		if sq[i].version != pq[i].version || sq[i].name != pq[i].name {
			t.Errorf("migration %d: sqlite %04d_%s, postgres %04d_%s", i, sq[i].version, sq[i].name, pq[i].version, pq[i].name)
		}
	}
}

func TestOpenRejectsBadPaths(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"", "/tmp/x.db?mode=ro"} {
		if _, err := Open(testCtx(t), dsn); err == nil {
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
}

// TestUpgradeFromVersion1 opens a database of schema version 1 holding rows (written as a version-1 peer
// writes them), lets Open migrate it, and reads every row back unchanged, with none of the accepted items'
// fields. The migrated rows then take the new records under the new rule, and a peer still on version 1 can
// go on writing its columns.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dsn := newDSN(t, kind)
			migrateTo(t, kind, dsn, 1)
			ended := newExec("old", 0, t0)
			failure := failed(newExec("old", 1, t0.Add(time.Second)), 500)
			failure.Permanent, failure.Source = true, ejserver.SourceFailover
			run := running(newExec("old", 2, t0.Add(2*time.Second)))
			run.ScheduledAt = time.Time{}
			v1 := []ejserver.Execution{ended, failure, run}
			insertV1(t, kind, dsn, v1...)

			rec := newLogRecorder()
			s := openDSN(t, dsn, WithLogger(slog.New(rec)))
			all, err := migrations(kind) // the dialects have the same versions
			if err != nil {
				t.Fatal(err)
			}
			if n := rec.count("history schema migrated"); n != len(all)-1 {
				t.Errorf("%d migrations logged, want %d (every version after 1)", n, len(all)-1)
			}
			if n := countMigrations(t, kind, dsn); n != len(all) {
				t.Errorf("schema_migrations has %d rows, want %d", n, len(all))
			}
			for _, e := range v1 {
				if got, want := mustGet(t, s, e.ID), sanitizeExecution(e); !reflect.DeepEqual(got, want) {
					t.Errorf("after the upgrade\n got %+v\nwant %+v", got, want)
				}
			}
			p, err := s.ListExecutions(testCtx(t), ExecutionFilter{JobName: "old"})
			if got, want := ids(p.Items), []string{run.ID, failure.ID, ended.ID}; err != nil || !slices.Equal(got, want) {
				t.Errorf("executions after the upgrade: %v, %v; want %v", got, err, want)
			}

			// The old running row has no heartbeat: the item's first one replaces it. The old end stays.
			hb := accepted(run, t0.Add(time.Minute), 5)
			mustWrite(t, s, hb, running(ended))
			if got, want := mustGet(t, s, run.ID), sanitizeExecution(hb); !reflect.DeepEqual(got, want) {
				t.Errorf("heartbeat on an old row\n got %+v\nwant %+v", got, want)
			}
			if got, want := mustGet(t, s, ended.ID), sanitizeExecution(ended); !reflect.DeepEqual(got, want) {
				t.Errorf("a start record replaced an old end\n got %+v\nwant %+v", got, want)
			}

			// A peer not upgraded yet writes version 1's columns; its rows read as synchronous items.
			late := newExec("old", 3, t0.Add(time.Hour))
			insertV1(t, kind, dsn, late)
			if got, want := mustGet(t, s, late.ID), sanitizeExecution(late); !reflect.DeepEqual(got, want) {
				t.Errorf("a version-1 peer's row\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// migrateTo builds the schema of version v on dsn through the stores' own migrate.
func migrateTo(t *testing.T, kind, dsn string, v int) {
	t.Helper()
	ctx := testCtx(t)
	all, err := migrations(kind)
	if err != nil {
		t.Fatal(err)
	}
	if v > len(all) || all[v-1].version != v {
		t.Fatalf("no %s migration %d", kind, v)
	}
	switch kind {
	case "sqlite":
		w, openErr := sql.Open("sqlite", dsn+"?"+sqliteParams+"&_txlock=immediate")
		if openErr != nil {
			t.Fatal(openErr)
		}
		defer func() { _ = w.Close() }()
		w.SetMaxOpenConns(1)
		err = (&sqliteStore{w: w, log: discardLogger()}).migrate(ctx, all[:v])
	case "postgres":
		pool, openErr := pgxpool.New(ctx, dsn)
		if openErr != nil {
			t.Fatal(openErr)
		}
		defer pool.Close()
		err = (&postgresStore{pool: pool, log: discardLogger()}).migrate(ctx, all[:v])
	}
	if err != nil {
		t.Fatal(err)
	}
}

// v1Columns are JOB_EXECUTION_LOG's columns in schema version 1.
const v1Columns = `id, job_name, task_id, hostname, ip, sharding_item, execution_source, failure_cause, is_success, ` +
	`start_time, complete_time, status_code, attempts, duration_ms, response_excerpt, instance_id, scheduled_at, ` +
	`sharding_total_count, permanent`

// insertV1 inserts recs as a version-1 peer does: its columns only, "" and zero times as NULL.
func insertV1(t *testing.T, kind, dsn string, recs ...ejserver.Execution) {
	t.Helper()
	ctx := testCtx(t)
	d := sqliteDialect
	if kind == "postgres" {
		d = postgresDialect
	}
	text := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	when := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return d.timeArg(t)
	}
	var args []any
	var tuples []string
	for _, r := range recs {
		q := &query{d: d, args: args}
		tuples = append(tuples, "("+strings.Join([]string{q.arg(r.ID), q.arg(r.JobName), q.arg(r.TaskID),
			q.arg(r.Hostname), q.arg(r.IP), q.arg(r.ShardingItem), q.arg(string(r.Source)), q.arg(text(r.FailureCause)),
			q.arg(r.Success), q.arg(when(r.StartedAt)), q.arg(when(r.CompletedAt)), q.arg(r.StatusCode),
			q.arg(r.Attempts), q.arg(r.DurationMs), q.arg(text(r.ResponseExcerpt)), q.arg(r.InstanceID),
			q.arg(when(r.ScheduledAt)), q.arg(r.ShardingTotalCount), q.arg(r.Permanent)}, ", ")+")")
		args = q.args
	}
	stmt := "INSERT INTO JOB_EXECUTION_LOG (" + v1Columns + ") VALUES " + strings.Join(tuples, ", ")
	var err error
	switch kind {
	case "sqlite":
		var db *sql.DB
		if db, err = sql.Open("sqlite", dsn); err == nil {
			_, err = db.ExecContext(ctx, stmt, args...)
			_ = db.Close()
		}
	case "postgres":
		var conn *pgx.Conn
		if conn, err = pgx.Connect(ctx, dsn); err == nil {
			_, err = conn.Exec(ctx, stmt, args...)
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
