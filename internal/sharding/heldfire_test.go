package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A stopped peer's item holds the fire; before the job's leader reshards at it, a restarted peer's new process
// registers on the job. That process does not have the fire (it was not running when the fire was handed off),
// so the resharding gives the items only to the instances that hold it: every item of the fire is delivered
// once. The newcomer gets its item at a resharding flagged once no fire it lacks can be held any more
// (RecheckAt). Without Holders the newcomer gets an item of the held fire, and nobody delivers it.
func TestAHeldFiresItemsGoToTheInstancesHoldingIt(t *testing.T) {
	recv, url := newDeliveries(t)
	ns := zktest.Namespace("heldfire")
	a, b, x, ownsOne := threePeers(t, ns, url)
	a.c.cfg.ReshardWait = time.Second // the newcomer is looked at again HoldMargin + 1 s after it registered
	xID := x.r.Me().InstanceID
	x.exec.Drain(time.Second)
	x.node.stop()
	for _, p := range []*firePeer{a, b} {
		waitFor(t, p.node, "j", "x's instance gone, its item not resharded", func(s *cluster.JobSnapshot) bool { return !s.Online(xID) && ownsOne(s) })
		pollPeer(t, p.r.PeerGone, xID)
	}
	y := startFirePeer(t, ns, "10.9.0.4") // x restarted: a new instance, last in the strategy's order
	yID := y.r.Me().InstanceID
	for _, p := range []*firePeer{a, b} {
		waitFor(t, p.node, "j", "y registered, x's item not resharded", func(s *cluster.JobSnapshot) bool { return s.Online(yID) && ownsOne(s) })
	}

	reg, err := a.r.InstancesRegistered("j", []string{yID})
	if err != nil || reg[yID].IsZero() {
		t.Fatalf("y's registration: %v, %v", reg, err)
	}
	// a fire handed off (FireLead 0) just before y registered, give or take HoldMargin: a and b, registered
	// earlier, hold it; y does not
	at := reg[yID].Add(HoldMargin - time.Millisecond)
	b.exec.Fire(dispatch.Due{Job: "j", At: at}) // not the leader: waits for the resharding
	a.exec.Fire(dispatch.Due{Job: "j", At: at}) // the leader: reshards at the fire, over a and b
	recv.await(t, 3, at)
	a.exec.Drain(5 * time.Second)
	b.exec.Drain(5 * time.Second)
	recv.eachOnce(t)

	if err := a.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b.node, "j", "y owns an item", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && (s.Item(0).Owner == yID || s.Item(1).Owner == yID || s.Item(2).Owner == yID)
	})
}

// While a job waits for the recheck of an instance its held-fire resharding left out, that instance's
// registration does not flag the job (the slower peers may still hold the fire); the recheck, once due, does.
func TestALeftOutInstanceGetsItemsAtItsRecheckOnly(t *testing.T) {
	ns := zktest.Namespace("recheck")
	a := startNode(t, ns, "10.9.1.1", clock.Real{})
	for _, job := range []string{"j", "k1", "k2"} {
		newJob(t, a, job, 2)
		waitFor(t, a, job, "a leads, sharded", func(s *cluster.JobSnapshot) bool { return leads(s) && shardingSettled(s) })
	}
	a.c.recheckLater("j", time.Now().Add(time.Hour)) // as a resharding at a held fire that left b out does
	b := startNode(t, ns, "10.9.1.2", clock.Real{})
	bID := b.r.Me().InstanceID
	waitFor(t, a, "j", "b registered", func(s *cluster.JobSnapshot) bool { return s.Online(bID) })
	for _, job := range []string{"k1", "k2"} { // b's registration gives b an item of the jobs without a recheck
		waitFor(t, a, job, "b owns an item", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(1).Owner == bID })
	}
	a.c.queueCheck("j") // as b's registration did
	// the flag loop handles its queue in rounds: once a job flagged after j's check is resharded, and then
	// another flagged after that, j's round is over
	for _, job := range []string{"k1", "k2"} {
		v := a.r.Job(job).Item(0).OwnerVersion
		a.c.queueFlag(job)
		waitFor(t, a, job, "resharded again", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(0).OwnerVersion > v })
	}
	if s := a.r.Job("j"); s.Necessary || s.Item(0).Owner == bID || s.Item(1).Owner == bID {
		t.Fatalf("j flagged or resharded for b before its recheck: necessary %v, owners %s, %s", s.Necessary, s.Item(0).Owner, s.Item(1).Owner)
	}
	a.c.mu.Lock()
	a.c.rechecks["j"] = time.Now() // due
	a.c.mu.Unlock()
	a.c.recheck <- struct{}{}
	waitFor(t, a, "j", "b owns an item after the recheck", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(1).Owner == bID })
}
