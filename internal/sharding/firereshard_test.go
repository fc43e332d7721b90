package sharding

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// stepCounting counts the steps of the reshardings a coordinator makes through its registry.
type stepCounting struct {
	*cluster.Registry
	reads, begins, commits atomic.Int32
}

func (r *stepCounting) RunningItems(job string, n int) (map[int]cluster.Running, error) {
	r.reads.Add(1)
	return r.Registry.RunningItems(job, n)
}

func (r *stepCounting) BeginResharding(job string) error {
	r.begins.Add(1)
	return r.Registry.BeginResharding(job)
}

func (r *stepCounting) CommitSharding(job string, owners []string, unfenced map[int]bool) error {
	r.commits.Add(1)
	return r.Registry.CommitSharding(job, owners, unfenced)
}

// A fire's resharding with no item running is one write: the commit, fenced against a run, with no read of the
// running items and no processing node before it. A stopped peer's survivors reshard thousands of jobs at their
// fires, each behind the writes queued for ZooKeeper; three steps one after the other made a resharding take up
// to 23 s at 100,000 jobs, and the fires of those jobs waited. With an item running the fence refuses, and the
// fire's resharding waits for the run to end as ElasticJob's leader does, then commits.
func TestAFiresReshardingIsOneCommit(t *testing.T) {
	ns := zktest.Namespace("firecommit")
	a := newNode(t, ns, "10.9.14.1", clock.Real{})
	reg := &stepCounting{Registry: a.r}
	// always near a fire: a departure's resharding is left to the fire
	a.c = NewCoordinator(CoordinatorConfig{Registry: reg, Logger: quiet, ServerGC: time.Hour, ReconcileTick: time.Hour,
		Firing: func(string) bool { return true }, CommitSettle: noSettle})
	if err := a.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	startRegistry(t, a)
	t.Cleanup(a.stop)
	b, bID := twoOwners(t, a, ns, "10.9.14.2")

	b.stop()
	waitFor(t, a, "j", "flagged", func(s *cluster.JobSnapshot) bool { return s.Necessary && !s.Online(bID) })
	reads, begins, commits := reg.reads.Load(), reg.begins.Load(), reg.commits.Load()
	if err := a.c.Reshard(context.Background(), "j"); err != nil { // the fire
		t.Fatal(err)
	}
	if d := [3]int32{reg.reads.Load() - reads, reg.begins.Load() - begins, reg.commits.Load() - commits}; d != [3]int32{0, 0, 1} {
		t.Errorf("the fire's resharding read the running items %d times, created processing %d times and committed %d times; want 0, 0, 1", d[0], d[1], d[2])
	}
	waitFor(t, a, "j", "item 1 resharded to a", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && s.Item(1).Owner == s.Me && s.Item(0).Owner == s.Me
	})

	// an item running: the commit's fence refuses, and the fire waits for the run
	c := startNode(t, ns, "10.9.14.3", clock.Real{})
	cID := c.r.Me().InstanceID
	waitFor(t, a, "j", "c registered", func(s *cluster.JobSnapshot) bool { return s.Online(cID) })
	snap := a.r.Job("j")
	run := cluster.Running{InstanceID: snap.Me, ExecutionID: "e1", TaskID: "t1", Source: ejserver.SourceNormal, ScheduledAt: time.Unix(100, 0)}
	if err := a.r.BeginItem("j", 0, snap.Item(0).OwnerVersion, run, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.r.SetNecessary("j"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "j", "flagged again", func(s *cluster.JobSnapshot) bool { return s.Necessary })
	reads, begins = reg.reads.Load(), reg.begins.Load()
	done := make(chan error, 1)
	go func() { done <- a.c.Reshard(context.Background(), "j") }()
	select {
	case err := <-done:
		t.Fatalf("the fire's resharding returned (%v) while item 0 ran", err)
	case <-time.After(500 * time.Millisecond):
	}
	if owner := a.r.Job("j").Item(1).Owner; owner != snap.Me {
		t.Fatalf("item 1 moved to %s while item 0 ran", owner)
	}
	if err := endRun(a.r, "j", 0, run); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the fire's resharding did not end after the item did")
	}
	if reg.reads.Load() == reads || reg.begins.Load() == begins {
		t.Error("the fire's resharding met a running item without waiting for it (no read of the running items, no processing node)")
	}
	waitFor(t, a, "j", "resharded over a and c", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && s.Online(cID) && (s.Item(0).Owner == cID || s.Item(1).Owner == cID)
	})
}

// endRun ends run, item's run on r's peer, as a success.
func endRun(r *cluster.Registry, job string, item int, run cluster.Running) error {
	_, v, _, err := r.ReadRunning(job, item)
	if err != nil {
		return err
	}
	return r.EndItem(job, item, v, cluster.Completed{ExecutionID: run.ExecutionID, Success: true, ScheduledAt: run.ScheduledAt}, false)
}
