package cluster

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil/tcpproxy"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// startPeerAt starts a peer on the ZooKeeper at addr, watching node by node when oneShot.
func startPeerAt(t *testing.T, addr, ns, id, ip string, oneShot bool) *peer {
	t.Helper()
	return startPeerWorkers(t, addr, ns, id, ip, oneShot, 0)
}

// startPeerWorkers is startPeerAt with the registry's refresh workers (0: the default).
func startPeerWorkers(t *testing.T, addr, ns, id, ip string, oneShot bool, workers int) *peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Dial(ctx, SessionConfig{Servers: []string{addr}, SessionTimeout: 8 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(s, RegistryConfig{Namespace: ns, Identity: Identity{InstanceID: id, ServerIP: ip}, Logger: log,
		OneShotWatches: oneShot, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p := &peer{s: s, r: r}
	t.Cleanup(p.close)
	return p
}

// dataWatches lists /ns and the paths below it that session id watches, from ZooKeeper's wchc (data,
// exists and persistent watches; not one-shot children watches).
func dataWatches(t *testing.T, ns string, id int64) []string {
	t.Helper()
	out, err := zktest.FourLetter(zktest.Addr(t), "wchc")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	mine := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "0x") {
			mine = line == "0x"+strconv.FormatInt(id, 16)
			continue
		}
		if p := strings.TrimSpace(line); mine && (p == "/"+ns || strings.HasPrefix(p, "/"+ns+"/")) {
			paths = append(paths, p)
		}
	}
	return paths
}

// Every peer holds one watch whatever its jobs: its recursive watch on the namespace, and no watch on a
// job's root or nodes; node by node (the fallback) it is 8 + servers + 3 per item of every job.
func TestOneWatchPerJobPerPeer(t *testing.T) {
	for _, oneShot := range []bool{false, true} {
		name := "recursive"
		if oneShot {
			name = "one-shot"
		}
		t.Run(name, func(t *testing.T) {
			ns := zktest.Namespace("watches")
			a := startPeerAt(t, zktest.Addr(t), ns, "10.0.0.1@-@1", "10.0.0.1", oneShot)
			b := startPeerAt(t, zktest.Addr(t), ns, "10.0.0.2@-@2", "10.0.0.2", oneShot)
			jobs := map[string]int{"one": 1, "two": 2, "three": 3}
			for job, n := range jobs {
				owners := make([]string, n)
				for i := range owners {
					owners[i] = []string{"10.0.0.1@-@1", "10.0.0.2@-@2"}[i%2]
				}
				if _, err := a.r.CreateJobSharded(testJob(job, n), owners); err != nil {
					t.Fatal(err)
				}
			}
			for job := range jobs {
				for _, p := range []*peer{a, b} {
					waitJob(t, p, job, "registration", func(s *JobSnapshot) bool {
						return len(s.Instances) == 2 && len(s.Servers) == 2 && s.Leader != "" && s.Registered && s.Settled && s.Sharded()
					})
				}
			}
			for _, p := range []*peer{a, b} {
				want := map[string]bool{}
				if !oneShot {
					want["/"+ns] = true
				}
				for job, n := range jobs {
					if !oneShot {
						continue
					}
					// config, trigger/{me}, leader/election/instance, leader/sharding/necessary, both servers, and
					// instance, disabled and failover of each item (the children watches are not listed)
					want["/"+ns+"/"+job+"/config"] = true
					want["/"+ns+"/"+job+"/trigger/"+p.r.me.InstanceID] = true
					want["/"+ns+"/"+job+"/leader/election/instance"] = true
					want["/"+ns+"/"+job+"/leader/sharding/necessary"] = true
					want["/"+ns+"/"+job+"/servers/10.0.0.1"] = true
					want["/"+ns+"/"+job+"/servers/10.0.0.2"] = true
					for i := range n {
						for _, node := range []string{NodeInstance, NodeDisabled, NodeFailover} {
							want["/"+ns+"/"+job+"/sharding/"+strconv.Itoa(i)+"/"+node] = true
						}
					}
				}
				// the one-shot watches of the last reads may still be arriving: poll until the sets agree
				deadline := time.Now().Add(20 * time.Second)
				for {
					got := dataWatches(t, ns, p.s.ID())
					if sameSet(got, want) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("peer %s watches %d paths %v, want %d", p.r.me.InstanceID, len(got), got, len(want))
					}
					time.Sleep(50 * time.Millisecond) // polling ZooKeeper's listing with a deadline
				}
			}
		})
	}
}

func sameSet(got []string, want map[string]bool) bool {
	if len(got) != len(want) {
		return false
	}
	for _, p := range got {
		if !want[p] {
			return false
		}
	}
	return true
}

// A peer that reconnects within its session lists the namespace and reads its jobs again: the changes made
// while it was away (an item disabled, a job deleted, a job created) reach it although ZooKeeper does not
// replay them to a re-sent recursive watch.
func TestReconnectedPeerReadsWhatItMissed(t *testing.T) {
	ns := zktest.Namespace("resync")
	// cut off by refusals, not a black hole: a closes at once and reconnects, within its session, on the heal
	px, err := tcpproxy.New(zktest.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	a := startPeerAt(t, px.Addr(), ns, "10.0.0.1@-@1", "10.0.0.1", false)
	b := startPeerAt(t, zktest.Addr(t), ns, "10.0.0.2@-@2", "10.0.0.2", false)
	if _, err := b.r.CreateJobSharded(testJob("orders", 2), []string{"10.0.0.1@-@1", "10.0.0.2@-@2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.CreateJobSharded(testJob("old", 1), []string{"10.0.0.2@-@2"}); err != nil {
		t.Fatal(err)
	}
	ready := func(s *JobSnapshot) bool { return len(s.Instances) == 2 && s.Registered && s.Settled && s.Sharded() }
	waitJob(t, a, "orders", "registration", ready)
	waitJob(t, b, "orders", "registration", ready)
	waitJob(t, a, "old", "registration", ready)
	id := a.s.ID()

	px.Refuse()
	// wait until a has noticed (its session is in doubt), then change the job while a is away
	deadline := time.Now().Add(20 * time.Second)
	for a.s.Healthy() {
		if time.Now().After(deadline) {
			t.Fatal("peer a did not notice the cut")
		}
		time.Sleep(10 * time.Millisecond) // polling the session's state with a deadline
	}
	if err := b.r.SetItemDisabled("orders", 0, true); err != nil {
		t.Fatal(err)
	}
	if err := b.r.DeleteJob("old"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.CreateJobSharded(testJob("fresh", 1), []string{"10.0.0.2@-@2"}); err != nil {
		t.Fatal(err)
	}
	px.Heal()
	snap := waitJob(t, a, "orders", "the disabled item", func(s *JobSnapshot) bool { return s.Settled && s.Item(0).Disabled })
	if a.s.ID() != id {
		t.Fatalf("the session changed: %x -> %x (the test wants a reconnection within the session)", id, a.s.ID())
	}
	if !snap.Item(0).Disabled {
		t.Fatal("item 0 not disabled")
	}
	waitJob(t, a, "fresh", "the job created while a was away", func(s *JobSnapshot) bool { return s.Settled })
	deadline = time.Now().Add(15 * time.Second)
	for a.r.Job("old") != nil {
		if time.Now().After(deadline) {
			t.Fatal("peer a still has the job deleted while it was away")
		}
		time.Sleep(10 * time.Millisecond) // polling the registry's view with a deadline
	}
	// and the re-sent watch still reports changes
	if err := b.r.SetItemDisabled("orders", 0, false); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "orders", "the enabled item", func(s *JobSnapshot) bool { return s.Settled && !s.Item(0).Disabled })
}

// The namespace's recursive watch: a job's root created or deleted lists the namespace again; the events
// of a job not listed yet are dropped (its first load reads the node); the rest go to keyFor.
func TestRouteRecursive(t *testing.T) {
	p := NewPaths("ns")
	known := func(job string) bool { return job == "known" }
	tests := []struct {
		name              string
		ev                zk.Event
		presence, forward bool
	}{
		{"job created", zk.Event{Type: zk.EventNodeCreated, Path: "/ns/new"}, true, false},
		{"job deleted", zk.Event{Type: zk.EventNodeDeleted, Path: "/ns/known"}, true, false},
		{"job root written", zk.Event{Type: zk.EventNodeDataChanged, Path: "/ns/known"}, false, false},
		{"config of a known job", zk.Event{Type: zk.EventNodeDataChanged, Path: "/ns/known/config"}, false, true},
		{"item of a known job", zk.Event{Type: zk.EventNodeCreated, Path: "/ns/known/sharding/0/disabled"}, false, true},
		{"config of a job not listed", zk.Event{Type: zk.EventNodeCreated, Path: "/ns/new/config"}, false, false},
		{"the namespace's children (one-shot)", zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/ns"}, false, true},
		{"a folder's children (one-shot)", zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/ns/new/instances"}, false, true},
		{"the meta folder", zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/ns.ejserver/peers"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			presence, forward := routeRecursive(p, tt.ev, known)
			if presence != tt.presence || forward != tt.forward {
				t.Fatalf("routeRecursive(%v %s) = %v, %v; want %v, %v", tt.ev.Type, tt.ev.Path, presence, forward, tt.presence, tt.forward)
			}
		})
	}
}
