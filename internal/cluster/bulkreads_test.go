package cluster

import (
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// The running nodes of many jobs' items are read in one multiRead (a few hundred reads to a request), not one
// get per item: a stopped peer leaves every job with an instance removed, and each job's leader looks for
// orphans in all of them at once.
func TestRunningItemsOfManyJobsTravelTogether(t *testing.T) {
	ns := zktest.Namespace("runningof")
	a := startPeer(t, ns, "10.0.5.1@-@1", "10.0.5.1")
	r1 := soleOwner(t, a, "r1", 3)
	r2 := soleOwner(t, a, "r2", 2)
	begin := func(snap *JobSnapshot, i int, id string) {
		t.Helper()
		run := Running{InstanceID: a.r.me.InstanceID, ExecutionID: id, Source: ejserver.SourceNormal, ScheduledAt: time.Unix(60, 0)}
		if err := a.r.BeginItem(snap.Name, i, snap.Items[i].OwnerVersion, run, false); err != nil {
			t.Fatal(err)
		}
	}
	begin(r1, 0, "e10")
	begin(r1, 2, "e12")
	begin(r2, 1, "e21")
	before := a.s.Requests()
	got, err := a.r.RunningItemsOf(map[string]int{"r1": 3, "r2": 2, "gone": 4})
	after := a.s.Requests()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int]string{"r1": {0: "e10", 2: "e12"}, "r2": {1: "e21"}}
	if len(got) != len(want) {
		t.Errorf("jobs with running items: %v, want r1 and r2", got)
	}
	for job, items := range want {
		if len(got[job]) != len(items) {
			t.Errorf("%s: running items %v, want %v", job, got[job], items)
		}
		for i, id := range items {
			if got[job][i].ExecutionID != id || got[job][i].InstanceID != a.r.me.InstanceID {
				t.Errorf("%s item %d: %+v, want execution %s", job, i, got[job][i], id)
			}
		}
	}
	// the session's counts include the registry's own reads meanwhile: one get per node (9) is what fails
	if n, gets := after.MultiRead-before.MultiRead, after.Get-before.Get; n < 1 || gets >= 9 {
		t.Errorf("%d multiReads and %d gets for 9 running nodes, want one multiRead", n, gets)
	}
}

// A fire resharded at a peer's leaving asks when each of its job's instances registered: one multiRead for
// them all (their nodes' creation times), not an exists each.
func TestInstancesRegisteredInOneRequest(t *testing.T) {
	ns := zktest.Namespace("registeredat")
	a := startPeer(t, ns, "10.0.5.1@-@1", "10.0.5.1")
	b := startPeer(t, ns, "10.0.5.2@-@1", "10.0.5.2")
	if _, err := a.r.CreateJob(testJob("ra", 2)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "ra", "both registered", func(s *JobSnapshot) bool { return s.Online(a.r.me.InstanceID) && s.Online(b.r.me.InstanceID) })
	ids := []string{a.r.me.InstanceID, b.r.me.InstanceID, "10.0.5.9@-@9"}
	before := a.s.Requests()
	got, err := a.r.InstancesRegistered("ra", ids)
	after := a.s.Requests()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:2] {
		_, st, err := a.s.get(a.r.p.Instance("ra", id))
		if err != nil || !got[id].Equal(time.UnixMilli(st.Ctime)) {
			t.Errorf("%s registered at %v, want its node's creation %v (%v)", id, got[id], st, err)
		}
	}
	if _, ok := got[ids[2]]; ok || len(got) != 2 {
		t.Errorf("registration times %v: an instance without a node is left out", got)
	}
	// the session's counts include the registry's own reads meanwhile: an exists per instance (3) is what fails
	if n, exists := after.MultiRead-before.MultiRead, after.Exists-before.Exists; n < 1 || exists >= 3 {
		t.Errorf("%d multiReads and %d exists, want one multiRead", n, exists)
	}
}

// A held fire's resharding asks ZooKeeper when the candidates registered only when this peer cannot tell that
// every instance on the job joined before the fire's cutoff: it saw them join (its first load, an addition, a
// created event, a node removed and made again included) and a resync counts as a join of every job.
func TestInstancesJoinedBeforeIsWhatThePeerSawJoin(t *testing.T) {
	ns := zktest.Namespace("joinedbefore")
	a := startPeer(t, ns, "10.0.6.1@-@1", "10.0.6.1")
	if _, err := a.r.CreateJob(testJob("jb", 2)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "jb", "registered", func(s *JobSnapshot) bool { return s.Online(a.r.me.InstanceID) })
	loaded := time.Now()
	if a.r.InstancesJoinedBefore("jb", loaded.Add(-time.Minute)) {
		t.Fatal("joined before a minute ago, though loaded now")
	}
	if !a.r.InstancesJoinedBefore("jb", loaded.Add(time.Second)) || a.r.InstancesJoinedBefore("nojob", loaded.Add(time.Second)) {
		t.Fatal("the instances found at the load count as joined by then; an unknown job as never")
	}
	// another instance's node, made and then removed and made again: each creation is a join
	other := a.r.p.Instance("jb", "10.0.6.9@-@9")
	for round := range 2 {
		before := time.Now()
		if err := a.s.create(other, instanceData(Identity{InstanceID: "10.0.6.9@-@9", ServerIP: "10.0.6.9"}), 0); err != nil {
			t.Fatal(err)
		}
		waitJob(t, a, "jb", "the other instance seen", func(s *JobSnapshot) bool { return s.Online("10.0.6.9@-@9") })
		if a.r.InstancesJoinedBefore("jb", before) {
			t.Fatalf("round %d: joined before %v, though an instance joined after it", round, before)
		}
		if !a.r.InstancesJoinedBefore("jb", time.Now().Add(time.Second)) {
			t.Fatalf("round %d: not joined by a second from now", round)
		}
		if round == 0 {
			if _, err := a.s.multi(opDelete(other, -1)); err != nil {
				t.Fatal(err)
			}
			waitJob(t, a, "jb", "the other instance gone", func(s *JobSnapshot) bool { return !s.Online("10.0.6.9@-@9") })
		}
	}
	settled := time.Now().Add(time.Second)
	if !a.r.InstancesJoinedBefore("jb", settled) {
		t.Fatal("not joined by a second from now")
	}
	before := a.r.resyncedAt.Load()
	a.r.resyncJobs() // as after a reconnection: what joined meanwhile was not seen
	resynced := a.r.resyncedAt.Load()
	if resynced <= before || a.r.InstancesJoinedBefore("jb", time.Unix(0, resynced).Add(-time.Nanosecond)) {
		t.Fatal("a resync must count as a join of every job")
	}
}
