package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A leader's own commit is applied to its cache at once (committed), so the watch's read of the new owners
// finds nothing changed: the commit itself reports ItemsChanged, with the new owners in the snapshot by then,
// as the other peers' reads do (the executor runs the items a peer gained after it decided a fire from it).
func TestACommitReportsItsItemsChanged(t *testing.T) {
	ns := zktest.Namespace("commitev")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	b := startPeer(t, ns, "10.0.0.2@-@2", "10.0.0.2")
	if _, err := a.r.CreateJob(testJob("orders", 2)); err != nil {
		t.Fatal(err)
	}
	ready := func(s *JobSnapshot) bool { return len(s.Instances) == 2 && s.Leader != "" && s.Registered && s.Settled }
	sa := waitJob(t, a, "orders", "registration", ready)
	waitJob(t, b, "orders", "registration", ready)
	leader := a
	if sa.Leader != a.r.me.InstanceID {
		leader = b
	}
	commit := func(owners ...string) {
		t.Helper()
		if err := leader.r.BeginResharding("orders"); err != nil {
			t.Fatal(err)
		}
		if err := leader.r.CommitSharding("orders", owners, nil); err != nil {
			t.Fatal(err)
		}
	}
	commit("10.0.0.1@-@1", "10.0.0.2@-@2")
	waitJob(t, leader, "orders", "sharding", func(s *JobSnapshot) bool { return s.Sharded() && s.Settled })

	seen := make(chan []string, 16)
	leader.r.OnEvent(func(ev Event) {
		if ev.Job == "orders" && ev.Kind == ItemsChanged {
			s := leader.r.Job("orders")
			seen <- []string{s.Items[0].Owner, s.Items[1].Owner}
		}
	})
	commit("10.0.0.2@-@2", "10.0.0.1@-@1")
	want := []string{"10.0.0.2@-@2", "10.0.0.1@-@1"}
	for deadline := time.After(5 * time.Second); ; {
		select {
		case got := <-seen:
			if slices.Equal(got, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no ItemsChanged with the owners %v on the leader after its commit", want)
		}
	}
}
