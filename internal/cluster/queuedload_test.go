package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestEventsOfAJobWaitingForItsLoadQueueNoReads: the events of a job whose first load waits in the queue (a
// registration's burst) queue nothing but that load and the items' reads (firstLoadReads); once loaded, the
// job holds what the events reported (its instances, leader, servers, items' owners). Without it, each
// config, instance, server, leader and folder node created meanwhile queued a read of its own as well.
func TestEventsOfAJobWaitingForItsLoadQueueNoReads(t *testing.T) {
	ns := zktest.Namespace("queued-load")
	a := startPeerAt(t, zktest.Addr(t), ns, "10.0.0.1@-@1", "10.0.0.1", false)
	b := startPeerWorkers(t, zktest.Addr(t), ns, "10.0.0.2@-@2", "10.0.0.2", false, 1)
	create := func(job string, items int) {
		t.Helper()
		owners := make([]string, items)
		for i := range owners {
			owners[i] = "10.0.0.1@-@1"
		}
		if _, err := a.r.CreateJobSharded(testJob(job, items), owners); err != nil {
			t.Fatal(err)
		}
	}
	create("blocker", 1)
	waitJob(t, b, "blocker", "its load", func(s *JobSnapshot) bool { return s.Registered && s.Settled })

	// b's one worker is held by a refresh of blocker: every key b queues from now on waits
	blocker := b.r.entry("blocker")
	blocker.refreshMu.Lock()
	held := refreshKey{kind: kindConfig, job: "blocker"}
	b.r.w.kick(held)
	deadline := time.Now().Add(10 * time.Second)
	for st, ok := b.r.w.stateOf(held); !ok || st&keyRunning == 0; st, ok = b.r.w.stateOf(held) {
		if time.Now().After(deadline) {
			blocker.refreshMu.Unlock()
			t.Fatal("b's worker did not take the held key")
		}
		time.Sleep(10 * time.Millisecond)
	}
	const jobs = 20
	for i := range jobs {
		job := fmt.Sprintf("job%02d", i)
		create(job, 2)
		waitJob(t, a, job, "its leadership", func(s *JobSnapshot) bool { return s.Registered && s.Settled && s.IsLeader() })
	}
	// the last event b sees: events are applied in order, so b has applied the jobs' events once it lists it
	create("zz-last", 1)
	for b.r.entry("zz-last") == nil {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			blocker.refreshMu.Unlock()
			t.Fatal("b did not see zz-last created")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// of the jobs created while b's worker was held, before zz-last (whose own events may still be coming)
	queued := map[refreshKind]int{}
	b.r.w.mu.Lock()
	for _, q := range b.r.w.lanes {
		for _, k := range q {
			if k.job != "blocker" && k.job != "zz-last" {
				queued[k.kind]++
			}
		}
	}
	b.r.w.mu.Unlock()
	blocker.refreshMu.Unlock()
	// the items' nodes and the sharding folder are read again after the load (firstLoadReads)
	if got, want := countsByKind(queued), fmt.Sprintf("item_instance=%d load=%d sharding=%d", 2*jobs, jobs, jobs); got != want {
		t.Errorf("b queued %q for the jobs created while its worker was held, want %q: their loads and the items' reads", got, want)
	}

	for i := range jobs {
		// a's server node is in ZooKeeper (its registration wrote it): if b's view lacks it below, b lost it
		job := fmt.Sprintf("job%02d", i)
		if ok, _, err := a.r.s.exists(a.r.p.Server(job, "10.0.0.1")); err != nil || !ok {
			t.Fatalf("ZooKeeper holds no servers/10.0.0.1 of %s (err %v): a's registration did not write it; a's view %+v",
				job, err, a.r.Job(job))
		}
		// what a wrote while b's load waited (its leader, instance, server and items' owners) came by events
		// that queued nothing: b knows it from its load
		waitJob(t, b, job, "a's nodes, loaded", func(s *JobSnapshot) bool {
			return s.Registered && s.Settled && s.ItemsSettled && s.Leader == "10.0.0.1@-@1" &&
				s.Instances["10.0.0.1@-@1"] == "10.0.0.1" && s.Servers["10.0.0.1"] != "" && len(s.Items) == 2 &&
				s.Items[0].Owner != "" && s.Items[1].Owner != ""
		})
	}
}
