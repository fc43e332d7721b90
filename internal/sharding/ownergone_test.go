package sharding

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
	"github.com/ejserver/ejserver/internal/webhook"
)

// firePeer is a peer whose coordinator does not react to the registry's events (it is not started): as on a
// leader whose instance events for thousands of jobs are still queued, no resharding comes unless a fire asks.
type firePeer struct {
	*node
	exec *dispatch.Executor
}

func startFirePeer(t *testing.T, ns, ip string) *firePeer {
	t.Helper()
	n := newNode(t, ns, ip, clock.Real{})
	startRegistry(t, n)
	p := &firePeer{node: n, exec: dispatch.NewExecutor(dispatch.ExecutorConfig{
		Registry: n.r, Sender: webhook.New(webhook.Config{Logger: quiet}), Resharder: n.c, Logger: quiet, ReshardWait: 20 * time.Second})}
	t.Cleanup(func() {
		p.exec.Drain(5 * time.Second)
		p.node.stop()
	})
	return p
}

// deliveries counts the items a receiver got, per item, for one job.
type deliveries struct {
	mu      sync.Mutex
	got     map[int]int
	arrived chan struct{} // one value per delivery, dropped when full
}

func (d *deliveries) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p webhook.Payload
	if err := json.NewDecoder(r.Body).Decode(&p); err == nil {
		d.mu.Lock()
		d.got[p.ShardingItem]++
		d.mu.Unlock()
		select {
		case d.arrived <- struct{}{}:
		default:
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (d *deliveries) counts() map[int]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[int]int, len(d.got))
	for k, v := range d.got {
		out[k] = v
	}
	return out
}

// A peer stopped (its session closed: its instance and peer nodes are gone) before the job's leader resharded
// leaves its item to nobody: the fire waits for the resharding, the leader reshards at its fire, and every item
// of the fire is delivered once. Without the owner-gone check the stopped peer's item is delivered by nobody.
func TestFireWaitsForTheReshardingOfAStoppedPeersItems(t *testing.T) {
	ns := zktest.Namespace("ownergone")
	recv := &deliveries{got: map[int]int{}, arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(recv)
	defer srv.Close()

	a := startFirePeer(t, ns, "10.9.0.1")
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "j", 3, srv.URL
	if _, err := a.r.CreateJob(cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a.node, "j", "a leads", func(s *cluster.JobSnapshot) bool { return s.IsLeader() && s.Registered })
	b := startFirePeer(t, ns, "10.9.0.2")
	x := startFirePeer(t, ns, "10.9.0.3")
	waitFor(t, a.node, "j", "b and x registered", func(s *cluster.JobSnapshot) bool { return len(s.Instances) == 3 })
	if err := a.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	xID := x.r.Me().InstanceID
	ownsOne := func(s *cluster.JobSnapshot) bool {
		n := 0
		for i := range 3 {
			if s.Item(i).Owner == xID {
				n++
			}
		}
		return shardingSettled(s) && n == 1
	}
	waitFor(t, b.node, "j", "x owns an item on b", ownsOne)

	x.exec.Drain(time.Second)
	x.node.stop() // its session closes: its ephemeral nodes go, nobody reshards yet
	for _, p := range []*firePeer{a, b} {
		waitFor(t, p.node, "j", "x's instance gone, its item not resharded", func(s *cluster.JobSnapshot) bool { return !s.Online(xID) && ownsOne(s) })
		pollPeerGone(t, p.r, xID)
	}

	at := time.Now().Truncate(time.Second)
	b.exec.Fire("j", at, 0) // not the leader: waits for the resharding
	a.exec.Fire("j", at, 0) // the leader: reshards at the fire
	deadline := time.After(15 * time.Second)
	for got := recv.counts(); len(got) < 3; got = recv.counts() {
		select {
		case <-recv.arrived:
		case <-deadline:
			t.Fatalf("delivered items %v, want 0, 1 and 2 (x owned one)", got)
		}
	}
	a.exec.Drain(5 * time.Second)
	b.exec.Drain(5 * time.Second)
	for item, n := range recv.counts() {
		if n != 1 {
			t.Fatalf("item %d delivered %d times", item, n)
		}
	}
}

// pollPeerGone waits until r's cache of the live peers has lost id (a peers watch, not a job's: Wait does not
// wake on it).
func pollPeerGone(t *testing.T, r *cluster.Registry, id string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(15 * time.Second)
	for !r.PeerGone(id) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("peer %s still live", id)
		}
	}
}

func shardingSettled(s *cluster.JobSnapshot) bool {
	return !s.Necessary && s.Sharded() && s.ItemsSettled
}
