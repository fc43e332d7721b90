package dispatch

import (
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// InstanceOnline answers as ZooKeeper would: the snapshot's instances, and those registered since (late).
func (f *fakeRegistry) InstanceOnline(_, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap.Online(id) || f.late[id], nil
}

func TestExecutorClearsAStaleRunningNode(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.running[0] = cluster.Running{InstanceID: "gone@-@1", ExecutionID: "old"}
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	if p := send.next(t); p.ExecutionID == "old" {
		t.Fatal("reused the stale execution")
	}
}

// A running node of an instance that this peer's snapshot does not list yet (it registered since the last
// read, as every peer but the creator does on a job just created) is not stale: ZooKeeper has the instance,
// so the item is left to it, neither run here nor recorded as lost.
func TestExecutorKeepsTheRunningNodeOfAnInstanceItsSnapshotHasNotSeen(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.running[0] = cluster.Running{InstanceID: "late@-@1", ExecutionID: "theirs"}
	reg.late = map[string]bool{"late@-@1": true}
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	if p := send.next(t); p.ShardingItem != 1 { // the fire went on with its free item
		t.Fatalf("item %d delivered, want item 1", p.ShardingItem)
	}
	send.none(t)
	waitFor(t, func() bool { return len(e.Running("j")) == 0 })
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if r, ok := reg.running[0]; !ok || r.ExecutionID != "theirs" {
		t.Fatalf("the live instance's running node was cleared: %+v", reg.running)
	}
	for _, c := range reg.ended {
		if c.ExecutionID == "theirs" {
			t.Fatalf("the live instance's execution was ended here: %+v", c)
		}
	}
}
