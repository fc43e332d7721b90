package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
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
	b.exec.Fire("j", at, 0) // not the leader: waits for the resharding
	a.exec.Fire("j", at, 0) // the leader: reshards at the fire, over a and b
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
