package alert

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/notify"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// recorder is a real Deliverer that keeps what it is given.
type recorder struct {
	mu  sync.Mutex
	got []notify.Notification
}

func (r *recorder) Deliver(n notify.Notification, _ []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n)
}

func (r *recorder) all() []notify.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Notification(nil), r.got...)
}

// hookSink is a real HTTP receiver of hooks.
type hookSink struct {
	mu     sync.Mutex
	bodies []map[string]any
	url    string
}

func newHookSink(t *testing.T) *hookSink {
	h := &hookSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		h.mu.Lock()
		h.bodies = append(h.bodies, m)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *hookSink) events(event string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, b := range h.bodies {
		if b["event"] == event {
			out = append(out, b)
		}
	}
	return out
}

// peer is one peer's registry and alert service on a shared namespace.
type peer struct {
	reg *cluster.Registry
	svc *Service
	out *recorder
}

func newPeers(t *testing.T, n int, cfg ejserver.JobConfig) []*peer {
	return newPeersClock(t, n, cfg, nil)
}

// newPeersClock starts n peers whose alert services run on clk (nil: the real clock).
func newPeersClock(t *testing.T, n int, cfg ejserver.JobConfig, clk *clock.Fake) []*peer {
	t.Helper()
	ns := zktest.Namespace("alert")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var peers []*peer
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: log})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		reg, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns,
			Identity: cluster.Identity{InstanceID: "127.0.0.1@-@" + string(rune('a'+i)), ServerIP: "127.0.0.1"}, Logger: log})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if err := reg.Start(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(reg.Stop)
		if i == 0 {
			if _, err := reg.CreateJob(cfg); err != nil {
				cancel()
				t.Fatal(err)
			}
		}
		if _, err := reg.Wait(ctx, cfg.JobName, func(s *cluster.JobSnapshot) bool { return s.Registered }); err != nil {
			cancel()
			t.Fatalf("job not loaded on peer %d: %v", i, err)
		}
		cancel()
		hooks := NewHookPoster(HookPosterConfig{Logger: log, Backoff: 10 * time.Millisecond})
		hooks.Start()
		t.Cleanup(hooks.Stop)
		out := &recorder{}
		scfg := ServiceConfig{Registry: reg, Deliverer: out, Namespace: ns, Hooks: hooks, Logger: log,
			Tick: 20 * time.Millisecond, SweepEvery: 50 * time.Millisecond, LostGrace: 200 * time.Millisecond}
		var made <-chan struct{}
		if clk != nil {
			scfg.Clock = clk
			made = clk.TimerCreated()
		}
		svc := NewService(scfg)
		if err := svc.Start(); err != nil {
			t.Fatal(err)
		}
		if made != nil {
			<-made // its ticker's timer exists: Advance reaches it
		}
		t.Cleanup(svc.Stop)
		peers = append(peers, &peer{reg: reg, svc: svc, out: out})
	}
	return peers
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, 15*time.Second, cond)
}

func delivered(peers []*peer) []notify.Notification {
	var out []notify.Notification
	for _, p := range peers {
		out = append(out, p.out.all()...)
	}
	return out
}

func alertJob(t *testing.T, hooks *hookSink) ejserver.JobConfig {
	t.Helper()
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "settle", 4, "http://127.0.0.1:1/x"
	cfg.Alerts = ejserver.Alerts{Rules: []ejserver.AlertRule{{On: []string{ejserver.EventFireFailed, ejserver.EventFireSkipped,
		ejserver.EventMisfire, ejserver.EventRecovered}, Channels: []string{"ops"}}}}
	if hooks != nil {
		cfg.Hooks = ejserver.Hooks{BeforeFire: hooks.url + "/before", AfterFire: hooks.url + "/after"}
	}
	return cfg
}

func end(item int, outcome string) dispatch.ItemEnd {
	return dispatch.ItemEnd{Item: item, Outcome: outcome, Source: ejserver.SourceNormal, Status: 500}
}

// Every peer skips the same fire: one of them, fenced, sends the one FIRE_SKIPPED.
func TestOneNotificationPerEventAcrossPeers(t *testing.T) {
	peers := newPeers(t, 3, alertJob(t, nil))
	at := time.Now().Truncate(time.Second)
	f := dispatch.Fire{Job: "settle", Key: dispatch.FireKey(at, ""), ScheduledAt: at, Source: ejserver.SourceNormal, Expected: 4}
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.svc.FireSkipped(f, "clock check failed", false)
		}()
	}
	wg.Wait()
	waitFor(t, "the notification", func() bool { return len(delivered(peers)) >= 1 })
	// the fence holds: a peer that hears the event again says nothing
	peers[0].svc.FireSkipped(f, "clock check failed", false)
	waitFor(t, "the queue to drain", func() bool { return len(peers[0].svc.queue) == 0 })
	if got := delivered(peers); len(got) != 1 || got[0].Kind != notify.KindFireSkipped {
		t.Fatalf("delivered %+v, want one FIRE_SKIPPED", got)
	}
}

// A fire's items run on two peers: the one whose end completes the fire sends the fire's one notification,
// its beforeFire and afterFire once; the ledger and the guarantee nodes are cleared. The next fire, all
// succeeded, sends one recovery.
func TestFireLedgerOnceAcrossPeers(t *testing.T) {
	hooks := newHookSink(t)
	peers := newPeers(t, 2, alertJob(t, hooks))
	a, b := peers[0], peers[1]
	run := func(at time.Time, failItem int) dispatch.Fire {
		f := dispatch.Fire{Job: "settle", Key: dispatch.FireKey(at, ""), ScheduledAt: at, Source: ejserver.SourceNormal, Expected: 4}
		a.svc.FireStarted(f, []int{0, 1})
		b.svc.FireStarted(f, []int{2, 3})
		for i, p := range []*peer{a, a, b, b} {
			outcome := dispatch.OutcomeSucceeded
			if i == failItem {
				outcome = dispatch.OutcomeFailed
			}
			p.svc.ItemEnded(f, end(i, outcome))
		}
		return f
	}
	at := time.Now().Truncate(time.Second)
	f1 := run(at, 2)
	waitFor(t, "afterFire", func() bool { return len(hooks.events("afterFire")) == 1 })
	waitFor(t, "the notification", func() bool { return len(delivered(peers)) == 1 })
	n := delivered(peers)[0]
	if n.Kind != notify.KindFireFailed || n.Counts.Failed != 1 || n.Counts.Succeeded != 3 || n.Samples[0].Item != 2 {
		t.Fatalf("notification %+v", n)
	}
	after := hooks.events("afterFire")[0]
	if after["fire"] != f1.Key || after["counts"].(map[string]any)["failed"] != 1.0 {
		t.Fatalf("afterFire %v", after)
	}
	waitFor(t, "the ledger to go", func() bool {
		tally, err := a.reg.TallyFire("settle", f1.Key)
		return err == nil && !tally.Exists
	})

	run(at.Add(time.Second), -1)
	waitFor(t, "the second afterFire", func() bool { return len(hooks.events("afterFire")) == 2 })
	waitFor(t, "the recovery", func() bool { return len(delivered(peers)) == 2 })
	// delivered lists peer a's before peer b's: the recovery is the one that is not the failure, whichever
	// peer closed which fire
	got := delivered(peers)
	r := got[1]
	if r.ID == n.ID {
		r = got[0]
	}
	if r.Kind != notify.KindRecovered || !r.Resolve || r.DedupKey != n.DedupKey {
		t.Fatalf("recovery %+v after %+v", r, n)
	}
	if got := len(hooks.events("beforeFire")); got != 2 {
		t.Fatalf("%d beforeFire hooks, want 2", got)
	}
}

// Overlapping fires: an accepted item of fire 1 still runs when fire 2 starts (it finds the item running: a
// MISFIRE). Each fire's afterFire comes when its own items have ended: fire 2's first, fire 1's when the
// accepted item's lease ends (heard by another peer).
func TestOverlappingFiresEachEndWithTheirOwnItems(t *testing.T) {
	hooks := newHookSink(t)
	peers := newPeers(t, 2, alertJob(t, hooks))
	a, b := peers[0], peers[1]
	at := time.Now().Truncate(time.Second)
	f1 := dispatch.Fire{Job: "settle", Key: dispatch.FireKey(at, ""), ScheduledAt: at, Source: ejserver.SourceNormal, Expected: 4}
	a.svc.FireStarted(f1, []int{0, 1, 2, 3})
	a.svc.ItemLeft(f1, 0, "e0", at) // accepted: its lease, not this peer, ends it
	for i := 1; i < 4; i++ {
		a.svc.ItemEnded(f1, end(i, dispatch.OutcomeSucceeded))
	}
	f2 := dispatch.Fire{Job: "settle", Key: dispatch.FireKey(at.Add(time.Second), ""), ScheduledAt: at.Add(time.Second),
		Source: ejserver.SourceNormal, Expected: 4}
	a.svc.FireStarted(f2, []int{0, 1, 2, 3})
	a.svc.ItemEnded(f2, end(0, dispatch.OutcomeMisfire))
	for i := 1; i < 4; i++ {
		a.svc.ItemEnded(f2, end(i, dispatch.OutcomeSucceeded))
	}
	waitFor(t, "fire 2's afterFire", func() bool { return len(hooks.events("afterFire")) == 1 })
	if got := hooks.events("afterFire")[0]["fire"]; got != f2.Key {
		t.Fatalf("first afterFire is of fire %v, want fire 2 (%s)", got, f2.Key)
	}
	// the accepted item of fire 1 ends; peer b hears its lease end
	b.svc.LeaseEnded(lease.Lease{ExecutionID: "e0", JobName: "settle", ShardingItem: 0, State: lease.Succeeded,
		Source: string(ejserver.SourceNormal), ScheduledAt: at, StartedAt: at, EndedAt: at.Add(3 * time.Second), Fire: f1.Key})
	waitFor(t, "fire 1's afterFire", func() bool { return len(hooks.events("afterFire")) == 2 })
	after := hooks.events("afterFire")[1]
	if after["fire"] != f1.Key || after["counts"].(map[string]any)["succeeded"] != 4.0 {
		t.Fatalf("fire 1's afterFire %v", after)
	}
	// fire 2 told its MISFIRE once; neither fire failed
	for _, n := range delivered(peers) {
		if n.Kind != notify.KindMisfire {
			t.Fatalf("unexpected notification %+v", n)
		}
	}
}

// A peer dies mid-fire with failover off: once its session is gone, the fire closes with its items LOST.
func TestFireOfAVanishedPeerClosesWithLostItems(t *testing.T) {
	hooks := newHookSink(t)
	peers := newPeers(t, 2, alertJob(t, hooks))
	a, b := peers[0], peers[1]
	at := time.Now().Truncate(time.Second)
	f := dispatch.Fire{Job: "settle", Key: dispatch.FireKey(at, ""), ScheduledAt: at, Source: ejserver.SourceNormal, Expected: 4}
	a.svc.FireStarted(f, []int{0, 1})
	b.svc.FireStarted(f, []int{2, 3})
	a.svc.ItemEnded(f, end(0, dispatch.OutcomeSucceeded))
	a.svc.ItemEnded(f, end(1, dispatch.OutcomeSucceeded))
	b.svc.Stop()
	b.reg.Stop()
	b.reg.Session().Close() // its instance nodes go with its session
	waitFor(t, "afterFire", func() bool { return len(hooks.events("afterFire")) == 1 })
	counts := hooks.events("afterFire")[0]["counts"].(map[string]any)
	if counts["lost"] != 2.0 || counts["succeeded"] != 2.0 {
		t.Fatalf("afterFire counts %v", counts)
	}
	waitFor(t, "the FIRE_FAILED", func() bool { return len(a.out.all()) == 1 })
	if n := a.out.all()[0]; n.Counts.Lost != 2 {
		t.Fatalf("notification %+v", n)
	}
}

func kinds0(ns []notify.Notification) map[notify.Kind]int {
	out := map[notify.Kind]int{}
	for _, n := range ns {
		out[n.Kind]++
	}
	return out
}

// LATE, RUNNING_LONG and LEASE_EXPIRED seen on two peers: one notification each.
func TestSingleEventsOncePerFire(t *testing.T) {
	cfg := alertJob(t, nil)
	cfg.Alerts = ejserver.Alerts{LateAfterMs: 500, RunningLongerThanSeconds: 1, Rules: []ejserver.AlertRule{{
		On: []string{ejserver.EventLate, ejserver.EventRunningLong, ejserver.EventLeaseExpired}, Channels: []string{"ops"}}}}
	peers := newPeers(t, 2, cfg)
	a, b := peers[0], peers[1]
	at := time.Now().Add(-3 * time.Second).Truncate(time.Second)
	f := dispatch.Fire{Job: "settle", Key: dispatch.FireKey(at, ""), ScheduledAt: at, Source: ejserver.SourceNormal, Expected: 4}
	a.svc.FireStarted(f, []int{0, 1})
	b.svc.FireStarted(f, []int{2, 3})
	a.svc.ItemLeft(f, 0, "e0", at.Add(2*time.Second)) // late, and still running after a second
	b.svc.ItemLeft(f, 2, "e2", at.Add(2*time.Second))
	l := lease.Lease{ExecutionID: "e3", JobName: "settle", ShardingItem: 3, State: lease.Expired, Source: string(ejserver.SourceNormal),
		ScheduledAt: at, StartedAt: at, EndedAt: at.Add(time.Second), Fire: f.Key, Cause: "no heartbeat"}
	a.svc.LeaseEnded(l)
	b.svc.LeaseEnded(l)
	waitFor(t, "the three notifications", func() bool { return len(delivered(peers)) >= 3 })
	time.Sleep(500 * time.Millisecond) // a bounded wait for a duplicate that must NOT come
	got := kinds0(delivered(peers))
	if got[notify.KindLate] != 1 || got[notify.KindRunningLong] != 1 || got[notify.KindLeaseExpired] != 1 || len(delivered(peers)) != 3 {
		t.Fatalf("delivered %v", got)
	}
}

// A fire whose other items still run tells its failures so far a minute after the first, then the rest at
// its end (clock injected).
func TestPartialThenTheRest(t *testing.T) {
	clk := clock.NewFake(time.Now())
	cfg := alertJob(t, nil)
	cfg.Alerts = ejserver.Alerts{Rules: []ejserver.AlertRule{{On: []string{ejserver.EventItemFailed}, Channels: []string{"ops"}}}}
	peers := newPeersClock(t, 1, cfg, clk)
	a := peers[0]
	at := clk.Now().Truncate(time.Second)
	f := dispatch.Fire{Job: "settle", Key: dispatch.FireKey(at, ""), ScheduledAt: at, Source: ejserver.SourceNormal, Expected: 4}
	a.svc.FireStarted(f, []int{0, 1, 2, 3})
	a.svc.ItemEnded(f, end(0, dispatch.OutcomeFailed))
	a.svc.ItemEnded(f, end(1, dispatch.OutcomeSucceeded))
	waitFor(t, "the ends in the ledger", func() bool {
		tally, err := a.reg.TallyFire("settle", f.Key)
		return err == nil && tally.Ended == 2
	})
	clk.Advance(PartialAfter + time.Second)
	waitFor(t, "the partial notification", func() bool { return len(a.out.all()) == 1 })
	p := a.out.all()[0]
	if !p.Partial || p.Counts.Failed != 1 || p.Counts.Running != 2 || len(p.Samples) != 1 || p.Samples[0].Item != 0 {
		t.Fatalf("partial %+v", p)
	}
	a.svc.ItemEnded(f, end(2, dispatch.OutcomeFailed))
	a.svc.ItemEnded(f, end(3, dispatch.OutcomeSucceeded))
	waitFor(t, "the rest", func() bool { return len(a.out.all()) == 2 })
	rest := a.out.all()[1]
	if rest.Partial || rest.Counts.Failed != 2 || len(rest.Samples) != 1 || rest.Samples[0].Item != 2 {
		t.Fatalf("the end's notification %+v", rest)
	}
}
