package history

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// eventually polls cond until it holds, failing the test after a generous deadline. step runs before each
// poll (to advance a fake clock, say).
func eventually(t testing.TB, what string, cond func() bool, step ...func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, s := range step {
			s()
		}
		if cond() {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// logRecorder is an slog.Handler that keeps the messages it is given.
type logRecorder struct {
	mu   *sync.Mutex
	msgs *[]string
}

func newLogRecorder() logRecorder { return logRecorder{mu: &sync.Mutex{}, msgs: &[]string{}} }

func (logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.msgs = append(*r.msgs, rec.Message)
	return nil
}
func (r logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r logRecorder) WithGroup(string) slog.Handler      { return r }

// count returns how many messages equal msg.
func (r logRecorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range *r.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

var storeKinds = []string{"sqlite", "postgres"}

// newDSN returns a fresh database of the kind: an SQLite file in a temporary directory, or a new PostgreSQL
// database.
func newDSN(t testing.TB, kind string) string {
	t.Helper()
	switch kind {
	case "sqlite":
		return filepath.Join(t.TempDir(), "history.db")
	case "postgres":
		return pg.NewDatabase(t)
	}
	t.Fatalf("no store kind %q", kind)
	return ""
}

// openStore opens a store on a fresh database of the kind.
func openStore(t testing.TB, kind string, opts ...Option) Store {
	t.Helper()
	return openDSN(t, newDSN(t, kind), opts...)
}

// openDSN opens a store on dsn (several stores on one database are several peers), closed at the test's end.
func openDSN(t testing.TB, dsn string, opts ...Option) Store {
	t.Helper()
	s, err := Open(testCtx(t), dsn, append([]Option{WithLogger(discardLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// eachStore runs fn against a fresh store of each kind, in parallel subtests.
func eachStore(t *testing.T, fn func(t *testing.T, s Store)) {
	t.Helper()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fn(t, openStore(t, kind))
		})
	}
}

// dataHeavy marks a test that checks data in one goroutine against modernc's SQLite (a query's plan, a
// migration, the rollup against its rows): under the race detector, which makes that SQLite about 30 times
// slower and has no goroutines of the test's own to watch, it is left out; make test runs the package a second
// time without -race (scripts/test.sh), and every such test runs there.
func dataHeavy(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("data-heavy: runs in make test's pass of internal/history without -race")
	}
}

// t0 is the tests' reference time; record times are offsets from it.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// newExec returns an ended, successful execution of item of job that started at start.
func newExec(job string, item int, start time.Time) ejserver.Execution {
	return ejserver.Execution{
		ID:                 ejserver.NewExecutionID(),
		JobName:            job,
		TaskID:             ejserver.TaskID(job, []int{item}, false, "10.0.0.7@-@4242"),
		ShardingItem:       item,
		ShardingTotalCount: 4,
		Source:             ejserver.SourceNormal,
		InstanceID:         "10.0.0.7@-@4242",
		IP:                 "10.0.0.7",
		Hostname:           "peer-1",
		ScheduledAt:        start.Add(-time.Millisecond),
		StartedAt:          start,
		CompletedAt:        start.Add(120 * time.Millisecond),
		Success:            true,
		StatusCode:         200,
		Attempts:           1,
		DurationMs:         120,
		ResponseExcerpt:    `{"ok":true}`,
	}
}

// running returns e's start record.
func running(e ejserver.Execution) ejserver.Execution {
	e.CompletedAt = time.Time{}
	e.Success, e.StatusCode, e.Attempts, e.DurationMs, e.ResponseExcerpt, e.FailureCause = false, 0, 0, 0, "", ""
	return e
}

// failed returns e as a failure.
func failed(e ejserver.Execution, code int) ejserver.Execution {
	e.Success, e.StatusCode, e.FailureCause = false, code, "HTTP 500 from receiver"
	return e
}

// mustWrite writes recs and waits for the advance of the rollup's frontier the write asked for, if any (settled):
// the test then reads the frontier and the cells as the write leaves them.
func mustWrite(t testing.TB, s Store, recs ...ejserver.Execution) {
	t.Helper()
	if err := s.WriteExecutions(testCtx(t), recs); err != nil {
		t.Fatal(err)
	}
	settled(s)
}

func mustGet(t testing.TB, s Store, id string) ejserver.Execution {
	t.Helper()
	e, err := s.GetExecution(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func ids(es []ejserver.Execution) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func ptr[T any](v T) *T { return &v }
