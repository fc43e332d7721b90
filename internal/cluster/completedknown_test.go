package cluster

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A peer ending items that ran before on another peer (or on its own previous process) sets their completed
// nodes: it does not guess a create that fails. A failed op fails its whole shared multi, and the batcher
// sent every group batched with it again, one failure at a time: a restarted peer at 100,000 jobs had
// 20,000 item writes queued and fell behind its fires by 1 s every 4 s.
func TestEndingAnItemThatRanElsewhereRefusesNoOp(t *testing.T) {
	ns := zktest.Namespace("completedknown")
	a := startPeer(t, ns, "10.0.8.1@-@1", "10.0.8.1")
	const items = 40
	soleOwner(t, a, "j", items)
	endAll := func(p *peer, exec string) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, items)
		for i := range items {
			wg.Go(func() {
				if err := p.r.EndItem("j", i, -1, Completed{ExecutionID: fmt.Sprint(exec, i), Success: true}, false); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	// refused counts every group the peer's batcher had refused since it started: its registration's may
	// be among them (servers/{ip} created meanwhile), so only the ends' own are counted
	refused := a.r.b.refused.Load()
	endAll(a, "first-") // creates them
	if n := a.r.b.refused.Load() - refused; n != 0 {
		t.Fatalf("the first ends refused %d groups", n)
	}
	b := startPeer(t, ns, "10.0.8.2@-@1", "10.0.8.2") // another process: it has written none of them
	waitJob(t, b, "j", "loaded", func(s *JobSnapshot) bool { return s.Sharded() })
	refused = b.r.b.refused.Load()
	endAll(b, "second-")
	if n := b.r.b.refused.Load() - refused; n != 0 {
		t.Fatalf("%d item ends guessed a create of a completed node that existed", n)
	}
	for i := range items {
		c, ok, err := b.r.LastCompleted("j", i)
		if err != nil || !ok || c.ExecutionID != fmt.Sprint("second-", i) {
			t.Fatalf("item %d completed %+v %v %v", i, c, ok, err)
		}
	}
}

// soleOwner creates job with items on peer p, which leads it, and shards every item to p; it returns the
// snapshot that shows that sharding.
func soleOwner(t *testing.T, p *peer, job string, items int) *JobSnapshot {
	t.Helper()
	if _, err := p.r.CreateJob(testJob(job, items)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, p, job, "leadership", func(s *JobSnapshot) bool { return s.IsLeader() && s.Registered && s.Online(s.Me) })
	if err := p.r.BeginResharding(job); err != nil {
		t.Fatal(err)
	}
	if err := p.r.CommitSharding(job, slices.Repeat([]string{p.r.me.InstanceID}, items), nil); err != nil {
		t.Fatal(err)
	}
	return waitJob(t, p, job, "sharding", func(s *JobSnapshot) bool { return s.Sharded() && s.Settled })
}

// A peer learns from the recursive watch's events that an item's completed node exists, so its first end of
// an item another peer ran asks ZooKeeper nothing first (completedAbsent), and that it went.
func TestAnItemsCompletedNodeIsKnownFromItsEvents(t *testing.T) {
	ns := zktest.Namespace("completedevents")
	a := startPeer(t, ns, "10.0.8.1@-@1", "10.0.8.1")
	soleOwner(t, a, "ce", 2)
	b := startPeer(t, ns, "10.0.8.2@-@1", "10.0.8.2")
	waitJob(t, b, "ce", "loaded", func(s *JobSnapshot) bool { return s.Sharded() })
	if err := a.r.EndItem("ce", 1, -1, Completed{ExecutionID: "first", Success: true}, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "b to hear of item 1's completed node", 5*time.Second, func() bool { return b.r.completedKnown("ce", 1) })
	if b.r.completedKnown("ce", 0) {
		t.Fatal("item 0, never completed, is taken for completed")
	}
	if absent, err := b.r.completedAbsent("ce", 1); absent || err != nil {
		t.Fatalf("b's first end of item 1 would create its completed node: %v %v", absent, err)
	}
	if err := a.r.s.del(a.r.p.ItemNode("ce", 1, NodeCompleted), -1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "b to hear the node went", 5*time.Second, func() bool { return !b.r.completedKnown("ce", 1) })
}
