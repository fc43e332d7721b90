package failover

import (
	"sync/atomic"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// snapCounter counts the snapshots the manager asks for.
type snapCounter struct {
	fakeRegistry
	jobs atomic.Int64
}

func (c *snapCounter) Job(name string) *cluster.JobSnapshot {
	c.jobs.Add(1)
	return c.fakeRegistry.Job(name)
}

// TestItemEventsTakeNoSnapshot: the registry emits one event per item node read or changed, and a change
// drops the job's cached snapshot, so a snapshot taken per event is rebuilt per event (at a peer's start-up a
// 2,000-item job's 2,000 events built 2,000 snapshots of 2,000 items, 114 MB). Only the kinds the manager acts
// on take one.
func TestItemEventsTakeNoSnapshot(t *testing.T) {
	cfg := ejserver.DefaultJobConfig()
	cfg.Failover = true
	reg := &snapCounter{}
	reg.snap = &cluster.JobSnapshot{Name: "j", Config: &cfg, Me: "me", Registered: true}
	m := NewManager(ManagerConfig{Registry: reg, Logger: quiet})
	const items = 2000
	for range items {
		m.onEvent(cluster.Event{Kind: cluster.ItemsChanged, Job: "j"})
	}
	for _, k := range []cluster.EventKind{cluster.NecessaryChanged, cluster.ServersChanged, cluster.TriggerRequested,
		cluster.PeersChanged} {
		m.onEvent(cluster.Event{Kind: k, Job: "j"})
	}
	m.onEvent(cluster.Event{Kind: cluster.InstancesChanged, Job: "j", Added: []string{"other@-@2"}})
	if n := reg.jobs.Load(); n != 0 {
		t.Fatalf("%d snapshots taken for %d item events and 5 events the manager does not act on, want 0", n, items)
	}
	for _, ev := range []cluster.Event{ // the kinds it acts on still look
		{Kind: cluster.InstancesChanged, Job: "j", Removed: []string{"other@-@2"}},
		{Kind: cluster.LeaderChanged, Job: "j"},
		{Kind: cluster.FailoverItemsChanged, Job: "j"},
		{Kind: cluster.JobAdded, Job: "j"},
		{Kind: cluster.JobUpdated, Job: "j"},
	} {
		before := reg.jobs.Load()
		m.onEvent(ev)
		if reg.jobs.Load() != before+1 {
			t.Errorf("event %v took no snapshot", ev.Kind)
		}
	}
}
