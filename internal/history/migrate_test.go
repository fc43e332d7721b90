package history

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestConcurrentOpenMigratesOnce opens one fresh database from several goroutines at once, as peers starting
// together do: every Open succeeds, each migration is applied once (one log line, one schema_migrations row),
// and the stores work.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
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
	for _, dsn := range []string{"", "/tmp/x.db?mode=ro"} {
		if _, err := Open(testCtx(t), dsn); err == nil {
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
}
