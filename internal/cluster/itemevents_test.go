package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestItemStateNode(t *testing.T) {
	p := NewPaths("ns")
	cases := []struct {
		path string
		job  string
		item int
		name string
		ok   bool
	}{
		{"/ns/orders/sharding/0/running", "orders", 0, NodeRunning, true},
		{"/ns/orders/sharding/1999/completed", "orders", 1999, NodeCompleted, true},
		{"/ns/running/sharding/3/running", "running", 3, NodeRunning, true},
		{"/ns/running", "", 0, "", false}, // a job named running: its root's event is its presence
		{"/ns/completed/sharding/3", "", 0, "", false},
		{"/ns/orders/sharding/0/instance", "", 0, "", false},
		{"/ns/orders/sharding/0/failover", "", 0, "", false},
		{"/ns/orders/sharding/01/running", "", 0, "", false}, // not a name ElasticJob writes
		{"/ns/orders/sharding/-1/running", "", 0, "", false},
		{"/ns/orders/sharding/x/running", "", 0, "", false},
		{"/ns/orders/sharding//running", "", 0, "", false},
		{"/ns/orders/sharding/0/running/x", "", 0, "", false},
		{"/ns/orders/leader/sharding/0/running", "", 0, "", false},
		{"/ns//sharding/0/running", "", 0, "", false},
		{"/nsx/orders/sharding/0/running", "", 0, "", false}, // another namespace
		{"/ns.ejserver/orders/sharding/0/running", "", 0, "", false},
		{"/other/ns/orders/sharding/0/running", "", 0, "", false},
		{"", "", 0, "", false},
	}
	for _, c := range cases {
		job, item, name, ok := p.itemStateNode(c.path)
		if job != c.job || item != c.item || name != c.name || ok != c.ok {
			t.Errorf("itemStateNode(%q) = %q %d %q %t, want %q %d %q %t", c.path, job, item, name, ok, c.job, c.item, c.name, c.ok)
		}
	}
}

// A path is taken for an item's running or completed node only when it is that node's path, as the rest of
// the registry names and parses it.
func FuzzItemStateNode(f *testing.F) {
	for _, s := range []string{"/ns/j/sharding/0/running", "/ns/j/sharding/12/completed", "/ns/j/sharding/1/instance",
		"/ns/running", "/nsx/j/sharding/0/running", "/ns/j/sharding/007/running", "/ns/a/b/sharding/0/completed"} {
		f.Add(s)
	}
	p := NewPaths("ns")
	f.Fuzz(func(t *testing.T, pth string) {
		job, item, name, ok := p.itemStateNode(pth)
		if !ok {
			return
		}
		if p.ItemNode(job, item, name) != pth || p.JobOf(pth) != job || p.ItemOf(job, pth) != item {
			t.Fatalf("%q parsed as job %q item %d node %q", pth, job, item, name)
		}
		if name != NodeRunning && name != NodeCompleted {
			t.Fatalf("%q parsed as node %q", pth, name)
		}
	})
}

// The events of another peer's items' running and completed nodes are handled where they arrive: they are
// counted, a WaitGone of a running node returns when it goes, and none is queued for the session goroutine.
func TestItemStateEventsAreNotQueued(t *testing.T) {
	ns := zktest.Namespace("itemevents")
	a := startPeer(t, ns, "10.0.9.1@-@1", "10.0.9.1")
	snap := soleOwner(t, a, "ie", 2)
	b := startPeer(t, ns, "10.0.9.2@-@1", "10.0.9.2")
	waitJob(t, b, "ie", "loaded", func(s *JobSnapshot) bool { return s.Sharded() && s.Settled })

	run := Running{InstanceID: a.r.me.InstanceID, ExecutionID: "e1", Source: ejserver.SourceNormal, ScheduledAt: time.Unix(60, 0)}
	if err := a.r.BeginItem("ie", 1, snap.Items[1].OwnerVersion, run, false); err != nil {
		t.Fatal(err)
	}
	running := a.r.p.ItemNode("ie", 1, NodeRunning)
	testutil.Eventually(t, "b to hear of item 1's running node", 5*time.Second, func() bool {
		ok, _, err := b.r.s.exists(running)
		return err == nil && ok
	})
	pushed, events := b.s.queue.pushedCount(), b.s.Requests().Events
	gone := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { gone <- b.r.WaitGone(ctx, []string{running}) }()
	testutil.Eventually(t, "b's WaitGone to wait", 5*time.Second, func() bool {
		b.r.waitMu.Lock()
		defer b.r.waitMu.Unlock()
		return len(b.r.waiters[running]) > 0
	})
	if err := a.r.EndItem("ie", 1, 0, Completed{ExecutionID: "e1", Success: true}, false); err != nil {
		t.Fatal(err)
	}
	if err := <-gone; err != nil {
		t.Fatalf("WaitGone of an item's running node that went: %v", err)
	}
	testutil.Eventually(t, "b to hear of item 1's completed node", 5*time.Second, func() bool { return b.r.completedKnown("ie", 1) })
	// the running node's deletion and the completed node's creation
	if n := b.s.Requests().Events - events; n < 2 {
		t.Errorf("b counted %d events of item 1's end, want at least 2", n)
	}
	if n := b.s.queue.pushedCount() - pushed; n != 0 {
		t.Errorf("%d events of item 1's nodes were queued for the session goroutine", n)
	}
}
