package cluster

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// An accepted item's end is written with its lease's: the multi that moves the lease to the ended folder
// releases the item's running node and writes its completed node, naming the lease's fire. Written apart, a
// completion whose answer was lost (its peer frozen after ZooKeeper applied the lease's end) left the item
// neither running nor completed, and a peer that gained the item in a resharding ran that fire again: the
// nemesis soak's double delivery (seed 20).
func TestAnEndedLeaseRecordsItsItemsEndInTheSameWrite(t *testing.T) {
	ns := zktest.Namespace("leaseend")
	a := startPeer(t, ns, "10.0.9.1@-@1", "10.0.9.1")
	const items = 3
	snap := soleOwner(t, a, "j", items)
	fire := time.Date(2026, 11, 29, 10, 41, 0, 0, time.UTC)

	// accept begins item i as the executor does (its running node, then the lease replacing it when
	// monitored) and returns the lease ended as a completion ends it
	accept := func(i int, id string, monitored bool) lease.Lease {
		t.Helper()
		run := Running{InstanceID: a.r.me.InstanceID, ExecutionID: id, TaskID: "t", Source: ejserver.SourceNormal, ScheduledAt: fire}
		version := int32(-1)
		if monitored {
			if err := a.r.BeginItem("j", i, snap.Items[i].OwnerVersion, run, false); err != nil {
				t.Fatal(err)
			}
			_, version, _, _ = a.r.ReadRunning("j", i)
		}
		l := lease.Lease{ExecutionID: id, JobName: "j", ShardingItem: i, ShardingTotalCount: items, TaskID: "t",
			Source: string(ejserver.SourceNormal), ScheduledAt: fire, InstanceID: a.r.me.InstanceID, State: lease.Running,
			Attempt: 1, StatusCode: 202}
		if err := a.r.AcceptItem(l, run, version, monitored); err != nil {
			t.Fatal(err)
		}
		l.State, l.EndedAt, l.StatusCode = lease.Succeeded, fire.Add(5*time.Second), 200
		return l
	}
	// ended writes l's end and checks what another process reads of its item then
	ended := func(l lease.Lease, wantItemEnded bool, wantCompleted string) {
		t.Helper()
		itemEnded, err := a.r.WriteLease(l, 0, nil)
		if err != nil || itemEnded != wantItemEnded {
			t.Fatalf("item %d: WriteLease = %v, %v; want item ended %v", l.ShardingItem, itemEnded, err, wantItemEnded)
		}
		if _, _, ok, err := a.r.ReadRunning("j", l.ShardingItem); ok || err != nil {
			t.Fatalf("item %d: running node after its lease ended: %v %v", l.ShardingItem, ok, err)
		}
		data, _, err := a.r.s.get(a.r.p.ItemNode("j", l.ShardingItem, NodeCompleted))
		if wantCompleted == "" {
			if !errors.Is(err, zk.ErrNoNode) {
				t.Fatalf("item %d: completed node %q %v, want none", l.ShardingItem, data, err)
			}
			return
		}
		got := decodeCompleted(t, data, err)
		if got.ExecutionID != wantCompleted || !got.LastFire().Equal(fire) || got.State != string(lease.Succeeded) || !got.Success {
			t.Fatalf("item %d: completed node %+v, want execution %s of the fire at %v", l.ShardingItem, got, wantCompleted, fire)
		}
	}

	// a first end creates the item's completed node
	ended(accept(0, "01a226e4-d06d-72ec-b0a8-8c6833886701", true), true, "01a226e4-d06d-72ec-b0a8-8c6833886701")
	// over an earlier run's completed node, which this registry believes there but which went meanwhile: the
	// refused set is sent again as a create
	if err := a.r.EndItem("j", 1, -1, Completed{ExecutionID: "earlier", ScheduledAt: fire.Add(-time.Minute)}, false); err != nil {
		t.Fatal(err)
	}
	l1 := accept(1, "01a226e4-d06d-72ec-b0a8-8c6833886702", true)
	if err := a.r.s.del(a.r.p.ItemNode("j", 1, NodeCompleted), -1); err != nil {
		t.Fatal(err)
	}
	ended(l1, true, l1.ExecutionID)
	// and once more, now over this one's: a set
	ended(accept(1, "01a226e4-d06d-72ec-b0a8-8c6833886703", true), true, "01a226e4-d06d-72ec-b0a8-8c6833886703")
	// an item whose running node is not the lease's (unmonitored) is left to the caller
	ended(accept(2, "01a226e4-d06d-72ec-b0a8-8c6833886704", false), false, "")
}

func decodeCompleted(t *testing.T, data []byte, err error) Completed {
	t.Helper()
	if err != nil {
		t.Fatalf("completed node: %v", err)
	}
	var c Completed
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("completed node %q: %v", data, err)
	}
	return c
}
