package cluster

import (
	"fmt"
	"sync"
	"testing"

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
	if _, err := a.r.CreateJob(testJob("j", items)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "leadership", func(s *JobSnapshot) bool { return s.IsLeader() && s.Registered && s.Online(s.Me) })
	owners := make([]string, items)
	for i := range owners {
		owners[i] = a.r.me.InstanceID
	}
	if err := a.r.BeginResharding("j"); err != nil {
		t.Fatal(err)
	}
	if err := a.r.CommitSharding("j", owners, nil); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "sharding", func(s *JobSnapshot) bool { return s.Sharded() && s.Settled })
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
	endAll(a, "first-") // creates them
	if n := a.r.b.refused.Load(); n != 0 {
		t.Fatalf("the first ends refused %d groups", n)
	}
	b := startPeer(t, ns, "10.0.8.2@-@1", "10.0.8.2") // another process: it has written none of them
	waitJob(t, b, "j", "loaded", func(s *JobSnapshot) bool { return s.Sharded() })
	endAll(b, "second-")
	if n := b.r.b.refused.Load(); n != 0 {
		t.Fatalf("%d item ends guessed a create of a completed node that existed", n)
	}
	for i := range items {
		c, ok, err := b.r.LastCompleted("j", i)
		if err != nil || !ok || c.ExecutionID != fmt.Sprint("second-", i) {
			t.Fatalf("item %d completed %+v %v %v", i, c, ok, err)
		}
	}
}
