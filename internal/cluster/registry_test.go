package cluster

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

type peer struct {
	s *Session
	r *Registry
}

func startPeer(t testing.TB, ns, id, ip string) *peer {
	t.Helper()
	return startPeerWith(t, ns, id, ip, nil)
}

// startPeerWith is startPeer with before, when not nil, called on the registry before it starts (to add
// listeners that see the first load's events).
func startPeerWith(t testing.TB, ns, id, ip string, before func(*Registry)) *peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Dial(ctx, SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(s, RegistryConfig{Namespace: ns, Identity: Identity{InstanceID: id, ServerIP: ip}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{s: s, r: r}
	t.Cleanup(p.close)
	if before != nil {
		before(r)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *peer) close() {
	p.r.Stop()
	p.s.Close()
}

func testJob(name string, total int) ejserver.JobConfig {
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName = name
	cfg.Cron = "0/5 * * * * ?"
	cfg.ShardingTotalCount = total
	cfg.ShardingItemParameters = "0=A,1=B"
	cfg.Webhook.URL = "http://127.0.0.1:9/hook"
	cfg.Failover = true
	return cfg
}

// createLed creates job (testJob, items items) through p and waits until p leads it.
func createLed(t *testing.T, p *peer, job string, items int) {
	t.Helper()
	if _, err := p.r.CreateJob(testJob(job, items)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, p, job, "its leadership", func(s *JobSnapshot) bool { return s.IsLeader() })
}

// waitJob waits, for at most 15 s, until the peer's snapshot of job satisfies cond.
func waitJob(t *testing.T, p *peer, job string, what string, cond func(*JobSnapshot) bool) *JobSnapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return waitJobUntil(ctx, t, p, job, what, cond)
}

// waitJobUntil waits until the peer's snapshot of job satisfies cond, or fails tb when ctx ends first.
func waitJobUntil(ctx context.Context, tb testing.TB, p *peer, job string, what string, cond func(*JobSnapshot) bool) *JobSnapshot {
	tb.Helper()
	for {
		snap, err := p.r.Wait(ctx, job, cond)
		if err == nil {
			return snap
		}
		if ejserver.IsNotFound(err) && ctx.Err() == nil {
			select { // not loaded yet: the namespace watch brings it
			case <-ctx.Done():
			case <-p.r.w.idleCh():
			}
			continue
		}
		tb.Fatalf("waiting for %s of job %s: %v (last snapshot %+v)", what, job, err, snap)
	}
}

func TestRegistryJobLifecycle(t *testing.T) {
	ns := zktest.Namespace("reg")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	b := startPeer(t, ns, "10.0.0.2@-@2", "10.0.0.2")

	if _, err := a.r.CreateJob(testJob("orders", 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.r.CreateJob(testJob("orders", 3)); ejserver.ErrorCodeOf(err) != ejserver.ECONFLICT {
		t.Fatalf("duplicate create: %v", err)
	}
	both := func(s *JobSnapshot) bool { return len(s.Instances) == 2 && s.Leader != "" && s.Registered && s.Settled }
	sa := waitJob(t, a, "orders", "registration", both)
	sb := waitJob(t, b, "orders", "registration", both)
	if sa.Leader != sb.Leader {
		t.Fatalf("peers disagree on the leader: %q vs %q", sa.Leader, sb.Leader)
	}
	if !sa.Necessary || sa.Config.ShardingTotalCount != 3 || sa.Config.Webhook.URL != "http://127.0.0.1:9/hook" {
		t.Fatalf("snapshot: %+v", sa)
	}
	if sa.Instances["10.0.0.2@-@2"] != "10.0.0.2" || sa.Servers["10.0.0.1"] != ServerEnabled {
		t.Fatalf("instances %v servers %v", sa.Instances, sa.Servers)
	}

	leader, follower := a, b
	if sa.Leader != a.r.me.InstanceID {
		leader, follower = b, a
	}
	// only the leader can commit a sharding
	if err := follower.r.CommitSharding("orders", []string{"x", "y", "z"}, nil); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("follower commit: %v", err)
	}
	owners := []string{"10.0.0.1@-@1", "10.0.0.2@-@2", "10.0.0.1@-@1"}
	if err := leader.r.BeginResharding("orders"); err != nil {
		t.Fatal(err)
	}
	if err := leader.r.CommitSharding("orders", owners, nil); err != nil {
		t.Fatal(err)
	}
	sharded := func(s *JobSnapshot) bool { return !s.Necessary && s.Sharded() && s.Settled }
	sa = waitJob(t, a, "orders", "sharding", sharded)
	waitJob(t, b, "orders", "sharding", sharded)
	if got := sa.MyItems(); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("a's items %v", got)
	}

	// BeginItem is fenced by the owner version and refuses a second run
	run := Running{InstanceID: "10.0.0.1@-@1", ExecutionID: "e1", TaskID: "t1", Source: ejserver.SourceNormal, ScheduledAt: time.Unix(100, 0)}
	if err := a.r.BeginItem("orders", 0, sa.Items[0].OwnerVersion+1, run, true); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("stale owner version: %v", err)
	}
	if err := a.r.BeginItem("orders", 0, sa.Items[0].OwnerVersion, run, true); err != nil {
		t.Fatal(err)
	}
	if err := a.r.BeginItem("orders", 0, sa.Items[0].OwnerVersion, run, true); !errors.Is(err, ErrItemRunning) {
		t.Fatalf("second begin: %v", err)
	}
	got, v, ok, err := a.r.ReadRunning("orders", 0)
	if err != nil || !ok || got.ExecutionID != "e1" || !got.ScheduledAt.Equal(run.ScheduledAt) {
		t.Fatalf("running node: %+v %v %v", got, ok, err)
	}
	if err := a.r.EndItem("orders", 0, v, Completed{ExecutionID: "e1", Success: true}, false); err != nil {
		t.Fatal(err)
	}
	if err := a.r.EndItem("orders", 0, -1, Completed{ExecutionID: "e2", Success: true}, false); err != nil {
		t.Fatal(err) // completed exists now: a set
	}
	details, err := b.r.ItemDetails("orders", 3)
	if err != nil || details[0].Running != nil || details[0].Completed == nil || details[0].Completed.ExecutionID != "e2" {
		t.Fatalf("details %+v %v", details, err)
	}

	// the leader's cache holds what it committed as soon as the commit returns, with the node versions the
	// item fence checks (its next fire must not reshard again, nor be refused, while the watches catch up)
	swapped := []string{"10.0.0.2@-@2", "10.0.0.1@-@1", "10.0.0.2@-@2"}
	if err := leader.r.CommitSharding("orders", swapped, nil); err != nil {
		t.Fatal(err)
	}
	now := leader.r.Job("orders")
	for i, owner := range swapped {
		_, st, err := leader.r.s.get(leader.r.p.ItemNode("orders", i, NodeInstance))
		if err != nil {
			t.Fatal(err)
		}
		if it := now.Item(i); it.Owner != owner || it.OwnerVersion != st.Version || st.Version == 0 {
			t.Fatalf("item %d right after the commit: %+v, node version %d", i, it, st.Version)
		}
	}
	if now.Necessary || !now.Sharded() {
		t.Fatalf("right after the commit: necessary %v sharded %v", now.Necessary, now.Sharded())
	}

	// the commit is fenced: an item begun after the leader looked for running items (under the owner
	// version it read before the commit) fails the whole commit, which changes nothing; an unfenced item
	// (an accepted async run) does not
	owner1 := now.Item(1)
	run1 := Running{InstanceID: owner1.Owner, ExecutionID: "e3", TaskID: "t3", Source: ejserver.SourceNormal, ScheduledAt: time.Unix(200, 0)}
	if err := leader.r.BeginItem("orders", 1, owner1.OwnerVersion, run1, false); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.r.SetNecessary("orders"); err != nil {
		t.Fatal(err)
	}
	waitJob(t, leader, "orders", "necessary", func(s *JobSnapshot) bool { return s.Necessary })
	if err := leader.r.CommitSharding("orders", owners, nil); !errors.Is(err, ErrItemRunning) {
		t.Fatalf("commit while item 1 runs: %v, want ErrItemRunning", err)
	}
	for i, owner := range swapped {
		if data, _, err := leader.r.s.get(leader.r.p.ItemNode("orders", i, NodeInstance)); err != nil || string(data) != owner {
			t.Fatalf("item %d after the refused commit: owner %q (%v), want %q unchanged", i, data, err, owner)
		}
	}
	if ok, _, err := leader.r.s.exists(leader.r.p.Necessary("orders")); err != nil || !ok {
		t.Fatalf("necessary after the refused commit: %v %v, want it kept", ok, err)
	}
	if _, v, ok, err := leader.r.ReadRunning("orders", 1); err != nil || !ok {
		t.Fatalf("item 1's running node after the refused commit: %v %v", ok, err)
	} else if err := leader.r.CommitSharding("orders", owners, map[int]bool{1: true}); err != nil {
		t.Fatalf("commit with item 1 unfenced: %v", err)
	} else if err := leader.r.EndItem("orders", 1, v, Completed{ExecutionID: "e3", Success: true}, false); err != nil {
		t.Fatal(err)
	}

	// shrinking the job removes items >= the new total
	if err := leader.r.CommitSharding("orders", owners[:1], nil); err != nil {
		t.Fatal(err)
	}
	waitJob(t, b, "orders", "shrunk", func(s *JobSnapshot) bool { return len(s.Items) == 1 })

	// an item disabled directly in the registry is seen
	if err := b.r.SetItemDisabled("orders", 0, true); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "orders", "disabled item", func(s *JobSnapshot) bool { return s.Items[0].Disabled && len(s.MyItems()) == 0 })

	// delete: both peers drop the job
	if err := b.r.DeleteJob("orders"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*peer{a, b} {
		deadline := time.Now().Add(10 * time.Second)
		for p.r.Job("orders") != nil {
			if time.Now().After(deadline) {
				t.Fatal("job still loaded after delete")
			}
			<-p.r.w.idleCh()
		}
	}
	if err := b.r.DeleteJob("orders"); !ejserver.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestLeaderReelectionAndDisabledServer(t *testing.T) {
	ns := zktest.Namespace("elect")
	a := startPeer(t, ns, "10.0.1.1@-@1", "10.0.1.1")
	createLed(t, a, "j", 2)
	b := startPeer(t, ns, "10.0.1.2@-@2", "10.0.1.2")
	waitJob(t, b, "j", "b sees a lead", func(s *JobSnapshot) bool { return s.Leader == "10.0.1.1@-@1" && s.Registered })

	// a's server is disabled: a abdicates and b leads
	if err := b.r.SetServerState("j", "10.0.1.1", ServerDisabled); err != nil {
		t.Fatal(err)
	}
	waitJob(t, b, "j", "b leads", func(s *JobSnapshot) bool { return s.IsLeader() })

	// b exits: its ephemeral nodes go at once; a is disabled so nobody leads until it is enabled
	b.close()
	waitJob(t, a, "j", "b gone", func(s *JobSnapshot) bool { return len(s.Instances) == 1 && s.Leader == "" })
	if err := a.r.SetServerState("j", "10.0.1.1", ServerEnabled); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "a leads again", func(s *JobSnapshot) bool { return s.IsLeader() })
}

func TestOperatorRemovesInstanceNode(t *testing.T) {
	ns := zktest.Namespace("oper")
	a := startPeer(t, ns, "10.0.2.1@-@1", "10.0.2.1")
	if _, err := a.r.CreateJob(testJob("j", 1)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "registered", func(s *JobSnapshot) bool { return s.Registered && s.IsLeader() })
	if err := a.s.del(a.r.p.Instance("j", "10.0.2.1@-@1"), -1); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "unregistered", func(s *JobSnapshot) bool { return !s.Registered })
	// it stays off: the registry does not silently re-create it
	if snap := a.r.Job("j"); snap.Registered {
		t.Fatal("re-registered without an enable")
	}
	a.r.Reregister("j")
	waitJob(t, a, "j", "registered again", func(s *JobSnapshot) bool { return s.Registered })
}

func TestFailoverClaimKeepsExecutionID(t *testing.T) {
	ns := zktest.Namespace("fo")
	a := startPeer(t, ns, "10.0.3.1@-@1", "10.0.3.1")
	if _, err := a.r.CreateJob(testJob("j", 2)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "leader", func(s *JobSnapshot) bool { return s.IsLeader() && s.Registered })
	dead := "10.0.3.9@-@9"
	if err := a.r.CommitSharding("j", []string{dead, dead}, nil); err != nil {
		t.Fatal(err)
	}
	// the dead instance left a persistent running node on item 1
	run := Running{InstanceID: dead, ExecutionID: "exec-1", TaskID: "t", Source: ejserver.SourceNormal, ScheduledAt: time.Unix(7, 0)}
	if err := a.s.create(a.r.p.ItemNode("j", 1, NodeRunning), run.encode(), 0); err != nil {
		t.Fatal(err)
	}
	if err := a.r.AddFailoverItems("j", []int{1}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "failover item", func(s *JobSnapshot) bool { return slices.Equal(s.FailoverItems, []int{1}) })
	got, version, err := a.r.ClaimFailover("j", 1)
	if err != nil || got.ExecutionID != "exec-1" || !got.ScheduledAt.Equal(run.ScheduledAt) {
		t.Fatalf("claim: %+v %v", got, err)
	}
	if _, _, err := a.r.ClaimFailover("j", 1); !errors.Is(err, ErrNothingToClaim) {
		t.Fatalf("second claim: %v", err)
	}
	snap := waitJob(t, a, "j", "failover node", func(s *JobSnapshot) bool { return s.Items[1].FailoverTo == "10.0.3.1@-@1" })
	if slices.Contains(snap.MyItems(), 1) {
		t.Fatal("a failed-over item counts as a normal item")
	}
	now, _, _, _ := a.r.ReadRunning("j", 1)
	if now.InstanceID != "10.0.3.1@-@1" || now.ExecutionID != "exec-1" {
		t.Fatalf("running after claim: %+v", now)
	}
	if err := a.r.EndItem("j", 1, version, Completed{ExecutionID: "exec-1", Success: true, Source: ejserver.SourceFailover}, true); err != nil {
		t.Fatal(err)
	}
	d, _ := a.r.ItemDetails("j", 2)
	if d[1].Running != nil || d[1].FailoverTo != "" || d[1].Failovering != "" {
		t.Fatalf("failover state left behind: %+v", d[1])
	}
	dump, err := a.r.Dump("j")
	if err != nil || !strings.HasSuffix(dump[0].Path, "/j") || dump[0].Value != "HTTP" {
		t.Fatalf("dump: %v %v", dump, err)
	}
}

// A leader whose instance node an operator removes steps down, so the peers still on the job get a leader.
func TestRemovedLeaderStepsDown(t *testing.T) {
	ns := zktest.Namespace("rmlead")
	a := startPeer(t, ns, "10.0.4.1@-@1", "10.0.4.1")
	if _, err := a.r.CreateJob(testJob("j", 2)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "a leads", func(s *JobSnapshot) bool { return s.IsLeader() && s.Registered })
	b := startPeer(t, ns, "10.0.4.2@-@2", "10.0.4.2")
	waitJob(t, b, "j", "b registered", func(s *JobSnapshot) bool { return s.Registered && s.Leader == "10.0.4.1@-@1" })
	if err := a.s.del(a.r.p.Instance("j", "10.0.4.1@-@1"), -1); err != nil {
		t.Fatal(err)
	}
	waitJob(t, b, "j", "b leads", func(s *JobSnapshot) bool { return s.IsLeader() && len(s.Instances) == 1 })
}
