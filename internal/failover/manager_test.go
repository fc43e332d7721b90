package failover

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// runner records what the manager hands over.
type runner struct {
	mu   sync.Mutex
	runs map[int]cluster.Running
	ch   chan int
}

func (r *runner) RunFailover(_ string, item int, run cluster.Running, _ int32) {
	r.mu.Lock()
	r.runs[item] = run
	r.mu.Unlock()
	r.ch <- item
}

type peer struct {
	s   *cluster.Session
	r   *cluster.Registry
	m   *Manager
	run *runner
}

func startPeer(t *testing.T, ns, ip string) *peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns, Logger: quiet,
		Identity: cluster.Identity{InstanceID: ip + "@-@1", ServerIP: ip}})
	if err != nil {
		t.Fatal(err)
	}
	run := &runner{runs: map[int]cluster.Running{}, ch: make(chan int, 16)}
	m := NewManager(ManagerConfig{Registry: r, Runner: run, Logger: quiet})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p := &peer{s: s, r: r, m: m, run: run}
	t.Cleanup(p.stop)
	return p
}

func (p *peer) stop() {
	p.m.Stop()
	p.r.Stop()
	p.s.Close()
}

func waitSnap(t *testing.T, p *peer, what string, cond func(*cluster.JobSnapshot) bool) *cluster.JobSnapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	snap, err := p.r.Wait(ctx, "j", cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return snap
}

func TestOrphansOfAVanishedPeerAreClaimedWithTheirExecutionID(t *testing.T) {
	ns := zktest.Namespace("fo")
	a := startPeer(t, ns, "10.4.0.1")
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Failover, cfg.Webhook.URL = "j", 3, true, "http://127.0.0.1:9/x"
	if _, err := a.r.CreateJob(cfg); err != nil {
		t.Fatal(err)
	}
	waitSnap(t, a, "a leads", func(s *cluster.JobSnapshot) bool { return s.IsLeader() && len(s.Instances) == 1 })
	b := startPeer(t, ns, "10.4.0.2")
	waitSnap(t, a, "b registered", func(s *cluster.JobSnapshot) bool { return len(s.Instances) == 2 })
	if err := a.r.CommitSharding("j", []string{"10.4.0.1@-@1", "10.4.0.2@-@1", "10.4.0.2@-@1"}, nil); err != nil {
		t.Fatal(err)
	}
	snap := waitSnap(t, b, "sharded", func(s *cluster.JobSnapshot) bool { return s.Sharded() && !s.Necessary && s.Settled })
	// b runs item 1 (in flight) but not item 2 when it dies
	if err := b.r.BeginItem("j", 1, snap.Item(1).OwnerVersion, cluster.Running{InstanceID: "10.4.0.2@-@1", ExecutionID: "exec-b1",
		Source: ejserver.SourceNormal, ScheduledAt: time.Unix(50, 0)}, true); err != nil {
		t.Fatal(err)
	}
	b.stop()
	select {
	case item := <-a.run.ch:
		if item != 1 {
			t.Fatalf("claimed item %d", item)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the orphan was not claimed")
	}
	a.run.mu.Lock()
	run := a.run.runs[1]
	a.run.mu.Unlock()
	if run.ExecutionID != "exec-b1" || !run.ScheduledAt.Equal(time.Unix(50, 0)) {
		t.Fatalf("claimed %+v", run)
	}
	select {
	case item := <-a.run.ch:
		t.Fatalf("item %d was not running but was failed over", item)
	case <-time.After(500 * time.Millisecond):
	}
	after := waitSnap(t, a, "claimed", func(s *cluster.JobSnapshot) bool { return s.Item(1).FailoverTo == "10.4.0.1@-@1" })
	if len(after.FailoverItems) != 0 {
		t.Fatalf("failover items left: %v", after.FailoverItems)
	}
}

// lostHistory is a history store and writer for Lost: it holds the records written.
type lostHistory struct {
	mu   sync.Mutex
	recs map[string]ejserver.Execution
}

func (h *lostHistory) GetExecution(_ context.Context, id string) (ejserver.Execution, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.recs[id]; ok {
		return e, nil
	}
	return ejserver.Execution{}, ejserver.Errorf(ejserver.ENOTFOUND, "no execution %s", id)
}

func (h *lostHistory) EnqueueCommitted(_ context.Context, e ejserver.Execution) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs[e.ID] = e
	return nil
}

func (h *lostHistory) get(id string) (ejserver.Execution, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.recs[id]
	return e, ok
}

// In a job whose failover is off, the executions a vanished peer left running are recorded as ended with an
// unknown outcome and their running nodes cleared: the history never shows them RUNNING for ever, and the
// job's resharding does not wait for them. An execution whose end the history has already is left alone.
// Found by the nemesis soak (docs/reliability.md).
func TestLostExecutionsOfAVanishedPeerAreRecordedWhenFailoverIsOff(t *testing.T) {
	ns := zktest.Namespace("lost")
	a := startPeer(t, ns, "10.5.0.1")
	hist := &lostHistory{recs: map[string]ejserver.Execution{
		"exec-b2": {ID: "exec-b2", JobName: "j", ShardingItem: 2, StartedAt: time.Unix(60, 0), CompletedAt: time.Unix(61, 0), Success: true},
	}}
	a.m.cfg.Lost = NewLost(LostConfig{History: hist, Recorder: hist, Me: cluster.Identity{InstanceID: "10.5.0.1@-@1"}, Logger: quiet})
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Failover, cfg.Webhook.URL = "j", 3, false, "http://127.0.0.1:9/x"
	if _, err := a.r.CreateJob(cfg); err != nil {
		t.Fatal(err)
	}
	waitSnap(t, a, "a leads", func(s *cluster.JobSnapshot) bool { return s.IsLeader() && len(s.Instances) == 1 })
	b := startPeer(t, ns, "10.5.0.2")
	waitSnap(t, a, "b registered", func(s *cluster.JobSnapshot) bool { return len(s.Instances) == 2 })
	if err := a.r.CommitSharding("j", []string{"10.5.0.1@-@1", "10.5.0.2@-@1", "10.5.0.2@-@1"}, nil); err != nil {
		t.Fatal(err)
	}
	snap := waitSnap(t, b, "sharded", func(s *cluster.JobSnapshot) bool { return s.Sharded() && !s.Necessary && s.Settled })
	// b runs item 1 (nothing recorded yet) and item 2 (its end recorded, not yet acknowledged) when it dies
	for item, id := range map[int]string{1: "exec-b1", 2: "exec-b2"} {
		if err := b.r.BeginItem("j", item, snap.Item(item).OwnerVersion, cluster.Running{InstanceID: "10.5.0.2@-@1", ExecutionID: id,
			TaskID: "task-b", Source: ejserver.SourceNormal, ScheduledAt: time.Unix(50, 0)}, true); err != nil {
			t.Fatal(err)
		}
	}
	b.stop()
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, _, ok1, err1 := a.r.ReadRunning("j", 1)
		_, _, ok2, err2 := a.r.ReadRunning("j", 2)
		if err1 == nil && err2 == nil && !ok1 && !ok2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the running nodes of the vanished peer were not cleared")
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
	lost, ok := hist.get("exec-b1")
	if !ok || !lost.Done() || lost.Success || lost.InstanceID != "10.5.0.2@-@1" || lost.ShardingItem != 1 ||
		!lost.ScheduledAt.Equal(time.Unix(50, 0)) || !strings.Contains(lost.FailureCause, "outcome unknown") {
		t.Fatalf("lost execution recorded as %+v", lost)
	}
	if kept, _ := hist.get("exec-b2"); !kept.Success || !kept.CompletedAt.Equal(time.Unix(61, 0)) {
		t.Fatalf("an execution whose end was recorded was overwritten: %+v", kept)
	}
	select {
	case item := <-a.run.ch:
		t.Fatalf("item %d failed over in a job whose failover is off", item)
	default:
	}
}

// fakeRegistry feeds the manager events and records what it asks.
type fakeRegistry struct {
	mu      sync.Mutex
	snap    *cluster.JobSnapshot
	leader  bool
	onEvent func(cluster.Event)
	cleared chan int
	// inZK: the instances ZooKeeper has (InstanceOnline); asked counts the questions
	inZK  map[string]bool
	asked int
}

func (f *fakeRegistry) InstanceOnline(_, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	return f.inZK[id], nil
}

func (f *fakeRegistry) Job(string) *cluster.JobSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}
func (f *fakeRegistry) IsLeader(string) bool           { f.mu.Lock(); defer f.mu.Unlock(); return f.leader }
func (f *fakeRegistry) Lease() bool                    { return true }
func (f *fakeRegistry) OnEvent(fn func(cluster.Event)) { f.onEvent = fn }
func (f *fakeRegistry) RunningItemsOf(map[string]int) (map[string]map[int]cluster.Running, error) {
	return map[string]map[int]cluster.Running{}, nil
}
func (f *fakeRegistry) AddFailoverItems(string, []int) error { return nil }
func (f *fakeRegistry) ClearFailoverItems(_ string, n int) error {
	f.cleared <- n
	return nil
}
func (f *fakeRegistry) ReadRunning(string, int) (cluster.Running, int32, bool, error) {
	return cluster.Running{}, 0, false, nil
}
func (f *fakeRegistry) EndStaleRunning(string, int, int32, cluster.Running, time.Time) error {
	return nil
}
func (f *fakeRegistry) ClaimFailover(string, int) (cluster.Running, int32, error) {
	return cluster.Running{}, -1, cluster.ErrNothingToClaim
}

func TestSwitchingFailoverOffClearsPendingState(t *testing.T) {
	prev := ejserver.DefaultJobConfig()
	prev.Failover, prev.ShardingTotalCount = true, 4
	cur := prev
	cur.Failover = false
	reg := &fakeRegistry{snap: &cluster.JobSnapshot{Name: "j", Config: &cur, Me: "me", Leader: "me", FailoverItems: []int{1, 2}},
		leader: true, cleared: make(chan int, 1)}
	m := NewManager(ManagerConfig{Registry: reg, Runner: &runner{runs: map[int]cluster.Running{}, ch: make(chan int, 1)}, Logger: quiet})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	reg.onEvent(cluster.Event{Kind: cluster.JobUpdated, Job: "j", PrevConfig: &prev})
	select {
	case n := <-reg.cleared:
		if n != 4 {
			t.Fatalf("cleared %d items", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("switching failover off did not clear its state")
	}
	// only the leader clears, and only on the on->off change
	reg.mu.Lock()
	reg.leader = false
	reg.mu.Unlock()
	reg.onEvent(cluster.Event{Kind: cluster.JobUpdated, Job: "j", PrevConfig: &prev})
	reg.onEvent(cluster.Event{Kind: cluster.JobUpdated, Job: "j", PrevConfig: &cur})
	select {
	case <-reg.cleared:
		t.Fatal("cleared without leading")
	case <-time.After(300 * time.Millisecond):
	}
}

// barrierRegistry's claims wait until the test releases them.
type barrierRegistry struct {
	fakeRegistry
	arrived chan struct{}
	release chan struct{}
}

func (b *barrierRegistry) ClaimFailover(job string, item int) (cluster.Running, int32, error) {
	b.arrived <- struct{}{}
	select {
	case <-b.release:
		return cluster.Running{InstanceID: "me", ExecutionID: job}, 1, nil
	case <-time.After(10 * time.Second):
		return cluster.Running{}, -1, cluster.ErrNothingToClaim
	}
}

// A peer that vanished with items of many jobs has them claimed together, not one job after another: the
// claims of 8 jobs are all in flight at once (handled one at a time, the first would wait for the others
// forever).
func TestOrphansOfManyJobsAreClaimedTogether(t *testing.T) {
	cfg := ejserver.DefaultJobConfig()
	cfg.Failover, cfg.ShardingTotalCount = true, 1
	const jobs = 8
	reg := &barrierRegistry{arrived: make(chan struct{}, jobs), release: make(chan struct{})}
	reg.snap = &cluster.JobSnapshot{Name: "j", Config: &cfg, Me: "me", Registered: true, FailoverItems: []int{0}}
	run := &runner{runs: map[int]cluster.Running{}, ch: make(chan int, jobs)}
	m := NewManager(ManagerConfig{Registry: reg, Runner: run, Logger: quiet})
	for i := range jobs { // queued before the loop starts, as a burst of events would be
		m.queue(m.claim, fmt.Sprintf("job%d", i))
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	for i := range jobs {
		select {
		case <-reg.arrived:
		case <-time.After(5 * time.Second):
			close(reg.release)
			t.Fatalf("only %d of %d claims in flight together", i, jobs)
		}
	}
	close(reg.release)
	for range jobs {
		select {
		case <-run.ch:
		case <-time.After(5 * time.Second):
			t.Fatal("a claimed item was not handed to the runner")
		}
	}
}

// An instance missing from the leader's snapshot is gone only once ZooKeeper confirms it: on a job just
// created, the other peers register after the leader's read, and their running items must not be failed over
// or recorded as lost. ZooKeeper is asked once per instance and look, and never for one the snapshot lists.
func TestGoneFromAsksZooKeeperAboutInstancesTheSnapshotLacks(t *testing.T) {
	reg := &fakeRegistry{inZK: map[string]bool{"late@-@2": true, "known@-@1": true}}
	m := NewManager(ManagerConfig{Registry: reg})
	snap := &cluster.JobSnapshot{Name: "j", Instances: map[string]string{"known@-@1": "10.0.0.1"}}
	gone := m.goneFrom(snap)
	for _, tt := range []struct {
		id   string
		want bool
	}{{"known@-@1", false}, {"late@-@2", false}, {"dead@-@3", true}, {"late@-@2", false}, {"dead@-@3", true}} {
		if got, err := gone(tt.id); err != nil || got != tt.want {
			t.Fatalf("gone(%s) = %v, %v; want %v", tt.id, got, err, tt.want)
		}
	}
	if reg.asked != 2 {
		t.Fatalf("ZooKeeper asked %d times, want 2 (once for each instance the snapshot lacks)", reg.asked)
	}
}

// BenchmarkDetectOneJob is a wake of the detect loop for one job (a new leadership's LeaderChanged: a peer
// registering on 100,000 jobs, or taking a stopped peer's leaderships, has thousands of them).
func BenchmarkDetectOneJob(b *testing.B) {
	cfg := ejserver.DefaultJobConfig()
	cfg.ShardingTotalCount = 1
	reg := &fakeRegistry{leader: true, snap: &cluster.JobSnapshot{Name: "j", Config: &cfg, Me: "me", Registered: true}}
	m := NewManager(ManagerConfig{Registry: reg, Runner: &runner{}, Logger: quiet})
	b.ReportAllocs()
	for b.Loop() {
		m.queue(m.detect, "j")
		if m.detectAll() {
			b.Fatal("detect failed")
		}
	}
}
