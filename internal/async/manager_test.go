package async

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
	"github.com/ejserver/ejserver/internal/webhook"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var secret = []byte(strings.Repeat("s", 32))

type observed struct {
	mu      sync.Mutex
	running []int
	ended   []lease.State
}

func (o *observed) Accepted(string)         {}
func (o *observed) Callback(string, string) {}
func (o *observed) Expired(string)          {}
func (o *observed) Ended(_ string, s lease.State) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, s)
}
func (o *observed) Running(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running = append(o.running, n)
}

func (o *observed) lastRunning() (int, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.running) == 0 {
		return 0, false
	}
	return o.running[len(o.running)-1], true
}

type fixture struct {
	reg *cluster.Registry
	mgr *Manager
	obs *observed
	rec *execRecorder
	clk clock.Clock
}

// execRecorder keeps the history records a manager writes.
type execRecorder struct {
	mu      sync.Mutex
	execs   []ejserver.Execution
	failing atomic.Bool
	commits atomic.Int32 // EnqueueCommitted calls
}

func (r *execRecorder) Enqueue(e ejserver.Execution) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execs = append(r.execs, e)
	return true
}

func (r *execRecorder) EnqueueTrace(ejserver.StatusTrace) bool { return true }

// EnqueueCommitted records e as committed, or refuses while failing is set (a store that is down).
func (r *execRecorder) EnqueueCommitted(_ context.Context, e ejserver.Execution) error {
	r.commits.Add(1)
	if r.failing.Load() {
		return errors.New("history record not committed: the store is failing")
	}
	r.Enqueue(e)
	return nil
}

// ended returns the end records of execution id.
func (r *execRecorder) ended(id string) []ejserver.Execution {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ejserver.Execution
	for _, e := range r.execs {
		if e.ID == id && e.Done() {
			out = append(out, e)
		}
	}
	return out
}

// newFixture starts a registry on its own namespace of the shared ZooKeeper with one job, and a manager.
func newFixture(t *testing.T, ns string, clk clock.Clock, hook string) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	reg, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns,
		Identity: cluster.Identity{InstanceID: "127.0.0.1@-@" + ns, ServerIP: "127.0.0.1"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "settle", 2, hook
	cfg.Retry = ejserver.RetryPolicy{MaxAttempts: 2, InitialBackoffMs: 10, MaxBackoffMs: 10}
	cfg.Async = ejserver.AsyncPolicy{LeaseSeconds: 2, MaxDurationSeconds: 3600}
	if _, err := reg.CreateJob(cfg); err != nil && ejserver.ErrorCodeOf(err) != ejserver.ECONFLICT {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer wcancel()
	for reg.Job("settle") == nil {
		if _, err := reg.Wait(wctx, "settle", func(*cluster.JobSnapshot) bool { return true }); err != nil && wctx.Err() != nil {
			t.Fatalf("job not loaded: %v", err)
		}
	}
	sender := webhook.New(webhook.Config{Logger: log})
	t.Cleanup(sender.Close)
	obs, rec := &observed{}, &execRecorder{}
	mgr, err := New(Config{Registry: reg, Sender: sender, Observer: obs, Recorder: rec, Secret: secret, AdvertiseURL: "http://127.0.0.1:1",
		EarlyWait: 2 * time.Second, Retention: time.Minute, Clock: clk, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Stop)
	return &fixture{reg: reg, mgr: mgr, obs: obs, rec: rec, clk: clk}
}

func (f *fixture) accept(t *testing.T, id string) lease.Lease {
	t.Helper()
	err := f.mgr.Accept(AcceptRequest{
		Lease:   lease.Lease{ExecutionID: id, JobName: "settle", ShardingItem: 1, ShardingTotalCount: 2, Source: "MANUAL", Attempt: 1, TaskID: "t"},
		Started: f.clk.Now(), Policy: ejserver.AsyncPolicy{LeaseSeconds: 2, MaxDurationSeconds: 3600}, StatusCode: 202,
	})
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := f.reg.ReadLease(id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func problemKind(err error) string {
	var e *ejserver.Error
	if errors.As(err, &e) {
		if e.Kind != "" {
			return e.Kind
		}
		return string(e.Code)
	}
	return "?"
}

func TestCallbacksApplyAndRefuse(t *testing.T) {
	f := newFixture(t, zktest.Namespace("cb"), clock.Real{}, "http://127.0.0.1:9/hook")
	const id = "01a20d23-0495-75d9-a8b1-28fcace5ff8c"
	f.accept(t, id)
	ctx := context.Background()
	tok := lease.Token(secret, id, 0, 1)
	p := 30
	v, err := f.mgr.Heartbeat(ctx, id, tok, HeartbeatRequest{Progress: &p, Message: "a third"})
	if err != nil || v.State != "RUNNING" || *v.Progress != 30 || v.Message != "a third" || v.LeaseExpiresAt == nil {
		t.Fatalf("heartbeat: %+v %v", v, err)
	}
	refusals := []struct {
		name, id, token, want string
		req                   HeartbeatRequest
	}{
		{"no token", id, "", "callback-token", HeartbeatRequest{}},
		{"another execution's token", id, lease.Token(secret, "01a20d23-0495-75d9-a8b1-28fcace5ff8d", 0, 1), "callback-token", HeartbeatRequest{}},
		{"another cluster's token", id, lease.Token([]byte(strings.Repeat("x", 32)), id, 0, 1), "callback-token", HeartbeatRequest{}},
		{"a token of an attempt not sent", id, lease.Token(secret, id, 0, 2), "stale-attempt", HeartbeatRequest{}},
		{"bad progress", id, tok, "invalid", HeartbeatRequest{Progress: new(int(101))}},
		{"not an execution id", "../../leases", tok, "not_found", HeartbeatRequest{}},
	}
	for _, r := range refusals {
		if _, err := f.mgr.Heartbeat(ctx, r.id, r.token, r.req); problemKind(err) != r.want {
			t.Errorf("%s: %v, want %s", r.name, err, r.want)
		}
	}
	done := CompleteRequest{Status: "success", Message: "ok", Output: "rows=3"}
	if v, err := f.mgr.Complete(ctx, id, tok, done); err != nil || v.State != "SUCCEEDED" {
		t.Fatalf("complete: %+v %v", v, err)
	}
	if v, err := f.mgr.Complete(ctx, id, tok, done); err != nil || v.State != "SUCCEEDED" {
		t.Fatalf("the same completion again: %+v %v", v, err)
	}
	if _, err := f.mgr.Complete(ctx, id, tok, CompleteRequest{Status: "failure"}); problemKind(err) != "already-completed" {
		t.Fatalf("another completion: %v", err)
	}
	const unknown = "01a20d23-0000-75d9-a8b1-28fcace5ff8c"
	if _, err := f.mgr.Complete(ctx, unknown, tok, done); problemKind(err) != "callback-token" {
		t.Fatalf("unknown execution, another's token: %v", err)
	}
	if _, err := f.mgr.Complete(ctx, unknown, lease.Token(secret, unknown, 0, 1), done); problemKind(err) != "not_found" {
		t.Fatalf("unknown execution, its token: %v", err)
	}
	f.obs.mu.Lock()
	defer f.obs.mu.Unlock()
	if len(f.obs.ended) != 1 || f.obs.ended[0] != lease.Succeeded {
		t.Fatalf("ends observed: %v, want one SUCCEEDED", f.obs.ended)
	}
}

// A completion whose lease write landed in ZooKeeper while its answer was lost (the connection closed: the
// peer saw an error, answered 503 and recorded nothing) is recorded when the receiver sends it again: the
// end is never silently missing from the history. Found by the nemesis soak (docs/reliability.md).
func TestRepeatedCompletionRecordsAnEndWhoseWriteWasLost(t *testing.T) {
	f := newFixture(t, zktest.Namespace("lostend"), clock.Real{}, "http://127.0.0.1:9/hook")
	const id = "01a20d23-0495-75d9-a8b1-28fcace5ff9d"
	l := f.accept(t, id)
	_, version, err := f.reg.ReadLease(id)
	if err != nil {
		t.Fatal(err)
	}
	done := CompleteRequest{Status: "success"}
	// the first completion's lease write, as it landed: ended, and nothing else done
	d := lease.Apply(l, lease.Event{Kind: lease.Complete, At: time.Now(), Attempt: 1, Success: true}, lease.Policy{MaxAttempts: 2})
	if !d.Ended {
		t.Fatalf("the completion did not end the lease: %+v", d)
	}
	if _, err := f.reg.WriteLease(d.Lease, version, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.rec.ended(id); len(got) != 0 {
		t.Fatalf("end recorded before the repeat: %+v", got)
	}
	v, err := f.mgr.Complete(context.Background(), id, lease.Token(secret, id, 0, 1), done)
	if err != nil || v.State != "SUCCEEDED" {
		t.Fatalf("the repeated completion: %+v %v", v, err)
	}
	got := f.rec.ended(id)
	if len(got) != 1 || !got[0].Success || got[0].State != "SUCCEEDED" {
		t.Fatalf("end records after the repeat: %+v, want one success", got)
	}
}

// A callback that overtakes the 202 it follows waits for the lease instead of answering 404.
func TestEarlyCallbackWaitsForTheLease(t *testing.T) {
	f := newFixture(t, zktest.Namespace("early"), clock.Real{}, "http://127.0.0.1:9/hook")
	const id = "01a20d23-0495-75d9-a8b1-28fcace5ff8e"
	type result struct {
		v   View
		err error
	}
	res := make(chan result, 1)
	go func() {
		v, err := f.mgr.Complete(context.Background(), id, lease.Token(secret, id, 0, 1), CompleteRequest{Status: "success"})
		res <- result{v, err}
	}()
	time.Sleep(100 * time.Millisecond) // let the completion arrive first: what is tested is that it waits
	f.accept(t, id)
	r := <-res
	if r.err != nil || r.v.State != "SUCCEEDED" {
		t.Fatalf("early completion: %+v %v", r.v, r.err)
	}
}

// The lease watcher, on a fake clock: a lease that runs out is POSTed again as attempt 2 with the same id;
// the re-POST's 200 ends the item succeeded. Start and Stop are safe in any order.
func TestWatcherRetriesAnExpiredLease(t *testing.T) {
	var got atomic.Value
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(r.Header.Get("webhook-id") + " " + string(b))
		w.WriteHeader(http.StatusOK)
	}))
	defer hook.Close()
	clk := clock.NewFake(time.Now())
	f := newFixture(t, zktest.Namespace("watch"), clk, hook.URL)
	f.mgr.Stop() // before Start: a no-op
	f2 := newFixture(t, zktest.Namespace("watch2"), clk, hook.URL)
	const id = "01a20d23-0495-75d9-a8b1-28fcace5ff8f"
	l := f2.accept(t, id)
	if err := f2.mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watcher to track the lease", func() bool { n, ok := f2.obs.lastRunning(); return ok && n == 1 })
	clk.Advance(l.DueAt().Sub(clk.Now()) + time.Millisecond)
	waitFor(t, "the lease to end", func() bool {
		cur, _, err := f2.reg.ReadLease(id)
		return err == nil && cur.State.Ended()
	})
	cur, _, _ := f2.reg.ReadLease(id)
	if cur.State != lease.Succeeded || cur.Attempt != 2 {
		t.Fatalf("after the re-POST: %+v", cur)
	}
	body, _ := got.Load().(string)
	if !strings.HasPrefix(body, id+" ") || !strings.Contains(body, `"attempt":2`) || !strings.Contains(body, lease.Token(secret, id, 0, 2)) {
		t.Fatalf("re-POST: %s", body)
	}
	// the ended record goes after the retention (a minute here), and then the lease is unknown
	waitFor(t, "the ended record to go", func() bool {
		clk.Advance(10 * time.Second)
		_, _, err := f2.reg.ReadLease(id)
		return errors.Is(err, cluster.ErrNoLease)
	})
	f2.mgr.Stop()
	f2.mgr.Stop()
}

// The duty moves: when the peer that holds it stops, another takes it.
func TestWatcherDutyMoves(t *testing.T) {
	ns := zktest.Namespace("duty")
	a := newFixture(t, ns, clock.Real{}, "http://127.0.0.1:9/hook")
	b := newFixture(t, ns, clock.Real{}, "http://127.0.0.1:9/hook")
	_ = a.mgr.Start(context.Background())
	waitFor(t, "a to hold the duty", a.mgr.Holder)
	_ = b.mgr.Start(context.Background())
	time.Sleep(200 * time.Millisecond)
	if b.mgr.Holder() {
		t.Fatal("two holders")
	}
	a.mgr.Stop()
	waitFor(t, "b to take the duty", b.mgr.Holder)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, 15*time.Second, cond)
}
