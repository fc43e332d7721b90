package cluster

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A stopped peer's instance and leader nodes are applied as their deletion events come, not once the
// refreshes they kicked have run: here the job's refreshes are held (its refreshMu), as in a restart at
// 30,000 jobs the other jobs' queued reads held them for up to 30 s. The listeners hear of both, and the
// campaign the lost leader calls for runs once the job's refreshes may run again.
func TestDeletionsAreAppliedAsTheirEventsCome(t *testing.T) {
	ns := zktest.Namespace("deleted")
	const aID, bID = "10.0.2.1@-@1", "10.0.2.2@-@2"
	var mu sync.Mutex
	var heard []Event
	heardOne := make(chan struct{}, 1) // told at each event heard
	b := startPeer(t, ns, bID, "10.0.2.2")
	createLed(t, b, "j", 2)
	a := startPeerWith(t, ns, aID, "10.0.2.1", func(r *Registry) {
		r.OnEvent(func(ev Event) {
			if ev.Kind == InstancesChanged || ev.Kind == LeaderChanged {
				mu.Lock()
				heard = append(heard, ev)
				mu.Unlock()
				select {
				case heardOne <- struct{}{}:
				default:
				}
			}
		})
	})
	waitJob(t, a, "j", "a sees b lead", func(s *JobSnapshot) bool { return s.Leader == bID && s.Online(bID) && s.Online(aID) && s.Registered })
	mu.Lock()
	heard = nil
	mu.Unlock()

	e := a.r.entry("j")
	e.refreshMu.Lock()
	held := true
	defer func() {
		if held {
			e.refreshMu.Unlock()
		}
	}()
	b.close()
	snap := waitJob(t, a, "j", "b's nodes gone while the job's reads are held", func(s *JobSnapshot) bool {
		return !s.Online(bID) && s.Leader == ""
	})
	if !snap.Online(aID) {
		t.Fatalf("a's own instance went with b's: %v", snap.Instances)
	}
	deadline := time.After(5 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(heard)
		mu.Unlock()
		removed := slices.ContainsFunc(got, func(ev Event) bool { return ev.Kind == InstancesChanged && slices.Equal(ev.Removed, []string{bID}) })
		leaderless := slices.ContainsFunc(got, func(ev Event) bool { return ev.Kind == LeaderChanged && ev.Leader == "" })
		if removed && leaderless {
			break
		}
		select {
		case <-heardOne:
		case <-deadline:
			t.Fatalf("the listeners heard %+v, want b's removal and the lost leader", got)
		}
	}
	e.refreshMu.Unlock()
	held = false
	waitJob(t, a, "j", "a leads", func(s *JobSnapshot) bool { return s.IsLeader() && len(s.Instances) == 1 })
}

// A read whose answer predates a deletion applied from its event does not bring the node back: the job's
// direct count changed since the read began, and the refresh reads again. Each answer here was read while b
// was there and is applied after b's deletion came (as a read in flight on a refresher worker can be).
func TestAReadOlderThanADeletionIsReadAgain(t *testing.T) {
	ns := zktest.Namespace("stale")
	const aID, bID = "10.0.3.1@-@1", "10.0.3.2@-@2"
	b := startPeer(t, ns, bID, "10.0.3.2")
	createLed(t, b, "j", 2)
	a := startPeer(t, ns, aID, "10.0.3.1")
	waitJob(t, a, "j", "a sees b lead", func(s *JobSnapshot) bool { return s.Leader == bID && s.Online(bID) && s.Online(aID) && s.Registered })
	e := a.r.entry("j")
	direct := e.directCount()
	instances, err := a.r.readInstances("j", nil)
	if err != nil {
		t.Fatal(err)
	}
	leader, err := a.r.readLeader("j")
	if err != nil {
		t.Fatal(err)
	}
	rd, bulk, err := a.r.readJobBulk("j", false)
	if err != nil || !bulk {
		t.Fatalf("bulk read: %v %v", bulk, err)
	}
	rd.direct = direct
	if _, ok := instances[bID]; !ok || leader.id != bID || rd.leader.id != bID {
		t.Fatalf("the reads before b's stop do not name b: %v %+v %+v", instances, leader, rd.leader)
	}

	// a's campaign, once b's leader node goes, is held so that the stale answers meet a leaderless job
	e.refreshMu.Lock()
	b.close()
	waitJob(t, a, "j", "b's nodes gone", func(s *JobSnapshot) bool { return !s.Online(bID) && s.Leader == "" })
	a.r.applyInstances(e, instances, direct.instances, false)
	a.r.applyLeader(e, leader, direct.leader)
	err = a.r.applyLoad(e, false, rd, true)
	s := a.r.Job("j")
	e.refreshMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if s.Online(bID) || s.Leader == bID {
		t.Fatalf("a stale answer brought b back: instances %v, leader %q", s.Instances, s.Leader)
	}
	waitJob(t, a, "j", "a leads alone", func(s *JobSnapshot) bool { return s.IsLeader() && len(s.Instances) == 1 })

	// this peer's own instance node is not applied from its event: refreshInstances tells an operator's
	// removal from a lost registration
	if a.r.applyFromEvent(zk.Event{Type: zk.EventNodeDeleted, Path: a.r.p.Instance("j", aID)}) {
		t.Fatal("this peer's own instance node was applied from its event")
	}
}

// A live peer's instance node created in a job is applied as its event comes, with the server IP its peer
// node gave, not once the job's instances are listed (here the job's refreshes are held, as a restarted
// peer's registration on 30,000 jobs queued 30,000 listings on each other peer).
func TestAnInstanceOfALivePeerIsAppliedAsItsEventComes(t *testing.T) {
	ns := zktest.Namespace("created")
	const aID, bID, bIP = "10.0.4.1@-@1", "10.0.4.2@-@2", "10.0.4.2"
	b := startPeer(t, ns, bID, bIP)
	if _, err := b.r.CreateJob(testJob("j", 2)); err != nil {
		t.Fatal(err)
	}
	a := startPeer(t, ns, aID, "10.0.4.1")
	waitJob(t, a, "j", "a sees b", func(s *JobSnapshot) bool { return s.Online(bID) && s.Online(aID) && s.Registered })
	if !a.r.PeerLive(bID) {
		t.Fatal("b's peer node is not listed")
	}
	// an operator removes b's instance node (b stays off the job) and puts it back while a's reads are held
	if err := a.r.s.del(a.r.p.Instance("j", bID), -1); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "b's instance gone", func(s *JobSnapshot) bool { return !s.Online(bID) })
	e := a.r.entry("j")
	e.refreshMu.Lock()
	defer e.refreshMu.Unlock()
	if err := a.r.s.create(a.r.p.Instance("j", bID), instanceData(Identity{InstanceID: bID, ServerIP: bIP}), zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	snap := waitJob(t, a, "j", "b's instance back while the job's reads are held", func(s *JobSnapshot) bool { return s.Online(bID) })
	if ip := snap.Instances[bID]; ip != bIP {
		t.Fatalf("b's instance has server IP %q, want %q", ip, bIP)
	}
}

// A job's changes waiting for the listeners are merged: one delta per job, whatever the number of changes.
func TestReportDeltaMerges(t *testing.T) {
	type change struct {
		id    string
		added bool
	}
	tests := []struct {
		name    string
		changes []change
		want    []Event
	}{
		{"one removal", []change{{"b", false}}, []Event{{Kind: InstancesChanged, Job: "j", Removed: []string{"b"}}}},
		{"removed then back", []change{{"b", false}, {"b", true}}, nil},
		{"added then gone", []change{{"c", true}, {"c", false}}, nil},
		{"removed twice", []change{{"b", false}, {"b", false}}, []Event{{Kind: InstancesChanged, Job: "j", Removed: []string{"b"}}}},
		{"several, sorted", []change{{"c", false}, {"a", true}, {"b", false}},
			[]Event{{Kind: InstancesChanged, Job: "j", Added: []string{"a"}, Removed: []string{"b", "c"}}}},
		{"leader lost after a removal", []change{{"b", false}, {"", false}},
			[]Event{{Kind: InstancesChanged, Job: "j", Removed: []string{"b"}}, {Kind: LeaderChanged, Job: "j"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d reportDelta
			for _, c := range tt.changes {
				d.merge(c.id, c.added)
			}
			got := d.events("j")
			if len(got) != len(tt.want) {
				t.Fatalf("events %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Kind != w.Kind || g.Job != w.Job || !slices.Equal(g.Added, w.Added) || !slices.Equal(g.Removed, w.Removed) {
					t.Fatalf("event %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}
