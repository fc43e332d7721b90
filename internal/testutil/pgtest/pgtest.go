// Package pgtest gives tests a real PostgreSQL: a throwaway cluster that it initialises in a temporary
// directory and runs on a free loopback port, or the server named by EJ_TEST_PG_DSN.
//
// A package's TestMain starts one cluster with FromEnvOrStart and closes it after m.Run; each test takes a
// database of its own with NewDatabase. Tests that must stop and restart PostgreSQL (outages) start a private
// cluster with Start, which never uses EJ_TEST_PG_DSN.
//
// The cluster is run as the Debian packages install it (/usr/lib/postgresql/15/bin). As root, initdb and
// pg_ctl run as the postgres user through su, and the temporary directory is handed to that user. The
// postmaster is stopped by its PID with SIGINT (PostgreSQL's fast shutdown). Missing binaries are an error,
// not a skip: `make test` installs them (apt-get install -y postgresql).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable that points the tests at an existing PostgreSQL instead of a
// throwaway cluster: a postgres:// URL of a role that may CREATE DATABASE.
const EnvDSN = "EJ_TEST_PG_DSN"

// BinDir is where Debian's postgresql-15 package installs the server binaries.
const BinDir = "/usr/lib/postgresql/15/bin"

// errMissing explains how to get PostgreSQL when its binaries are absent.
var errMissing = fmt.Errorf("pgtest: PostgreSQL 15 binaries not found in %s: `make test` installs them "+
	"(apt-get install -y postgresql), or set %s to the DSN of a server to use", BinDir, EnvDSN)

// Cluster is a PostgreSQL server for tests: a throwaway cluster this package runs, or an external one.
type Cluster struct {
	external *url.URL // set when the cluster comes from EJ_TEST_PG_DSN

	dir     string // temporary directory holding data/, the socket and the log
	dataDir string
	logFile string
	port    int

	opts Options

	mu      sync.Mutex
	running bool
}

// Options are how Start runs a throwaway cluster.
type Options struct {
	// Durable runs the server with PostgreSQL's defaults: every commit flushed to its WAL, pages written
	// whole after a checkpoint. Without it (tests) fsync, synchronous commits and full-page writes are off,
	// which a test's data, gone with its directory, can afford; a benchmark measures the defaults a team runs.
	Durable bool
}

// FromEnvOrStart returns the server named by EJ_TEST_PG_DSN when that is set, and otherwise starts a throwaway
// cluster (see Start).
func FromEnvOrStart(ctx context.Context) (*Cluster, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		u, err := url.Parse(dsn)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, fmt.Errorf("pgtest: %s must be a postgres:// URL, got %q", EnvDSN, dsn)
		}
		return &Cluster{external: u, running: true}, nil
	}
	return Start(ctx)
}

// Start initialises a new cluster in a temporary directory and starts it on a free loopback port. It fails
// (never skips) when PostgreSQL's binaries are missing. Close stops it and removes the directory.
func Start(ctx context.Context) (*Cluster, error) { return StartWith(ctx, Options{}) }

// StartWith is Start with opts.
func StartWith(ctx context.Context, opts Options) (*Cluster, error) {
	if _, err := os.Stat(filepath.Join(BinDir, "initdb")); err != nil {
		return nil, errMissing
	}
	dir, err := os.MkdirTemp(tempBase(), "ejserver-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c := &Cluster{dir: dir, dataDir: filepath.Join(dir, "data"), logFile: filepath.Join(dir, "postgres.log"), opts: opts}
	if err := c.handToPostgres(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	initdb := fmt.Sprintf("%s -D %s -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8",
		quote(filepath.Join(BinDir, "initdb")), quote(c.dataDir))
	if out, err := run(ctx, initdb); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	// Another process may take the free port before the postmaster binds it: try a few.
	for attempt := 0; ; attempt++ {
		if c.port, err = freePort(); err == nil {
			if err = c.Restart(ctx); err == nil {
				return c, nil
			}
		}
		if attempt == 2 || ctx.Err() != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

// External reports whether the cluster is the one named by EJ_TEST_PG_DSN (it cannot be stopped then).
func (c *Cluster) External() bool { return c.external != nil }

// DSN returns the URL of database db on the cluster.
func (c *Cluster) DSN(db string) string {
	if c.external != nil {
		u := *c.external
		u.Path = "/" + db
		return u.String()
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, url.PathEscape(db))
}

// CreateDatabase creates database name and returns its DSN.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	admin := "postgres"
	if c.external != nil {
		admin = strings.TrimPrefix(c.external.Path, "/")
		if admin == "" {
			admin = "postgres"
		}
	}
	conn, err := pgx.Connect(ctx, c.DSN(admin))
	if err != nil {
		return "", fmt.Errorf("pgtest: connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return c.DSN(name), nil
}

var dbSeq atomic.Int64

var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates a database of its own for test t and returns its DSN. On an external server the
// database is dropped when the test ends; a throwaway cluster is removed whole by Close.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := notIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("t%d_%d_%s", os.Getpid(), dbSeq.Add(1), name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := c.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if c.external != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, c.DSN(strings.TrimPrefix(c.external.Path, "/")))
			if err != nil {
				t.Logf("pgtest: drop database %s: %v", name, err)
				return
			}
			defer func() { _ = conn.Close(ctx) }()
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Logf("pgtest: drop database %s: %v", name, err)
			}
		})
	}
	return dsn
}

// Dir is the cluster's temporary directory (its data, socket and log); empty for an external server.
func (c *Cluster) Dir() string { return c.dir }

// PID returns the postmaster's process id, or 0 when it is not running (or the cluster is external).
func (c *Cluster) PID() int {
	if c.external != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0
	}
	return pid
}

// Stop shuts the postmaster down by its PID with SIGINT (fast shutdown: open connections are closed) and
// returns once the process has exited. Stopping a stopped cluster does nothing.
func (c *Cluster) Stop() error {
	if c.external != nil {
		return errors.New("pgtest: cannot stop the external server named by " + EnvDSN)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return nil
	}
	pid := c.PID()
	if pid == 0 {
		c.running = false
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pgtest: signal postmaster %d: %w", pid, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := waitFor(ctx, func() bool { return !Alive(pid) }); err != nil {
		return fmt.Errorf("pgtest: postmaster %d did not exit: %w", pid, err)
	}
	c.running = false
	return nil
}

// Restart starts a stopped cluster again on the same directory and port, and returns once it accepts
// connections. Starting a running cluster does nothing.
func (c *Cluster) Restart(ctx context.Context) error {
	if c.external != nil {
		return errors.New("pgtest: cannot start the external server named by " + EnvDSN)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return nil
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", c.port, c.dir)
	if !c.opts.Durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	start := fmt.Sprintf("%s -D %s -o %s -l %s -w -t 60 start",
		quote(filepath.Join(BinDir, "pg_ctl")), quote(c.dataDir), quote(opts), quote(c.logFile))
	if out, err := run(ctx, start); err != nil {
		log, _ := os.ReadFile(c.logFile)
		return fmt.Errorf("pgtest: pg_ctl start on port %d: %w\n%s\n%s", c.port, err, out, tail(log, 2000))
	}
	c.running = true
	return nil
}

// Close stops the cluster and removes its directory. It does nothing for an external server.
func (c *Cluster) Close() error {
	if c.external != nil {
		return nil
	}
	err := c.Stop()
	if rmErr := os.RemoveAll(c.dir); err == nil {
		err = rmErr
	}
	return err
}

// handToPostgres makes the cluster directory the postgres user's when running as root (initdb refuses to
// run as root, and the server must own its data directory).
func (c *Cluster) handToPostgres() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("pgtest: running as root needs the postgres user: %w (%v)", err, errMissing)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(c.dir, uid, gid); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return os.Chmod(c.dir, 0o755)
}

// run runs a shell command line, as the postgres user when running as root.
func run(ctx context.Context, cmdline string) ([]byte, error) {
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "su", "postgres", "-s", "/bin/sh", "-c", cmdline)
	} else {
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	}
	// pg_ctl's postmaster inherits stdout/stderr unless -l is given (it is); keep the output short.
	return cmd.CombinedOutput()
}

// tempBase is a directory the postgres user can traverse: /tmp unless TMPDIR says otherwise and is usable.
func tempBase() string {
	base := os.TempDir()
	if os.Geteuid() == 0 {
		if fi, err := os.Stat(base); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
	}
	return base
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Alive reports whether process pid exists and is not a zombie (a stopped postmaster its parent has not
// reaped yet is not alive).
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
