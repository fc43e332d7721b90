package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartStopRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	dsn := c.NewDatabase(t)
	ping := func() error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close(ctx) }()
		return conn.Ping(ctx)
	}
	if err := ping(); err != nil {
		t.Fatalf("ping a new cluster: %v", err)
	}
	pid := c.PID()
	if pid == 0 {
		t.Fatal("no postmaster pid")
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatalf("postmaster %d still alive after Stop", pid)
	}
	if err := ping(); err == nil {
		t.Fatal("ping succeeded while the cluster is stopped")
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
}

// A durable cluster runs with PostgreSQL's defaults (what a benchmark measures); a test's does not sync.
func TestDurableRunsPostgresDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		durable bool
		want    string
	}{{true, "on"}, {false, "off"}} {
		c, err := StartWith(ctx, Options{Durable: tc.durable})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, c.NewDatabase(t))
		if err != nil {
			_ = c.Close()
			t.Fatal(err)
		}
		for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
			var got string
			if err := conn.QueryRow(ctx, "SHOW "+setting).Scan(&got); err != nil {
				t.Error(err)
			} else if got != tc.want {
				t.Errorf("durable %v: %s = %s, want %s", tc.durable, setting, got, tc.want)
			}
		}
		_ = conn.Close(ctx)
		if c.Dir() == "" {
			t.Error("a throwaway cluster has no directory")
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
