package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestUnknownHistoryIsRefused(t *testing.T) {
	if code := run([]string{"-history", "mysql", "-workload", "steady-10"}); code != 2 {
		t.Errorf("-history mysql: exit %d, want 2", code)
	}
}

// -history postgres: one PostgreSQL, a database of its own for each workload's cluster, its CPU measured.
func TestPostgresHistoryGivesEachClusterADatabase(t *testing.T) {
	e, err := newEnv(options{history: "postgres", bin: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var dsns []string
	for range 2 {
		dsn, err := e.historyDatabase()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connect %s: %v", dsn, err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE mine (n int)"); err != nil {
			t.Errorf("%s: %v (a database shared with another cluster?)", dsn, err)
		}
		_ = conn.Close(ctx)
		dsns = append(dsns, dsn)
	}
	if dsns[0] == dsns[1] {
		t.Errorf("two clusters share %s", dsns[0])
	}
	var fsync string
	conn, err := pgx.Connect(ctx, dsns[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil || fsync != "on" {
		t.Errorf("fsync = %q (%v): the benchmark's PostgreSQL must run durable", fsync, err)
	}
	sqlite, err := (&env{}).historyDatabase()
	if sqlite != "" || err != nil {
		t.Errorf("SQLite: history database %q, %v; want none", sqlite, err)
	}
}
