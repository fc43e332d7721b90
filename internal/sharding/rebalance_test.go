package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// An instance that joins a job whose every owner is still there does not flag the job (its fires go on with
// the sharding they have) while urgent reshardings run: the job waits on the rebalance queue and is resharded
// once they end. Before the rebalance queue, the join flagged the job at once, and its next fire waited for a
// resharding queued behind every urgent one.
func TestAJoinedInstanceWaitsForUrgentReshardings(t *testing.T) {
	ns := zktest.Namespace("rebalance")
	a := startNode(t, ns, "10.9.3.1", clock.Real{})
	newJob(t, a, "j", 4)
	waitFor(t, a, "j", "a leads, sharded", func(s *cluster.JobSnapshot) bool { return leads(s) && shardingSettled(s) })
	a.c.urgent.Add(1) // as a fire's resharding under way
	b := startNode(t, ns, "10.9.3.2", clock.Real{})
	bID := b.r.Me().InstanceID
	waitFor(t, a, "j", "b registered", func(s *cluster.JobSnapshot) bool { return s.Online(bID) })
	queued := func() bool {
		a.c.mu.Lock()
		defer a.c.mu.Unlock()
		return a.c.rebalance["j"]
	}
	poll(t, "j on the rebalance queue", queued)
	poll(t, "j taken by the rebalance loop", func() bool { return !queued() })
	if s := a.r.Job("j"); s.Necessary || len(s.MyItems()) != 4 {
		t.Fatalf("j flagged or resharded while urgent reshardings run: necessary %v, a's items %v", s.Necessary, s.MyItems())
	}
	a.c.urgent.Add(-1)
	waitFor(t, a, "j", "b owns items", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && s.Item(2).Owner == bID && s.Item(3).Owner == bID
	})
}

// A leader with no fire of the job held here reshards a job whose item's owner is gone, as a restarted peer's
// new process does once elected in the stopped peer's place: other peers may hold a fire of the job, which an
// instance registered since cannot have. That instance is left out until no such fire can be held (a recheck);
// without the rule it gets the gone owner's item and nobody delivers it for the held fire.
func TestAReshardingWithoutAHeldFireLeavesOutAnInstanceJustRegistered(t *testing.T) {
	ns := zktest.Namespace("unheld")
	clk := clock.NewFake(time.Now())
	a := newNode(t, ns, "10.9.2.1", clk) // its coordinator is not started: nothing reshards on its own
	startRegistry(t, a)
	t.Cleanup(a.stop)
	a.c.cfg.ReshardWait = time.Second
	newJob(t, a, "j", 2)
	waitFor(t, a, "j", "a leads", func(s *cluster.JobSnapshot) bool { return leads(s) })
	x := startNode(t, ns, "10.9.2.2", clock.Real{})
	xID := x.r.Me().InstanceID
	waitFor(t, a, "j", "x registered", func(s *cluster.JobSnapshot) bool { return s.Online(xID) })
	if err := a.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "j", "x owns item 1", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(1).Owner == xID })
	x.stop()
	waitFor(t, a, "j", "x gone", func(s *cluster.JobSnapshot) bool { return !s.Online(xID) })
	time.Sleep(10 * time.Millisecond) // y registers after a by more than the ZooKeeper clock's millisecond
	y := startNode(t, ns, "10.9.2.3", clock.Real{})
	yID := y.r.Me().InstanceID
	waitFor(t, a, "j", "y registered", func(s *cluster.JobSnapshot) bool { return s.Online(yID) })
	reg, err := a.r.InstancesRegistered("j", []string{a.r.Me().InstanceID, yID})
	if err != nil || len(reg) != 2 {
		t.Fatalf("registrations: %v, %v", reg, err)
	}
	// now is such that the earliest fire another peer can hold was handed off HoldMargin after a registered
	// and just before y did (FireLead 0): a holds it, y cannot
	clk.Advance(reg[yID].Add(HoldMargin + a.c.cfg.ReshardWait - time.Millisecond).Sub(clk.Now()))
	if err := a.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	snap := waitFor(t, a, "j", "resharded", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(1).Owner != xID })
	if snap.Item(0).Owner == yID || snap.Item(1).Owner == yID {
		t.Fatalf("y, registered after the fires other peers may hold, got an item: %s, %s", snap.Item(0).Owner, snap.Item(1).Owner)
	}
	if !a.c.recheckPending("j") {
		t.Fatal("no recheck for y")
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, 15*time.Second, cond)
}
