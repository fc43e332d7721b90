package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestUnknownHistoryIsRefused(t *testing.T) {
	if code := run([]string{"-history", "mysql", "-workload", "steady-10"}); code != 2 {
		t.Errorf("-history mysql: exit %d, want 2", code)
	}
}

// -history postgres: one durable PostgreSQL, and a database of its own for each workload's cluster.
func TestPostgresHistoryGivesEachClusterADatabase(t *testing.T) {
	e, err := newEnv(options{history: "postgres", bin: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	if err := e.startHistory(); err != nil {
		t.Fatal(err)
	}
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

// An interrupted run stops its PostgreSQL, which would otherwise outlive it (pg_ctl detaches the postmaster).
func TestInterruptStopsPostgres(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-history", "postgres", "-ejserver=false", "-workload", "steady-10", "-duration", "1m")
	cmd.Env = append(os.Environ(), asMain+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	started := regexp.MustCompile(`PostgreSQL (\d+) in (\S+)`)
	scratch := regexp.MustCompile(`scratch directory (\S+)`)
	var pid int
	var dir, scratchDir string
	lines := bufio.NewScanner(stderr)
	for pid == 0 && lines.Scan() {
		if m := scratch.FindStringSubmatch(lines.Text()); m != nil {
			scratchDir = m[1]
		}
		if m := started.FindStringSubmatch(lines.Text()); m != nil {
			pid, _ = strconv.Atoi(m[1])
			dir = m[2]
		}
	}
	if pid == 0 {
		t.Fatal("ejbench did not say which PostgreSQL it started")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 130 {
		t.Errorf("interrupted ejbench: %v, want exit status 130", err)
	}
	if pgtest.Alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		t.Errorf("postmaster %d outlived the interrupted ejbench", pid)
	}
	for _, d := range []string{dir, scratchDir} {
		if _, err := os.Stat(d); d == "" || !os.IsNotExist(err) {
			t.Errorf("directory %q: %v, want it removed (PostgreSQL's, then ejbench's scratch)", d, err)
		}
	}
}
