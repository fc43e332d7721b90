package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
	"github.com/ejserver/ejserver/internal/webhook"
	"github.com/go-zookeeper/zk"
)

// The runner against a real ZooKeeper, real webhook requests to a real HTTP receiver.

type peer struct {
	sess *cluster.Session
	reg  *cluster.Registry
	once sync.Once
}

func startPeer(t *testing.T, ns, name string) *peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns,
		Identity: cluster.Identity{InstanceID: "127.0.0.1@-@" + name, ServerIP: "127.0.0.1"}, Logger: log})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	if err := reg.Start(ctx); err != nil {
		s.Close()
		t.Fatal(err)
	}
	p := &peer{sess: s, reg: reg}
	t.Cleanup(p.crash)
	return p
}

// crash ends the peer's session as a dead process would: its ephemeral nodes (a backfill's owner) go.
func (p *peer) crash() {
	p.once.Do(func() {
		p.reg.Stop()
		p.sess.Close()
	})
}

// receiver records each request's webhook-id by item@scheduledAt; hold, when set, keeps a request until
// released.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	ids      map[string]map[string]bool
	n        int
	hold     func(p webhook.Payload) bool
	payloads []webhook.Payload
	arrived  chan struct{}
	release  chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{ids: map[string]map[string]bool{}, arrived: make(chan struct{}, 1000), release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p webhook.Payload
		_ = json.NewDecoder(req.Body).Decode(&p)
		k := fmt.Sprintf("%d@%s", p.ShardingItem, p.ScheduledAt.UTC().Format(time.RFC3339))
		r.mu.Lock()
		if r.ids[k] == nil {
			r.ids[k] = map[string]bool{}
		}
		r.ids[k][req.Header.Get("webhook-id")] = true
		r.payloads = append(r.payloads, p)
		r.n++
		hold := r.hold != nil && r.hold(p)
		r.mu.Unlock()
		r.arrived <- struct{}{}
		if hold {
			select {
			case <-r.release:
			case <-req.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() (fires, requests int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids), r.n
}

type recorder struct{}

func (recorder) Enqueue(ejserver.Execution) bool                            { return true }
func (recorder) EnqueueCommitted(context.Context, ejserver.Execution) error { return nil }

func newRunner(t *testing.T, p *peer, cfg RunnerConfig) *Runner {
	t.Helper()
	cfg.Store = p.reg
	cfg.Sender = webhook.New(webhook.Config{Allow: mustAllowLoopback(t)})
	if cfg.Recorder == nil {
		cfg.Recorder = recorder{}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Retry = 50 * time.Millisecond
	if cfg.Pacing.Rate == 0 {
		cfg.Pacing.Rate = -1
	}
	r := NewRunner(cfg)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func mustAllowLoopback(t *testing.T) *webhook.TargetPolicy {
	t.Helper()
	p, err := webhook.ParseAllowList("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func createJob(t *testing.T, p *peer, name, url string, items int) {
	t.Helper()
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.Cron, cfg.ShardingTotalCount, cfg.Webhook.URL = name, "0 * * * * ?", items, url
	if _, err := p.reg.CreateJob(cfg); err != nil {
		t.Fatal(err)
	}
}

func startBackfill(t *testing.T, p *peer, job string, fires int, policy string) Backfill {
	t.Helper()
	svc := NewService(p.reg, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	b, err := svc.Start(job, Request{From: from.Format(time.RFC3339),
		To: from.Add(time.Duration(fires-1) * time.Minute).Format(time.RFC3339), OverlapPolicy: policy}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if b.Total != fires {
		t.Fatalf("backfill of %d fires counted %d", fires, b.Total)
	}
	return b
}

func read(t *testing.T, p *peer, job, id string) Backfill {
	t.Helper()
	n, err := p.reg.ReadBackfill(job, id)
	if err != nil {
		t.Fatal(err)
	}
	var b Backfill
	if err := json.Unmarshal(n.Data, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, 30*time.Second, cond)
}

// One owner at a time; the owner crashes mid-fire; the other peer claims the backfill, resumes after the
// last fire recorded done and re-sends the fire in flight under the same webhook-ids: every item of every
// fire reaches the receiver under exactly one webhook-id.
func TestRunnerFencesAndResumesAfterACrash(t *testing.T) {
	ns := zktest.Namespace("bf-resume")
	a, b := startPeer(t, ns, "a"), startPeer(t, ns, "b")
	recv := newReceiver(t)
	createJob(t, a, "resume", recv.srv.URL, 2)
	recv.mu.Lock()
	holdAt := time.Date(2026, 11, 1, 0, 3, 0, 0, time.UTC)
	recv.hold = func(p webhook.Payload) bool { return p.ScheduledAt.Equal(holdAt) && p.InstanceID == "127.0.0.1@-@a" }
	recv.mu.Unlock()
	bf := startBackfill(t, a, "resume", 8, OverlapAllow)

	ra := newRunner(t, a, RunnerConfig{})
	waitUntil(t, "a runs the backfill", func() bool { return ra.Active() == 1 })
	rb := newRunner(t, b, RunnerConfig{})
	waitUntil(t, "a's fire at 00:03 is held at the receiver", func() bool { f, _ := recv.count(); return f >= 7 })
	if rb.Active() != 0 {
		t.Fatal("b runs a backfill a owns")
	}
	// the fires before the held one are recorded done once their history commits (the settler, beside the
	// sends): the node says so soon after
	waitUntil(t, "a records the three fires before the held one done", func() bool {
		got := read(t, a, "resume", bf.ID)
		return got.Owner == "127.0.0.1@-@a" && got.Done == 3 && got.Current.Equal(holdAt)
	})

	a.crash()
	waitUntil(t, "b claims the backfill and finishes it", func() bool {
		got := read(t, b, "resume", bf.ID)
		return got.State == StateDone
	})
	close(recv.release)
	got := read(t, b, "resume", bf.ID)
	if got.Done != 8 || got.Claims != 2 {
		t.Fatalf("final state: done %d of %d, claims %d", got.Done, got.Total, got.Claims)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.ids) != 16 {
		t.Fatalf("%d item fires reached the receiver, want 16", len(recv.ids))
	}
	for k, ids := range recv.ids {
		if len(ids) != 1 {
			t.Errorf("%s under %d webhook-ids", k, len(ids))
		}
	}
}

// An operator's cancel stops the owner mid-fire: the node says CANCELLED with who did it, and no fire after
// the one in flight is sent.
func TestRunnerStopsOnCancel(t *testing.T) {
	ns := zktest.Namespace("bf-cancel")
	a := startPeer(t, ns, "a")
	recv := newReceiver(t)
	createJob(t, a, "cancelme", recv.srv.URL, 1)
	holdAt := time.Date(2026, 11, 1, 0, 2, 0, 0, time.UTC)
	recv.mu.Lock()
	recv.hold = func(p webhook.Payload) bool { return p.ScheduledAt.Equal(holdAt) }
	recv.mu.Unlock()
	bf := startBackfill(t, a, "cancelme", 10, OverlapAllow)
	r := newRunner(t, a, RunnerConfig{})
	waitUntil(t, "the third fire is held, the two before it recorded done", func() bool {
		f, _ := recv.count()
		return f == 3 && read(t, a, "cancelme", bf.ID).Done == 2
	})

	svc := NewService(a.reg, nil, nil, nil)
	if _, err := svc.Cancel("cancelme", bf.ID, "operator"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the runner stops", func() bool { return r.Active() == 0 })
	got := read(t, a, "cancelme", bf.ID)
	if got.State != StateCancelled || got.CancelledBy != "operator" || got.Done != 2 {
		t.Fatalf("after cancel: %+v", got)
	}
	if _, err := svc.Cancel("cancelme", bf.ID, "operator"); ejserver.ErrorCodeOf(err) != ejserver.ECONFLICT {
		t.Fatalf("second cancel: %v, want a conflict", err)
	}
	if f, _ := recv.count(); f != 3 {
		t.Fatalf("%d fires sent, want the 3 before the cancel", f)
	}
	close(recv.release)
}

// Pacing: a fire yields to a peer busy with its scheduled fires (Busy), but MaxHold in all at most, and then
// goes though the peer is still busy (minimum progress); fires start at most Rate per second. The runner's
// clock is a fake one that the test moves a minute at a time: a day's gap between fires can't pass by
// accident.
func TestRunnerPaces(t *testing.T) {
	ns := zktest.Namespace("bf-pace")
	a := startPeer(t, ns, "a")
	recv := newReceiver(t)
	createJob(t, a, "paced", recv.srv.URL, 2)
	clk := clock.NewFake(time.Now())
	var mu sync.Mutex
	busy := 24 * time.Hour // a peer that is never quiet
	bf := startBackfill(t, a, "paced", 3, OverlapAllow)
	var guards []time.Duration
	newRunner(t, a, RunnerConfig{Clock: clk, Pacing: Pacing{MaxInFlight: 2, Rate: 1.0 / 86400, MaxHold: 30 * time.Minute, Guard: 300 * time.Millisecond},
		Busy: func(guard time.Duration) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			guards = append(guards, guard)
			return busy
		}})
	requests := func() int { _, n := recv.count(); return n }
	waitUntil(t, "the runner claims the backfill", func() bool { return read(t, a, "paced", bf.ID).Owner != "" })
	for range 20 { // 20 minutes of the fire's 30-minute hold: nothing is sent
		clk.Advance(time.Minute)
		time.Sleep(10 * time.Millisecond) // lets the runner run between two moves of its clock
	}
	if n := requests(); n != 0 {
		t.Fatalf("%d requests sent while the peer was busy, within the hold", n)
	}
	waitUntil(t, "the first fire's two items once its hold is spent, the peer still busy", func() bool {
		if requests() >= 2 {
			return true
		}
		clk.Advance(time.Minute)
		return false
	})
	waitUntil(t, "the first fire recorded done", func() bool { return read(t, a, "paced", bf.ID).Done == 1 })
	if n := requests(); n != 2 {
		t.Fatalf("%d requests before the rate allowed the second fire", n)
	}
	mu.Lock()
	busy = 0 // a quiet peer: the next fires go as soon as the rate allows, without a hold
	mu.Unlock()
	for i := 2; i <= 3; i++ {
		clk.Advance(24 * time.Hour)
		waitUntil(t, fmt.Sprintf("fire %d", i), func() bool { return read(t, a, "paced", bf.ID).Done == i })
	}
	if got := read(t, a, "paced", bf.ID); got.State != StateDone || requests() != 6 {
		t.Fatalf("state %s after %d requests", got.State, requests())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, g := range guards {
		if g != 300*time.Millisecond {
			t.Fatalf("the peer was asked whether it is busy within %s of a burst, want the pacing's guard", g)
		}
	}
}

// slowHistory is a recorder whose commits wait until released (or their bound passes).
type slowHistory struct{ release chan struct{} }

func (slowHistory) Enqueue(ejserver.Execution) bool { return true }
func (h slowHistory) EnqueueCommitted(ctx context.Context, _ ejserver.Execution) error {
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A history that commits slowly does not hold the sends up fire by fire: up to MaxPending fires are sent
// while their records commit, none is recorded done before its records have committed, and once they do
// the backfill runs to its end, every item once.
func TestRunnerPipelinesHistoryCommits(t *testing.T) {
	ns := zktest.Namespace("bf-pipeline")
	a := startPeer(t, ns, "a")
	recv := newReceiver(t)
	createJob(t, a, "piped", recv.srv.URL, 2)
	hist := slowHistory{release: make(chan struct{})}
	bf := startBackfill(t, a, "piped", 12, OverlapAllow)
	newRunner(t, a, RunnerConfig{Pacing: Pacing{MaxInFlight: 1, MaxPending: 3}, Recorder: hist})
	waitUntil(t, "three fires sent while the history holds their commits", func() bool { f, _ := recv.count(); return f >= 6 })
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) { // an observation window, well within the commits' 5 s bound
		if f, _ := recv.count(); f != 6 {
			t.Fatalf("%d item fires sent with 3 fires pending, want 6", f)
		}
		if got := read(t, a, "piped", bf.ID); got.Done != 0 {
			t.Fatalf("%d fires recorded done before their history committed", got.Done)
		}
		time.Sleep(20 * time.Millisecond) // polling within the window
	}
	close(hist.release)
	waitUntil(t, "the backfill ends", func() bool { return read(t, a, "piped", bf.ID).State == StateDone })
	got := read(t, a, "piped", bf.ID)
	fires, requests := recv.count()
	if got.Done != 12 || got.Items != 24 || fires != 24 || requests != 24 {
		t.Fatalf("done %d items %d; the receiver saw %d item fires in %d requests", got.Done, got.Items, fires, requests)
	}
}

// setRunning creates (or, with running false, deletes) item's running node of job in ZooKeeper, as the
// job's own run of the item would.
func setRunning(t *testing.T, p *peer, job string, item int, running bool) {
	t.Helper()
	conn, _, err := zk.Connect([]string{zktest.Addr(t)}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pth := p.reg.Paths().ItemNode(job, item, cluster.NodeRunning)
	if !running {
		if err := conn.Delete(pth, -1); err != nil {
			t.Fatal(err)
		}
		return
	}
	for i := 1; i < len(pth); i++ {
		if pth[i] == '/' {
			if _, err := conn.Create(pth[:i], nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
	}
	if _, err := conn.Create(pth, []byte("{}"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// The overlap policy, each fire's running nodes read at once: while the job's own run of item 1 is in
// flight, BUFFER_ONE sends item 0 and waits with item 1 until the run ends; SKIP leaves item 1 out of every
// fire and counts it.
func TestRunnerOverlapPolicies(t *testing.T) {
	ns := zktest.Namespace("bf-overlap")
	a := startPeer(t, ns, "a")
	recv := newReceiver(t)
	createJob(t, a, "buffered", recv.srv.URL, 2)
	createJob(t, a, "skipping", recv.srv.URL, 2)
	setRunning(t, a, "buffered", 1, true)
	setRunning(t, a, "skipping", 1, true)
	buffered := startBackfill(t, a, "buffered", 2, OverlapBufferOne)
	newRunner(t, a, RunnerConfig{})
	sentOf := func(job string) map[int]int { // item -> requests
		out := map[int]int{}
		recv.mu.Lock()
		defer recv.mu.Unlock()
		for _, p := range recv.payloads {
			if p.JobName == job {
				out[p.ShardingItem]++
			}
		}
		return out
	}
	waitUntil(t, "BUFFER_ONE sends item 0 of the first fire", func() bool { return sentOf("buffered")[0] == 1 })
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) { // an observation window: item 1 waits while the job runs it
		if n := sentOf("buffered")[1]; n != 0 {
			t.Fatalf("item 1 sent %d times while the job's own run of it was in flight", n)
		}
		time.Sleep(20 * time.Millisecond) // polling within the window
	}
	setRunning(t, a, "buffered", 1, false)
	waitUntil(t, "BUFFER_ONE ends once the run has", func() bool { return read(t, a, "buffered", buffered.ID).State == StateDone })
	if got := sentOf("buffered"); got[0] != 2 || got[1] != 2 {
		t.Fatalf("BUFFER_ONE sent %v, want each item of both fires once", got)
	}

	skipping := startBackfill(t, a, "skipping", 3, OverlapSkip)
	waitUntil(t, "SKIP ends", func() bool { return read(t, a, "skipping", skipping.ID).State == StateDone })
	got := read(t, a, "skipping", skipping.ID)
	if sent := sentOf("skipping"); sent[0] != 3 || sent[1] != 0 || got.Skipped != 3 || got.Items != 3 {
		t.Fatalf("SKIP sent %v, recorded %d items and %d skipped; want item 0 thrice, item 1 skipped thrice", sent, got.Items, got.Skipped)
	}
}
