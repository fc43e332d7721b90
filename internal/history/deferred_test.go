package history

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/pgtest"
)

// A peer whose PostgreSQL is down at start-up gets EUNAVAILABLE from every call, and a working store as soon
// as the database comes up.
func TestDeferredOpensWhenTheDatabaseComesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dsn := cl.DSN("postgres")
	if err := cl.Stop(); err != nil {
		t.Fatal(err)
	}
	d := OpenDeferred(ctx, dsn, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	defer d.Close()
	if d.Ready() {
		t.Fatal("ready with the database down")
	}
	err = d.WriteExecutions(ctx, []ejserver.Execution{{ID: "x", JobName: "j", StartedAt: time.Now()}})
	if ejserver.ErrorCodeOf(err) != ejserver.EUNAVAILABLE {
		t.Fatalf("write while down: %v", err)
	}
	if _, err := d.ListExecutions(ctx, ExecutionFilter{}); ejserver.ErrorCodeOf(err) != ejserver.EUNAVAILABLE {
		t.Fatalf("list while down: %v", err)
	}
	if _, err := d.RollupBehind(ctx); ejserver.ErrorCodeOf(err) != ejserver.EUNAVAILABLE {
		t.Fatalf("the rollup read while down: %v", err)
	}
	if err := cl.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !d.Ready() {
		select {
		case <-deadline:
			t.Fatal("not connected after the database came up")
		case <-tick.C:
		}
	}
	if err := d.WriteExecutions(ctx, []ejserver.Execution{{ID: "x", JobName: "j", StartedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if got, err := d.GetExecution(ctx, "x"); err != nil || got.JobName != "j" {
		t.Fatalf("read back %+v %v", got, err)
	}
	if behind, err := d.RollupBehind(ctx); err != nil || behind != 0 {
		t.Fatalf("the rollup of a row just written: %v behind, %v", behind, err)
	}
}

func TestDeferredClosesWhileRetrying(t *testing.T) {
	d := OpenDeferred(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Ping(context.Background()); ejserver.ErrorCodeOf(err) != ejserver.EUNAVAILABLE {
		t.Fatalf("ping after close: %v", err)
	}
}
