package sharding

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

type reshardCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *reshardCount) Resharded(job string, _ int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[job]++
}

func (o *reshardCount) of(job string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[job]
}

func livePeers(t *testing.T, n *node, want int) []Instance {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		peers, ok := n.r.LivePeers()
		if ok && len(peers) == want {
			var in []Instance
			for _, p := range peers {
				in = append(in, Instance{ID: p.InstanceID, ServerIP: p.ServerIP})
			}
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("live peers %v, want %d", peers, want)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
}

// A job created with its first sharding over the live peers fires on every peer as soon as it is loaded (no
// necessary flag, no election needed), its leader keeps that sharding while the peers register, and a peer
// that joins later is given items by a resharding as before.
func TestJobShardedAtCreationIsKeptByItsLeader(t *testing.T) {
	ns := zktest.Namespace("first")
	count := &reshardCount{n: map[string]int{}}
	start := func(ip string) *node {
		n := startNode(t, ns, ip, clock.Real{})
		n.c.Stop() // a coordinator that counts its reshardings instead
		n.c = NewCoordinator(CoordinatorConfig{Registry: n.r, Logger: quiet, Observer: count, ServerGC: time.Hour, ReconcileTick: time.Hour,
			CommitSettle: noSettle})
		if err := n.c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := start("10.4.0.1"), start("10.4.0.2")
	peers := livePeers(t, a, 2)
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "j", 4, "http://127.0.0.1:9/x"
	owners := FirstOwners(peers, cfg)
	if len(owners) != 4 {
		t.Fatalf("first owners %v", owners)
	}
	if _, err := a.r.CreateJobSharded(cfg, owners); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*node{a, b} {
		snap := waitFor(t, n, "j", "ready to fire", func(s *cluster.JobSnapshot) bool { return !s.Necessary && s.Sharded() && s.Registered && s.Settled })
		if mine := snap.MyItems(); len(mine) != 2 {
			t.Fatalf("%s's items %v of %v", n.r.Me().InstanceID, mine, owners)
		}
	}
	snap := waitFor(t, a, "j", "a leader and both instances", func(s *cluster.JobSnapshot) bool { return s.Leader != "" && len(s.Instances) == 2 && s.Settled })
	leader := a
	if snap.Leader == b.r.Me().InstanceID {
		leader = b
	}
	if v := leader.c.assess(leader.r.Job("j"), nil); v != Keep {
		t.Fatalf("the leader's verdict on the first sharding: %s", v)
	}
	// a third peer joins: it gets items (ROUND_ROBIN's rotation aside, AVG gives each of 3 at least one of 4)
	c := start("10.4.0.3")
	me := c.r.Me().InstanceID
	waitFor(t, c, "j", "the third peer's items", func(s *cluster.JobSnapshot) bool {
		return !s.Necessary && s.Sharded() && s.Settled && len(s.MyItems()) > 0
	})
	waitFor(t, a, "j", "the new sharding", func(s *cluster.JobSnapshot) bool {
		return !s.Necessary && s.Sharded() && s.Settled && slices.ContainsFunc(s.Items, func(it cluster.ItemState) bool { return it.Owner == me })
	})
	// the leader counts its resharding once its write returned, which the peers may read before that: wait
	// for the count, then check it is the one
	deadline := time.Now().Add(10 * time.Second)
	for count.of("j") == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
	if got := count.of("j"); got != 1 {
		t.Fatalf("%d reshardings, want 1 (the third peer's)", got)
	}
}

// A job sharded at its creation over a peer that is gone before it registered is resharded by the leader.
func TestFirstShardingOverAGonePeerIsResharded(t *testing.T) {
	ns := zktest.Namespace("firstgone")
	a, b := startNode(t, ns, "10.5.0.1", clock.Real{}), startNode(t, ns, "10.5.0.2", clock.Real{})
	peers := livePeers(t, a, 2)
	b.stop() // closes its session: its peer node goes
	livePeers(t, a, 1)
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "j", 2, "http://127.0.0.1:9/x"
	if _, err := a.r.CreateJobSharded(cfg, FirstOwners(peers, cfg)); err != nil { // a list read before b left
		t.Fatal(err)
	}
	snap := waitFor(t, a, "j", "every item on a", func(s *cluster.JobSnapshot) bool {
		return s.IsLeader() && !s.Necessary && s.Sharded() && s.Settled && len(s.MyItems()) == 2
	})
	if snap.Item(0).Owner != a.r.Me().InstanceID || snap.Item(1).Owner != a.r.Me().InstanceID {
		t.Fatalf("owners %+v", snap.Items)
	}
}
