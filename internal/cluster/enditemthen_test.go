package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// endThen runs EndItemThen and waits for its one answer (a second one fails the test).
func endThen(t *testing.T, p *peer, job string, item int, runningVersion int32, done Completed) error {
	t.Helper()
	answers := make(chan error, 2)
	p.r.EndItemThen(job, item, runningVersion, done, false, func(err error) { answers <- err })
	var err error
	select {
	case err = <-answers:
	case <-time.After(30 * time.Second):
		t.Fatalf("item %d's end never answered", item)
	}
	select {
	case again := <-answers:
		t.Fatalf("item %d's end answered twice: %v, then %v", item, err, again)
	case <-time.After(20 * time.Millisecond): // a negative: no second answer follows at once
	}
	return err
}

// EndItemThen writes what EndItem writes: the completed node created on an item's first end (asked first,
// on its own goroutine), set after it (a record), and a running node held by another execution left alone,
// as EndItem's retry does, on a goroutine of its own.
func TestEndItemThenWritesWhatEndItemWrites(t *testing.T) {
	ns := zktest.Namespace("enditemthen")
	a := startPeer(t, ns, "10.0.9.1@-@1", "10.0.9.1")
	snap := soleOwner(t, a, "et", 3)
	completed := func(item int) string {
		t.Helper()
		c, ok, err := a.r.LastCompleted("et", item)
		if err != nil || !ok {
			t.Fatalf("item %d: no completed node: %v %v", item, ok, err)
		}
		return c.ExecutionID
	}
	begin := func(item int, exec string) {
		t.Helper()
		run := Running{InstanceID: a.r.me.InstanceID, ExecutionID: exec, Source: ejserver.SourceNormal, ScheduledAt: time.Unix(100, 0)}
		if err := a.r.BeginItem("et", item, snap.Item(item).OwnerVersion, run, false); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		for item := range 3 {
			exec := fmt.Sprintf("r%d-%d", round, item)
			begin(item, exec)
			if err := endThen(t, a, "et", item, 0, Completed{ExecutionID: exec, Success: true}); err != nil {
				t.Fatalf("round %d item %d: %v", round, item, err)
			}
			if got := completed(item); got != exec {
				t.Fatalf("round %d item %d: completed by %q, want %q", round, item, got, exec)
			}
			if _, _, ok, err := a.r.ReadRunning("et", item); ok || err != nil {
				t.Fatalf("round %d item %d: running node left: %v %v", round, item, ok, err)
			}
		}
	}
	if !a.r.completedKnown("et", 0) {
		t.Fatal("the completed node is not known after its ends")
	}
	// another execution's running node (a failover took the item): not deleted, and the end still lands
	begin(1, "someone-else")
	rewritten := Running{InstanceID: "10.0.9.2@-@1", ExecutionID: "someone-else", Source: ejserver.SourceFailover, ScheduledAt: time.Unix(100, 0)}
	if _, err := a.r.s.set(a.r.p.ItemNode("et", 1, NodeRunning), rewritten.encode(), 0); err != nil {
		t.Fatal(err)
	}
	if err := endThen(t, a, "et", 1, 0, Completed{ExecutionID: "late", Success: true, ScheduledAt: time.Unix(200, 0)}); err != nil {
		t.Fatal(err)
	}
	if got, _, ok, err := a.r.ReadRunning("et", 1); !ok || err != nil || got.ExecutionID != "someone-else" {
		t.Fatalf("another execution's running node: %+v %v %v", got, ok, err)
	}
	if got := completed(1); got != "late" {
		t.Fatalf("completed by %q, want late", got)
	}
}
