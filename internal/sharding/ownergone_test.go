package sharding

import (
	"context"
	"encoding/json"
	"fmt"
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

// fireItem is one item of one scheduled fire.
type fireItem struct {
	at   time.Time
	item int
}

// deliveries counts the items a receiver got, per scheduled fire and item, for one job.
type deliveries struct {
	mu      sync.Mutex
	got     map[fireItem]int
	arrived chan struct{} // one value per delivery, dropped when full
}

func (d *deliveries) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p webhook.Payload
	if err := json.NewDecoder(r.Body).Decode(&p); err == nil {
		d.mu.Lock()
		d.got[fireItem{p.ScheduledAt.UTC(), p.ShardingItem}]++
		d.mu.Unlock()
		select {
		case d.arrived <- struct{}{}:
		default:
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (d *deliveries) counts() map[fireItem]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[fireItem]int, len(d.got))
	for k, v := range d.got {
		out[k] = v
	}
	return out
}

// await waits until every item below total of every fire in ats was delivered.
func (d *deliveries) await(t *testing.T, total int, ats ...time.Time) {
	t.Helper()
	complete := func(got map[fireItem]int) bool {
		for _, at := range ats {
			for i := range total {
				if got[fireItem{at.UTC(), i}] == 0 {
					return false
				}
			}
		}
		return true
	}
	d.awaitFunc(t, complete, fmt.Sprintf("items 0-%d of the fires at %v", total-1, ats))
}

// awaitItems waits until n items of the fire at at were delivered.
func (d *deliveries) awaitItems(t *testing.T, n int, at time.Time) {
	t.Helper()
	d.awaitFunc(t, func(got map[fireItem]int) bool {
		k := 0
		for fi := range got {
			if fi.at.Equal(at.UTC()) {
				k++
			}
		}
		return k >= n
	}, fmt.Sprintf("%d items of the fire at %v", n, at))
}

func (d *deliveries) awaitFunc(t *testing.T, complete func(map[fireItem]int) bool, want string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for got := d.counts(); !complete(got); got = d.counts() {
		select {
		case <-d.arrived:
		case <-deadline:
			t.Fatalf("delivered %v, want %s", got, want)
		}
	}
}

func (d *deliveries) eachOnce(t *testing.T) {
	t.Helper()
	for k, n := range d.counts() {
		if n != 1 {
			t.Fatalf("item %d of the fire at %s delivered %d times", k.item, k.at.Format(time.TimeOnly), n)
		}
	}
}

// threePeers starts a (the leader of job j, 3 items, POSTed to url), b and x, and shards j over them: x owns
// one item; ownsOne tells that.
func threePeers(t *testing.T, ns, url string) (a, b, x *firePeer, ownsOne func(*cluster.JobSnapshot) bool) {
	t.Helper()
	a = startFirePeer(t, ns, "10.9.0.1")
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "j", 3, url
	if _, err := a.r.CreateJob(cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a.node, "j", "a leads", func(s *cluster.JobSnapshot) bool { return leads(s) })
	b = startFirePeer(t, ns, "10.9.0.2")
	x = startFirePeer(t, ns, "10.9.0.3")
	waitFor(t, a.node, "j", "b and x registered", func(s *cluster.JobSnapshot) bool { return len(s.Instances) == 3 })
	if err := a.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	xID := x.r.Me().InstanceID
	ownsOne = func(s *cluster.JobSnapshot) bool {
		n := 0
		for i := range 3 {
			if s.Item(i).Owner == xID {
				n++
			}
		}
		return shardingSettled(s) && n == 1
	}
	waitFor(t, b.node, "j", "x owns an item on b", ownsOne)
	return a, b, x, ownsOne
}

func newDeliveries(t *testing.T) (*deliveries, string) {
	recv := &deliveries{got: map[fireItem]int{}, arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	return recv, srv.URL
}

// A peer stopped (its session closed: its instance and peer nodes are gone) before the job's leader resharded
// leaves its item to nobody: the fire waits for the resharding, the leader reshards at its fire, and every item
// of the fire is delivered once. Without the owner-gone check the stopped peer's item is delivered by nobody.
func TestFireWaitsForTheReshardingOfAStoppedPeersItems(t *testing.T) {
	recv, url := newDeliveries(t)
	a, b, x, ownsOne := threePeers(t, zktest.Namespace("ownergone"), url)
	xID := x.r.Me().InstanceID
	x.exec.Drain(time.Second)
	x.node.stop() // its session closes: its ephemeral nodes go, nobody reshards yet
	for _, p := range []*firePeer{a, b} {
		waitFor(t, p.node, "j", "x's instance gone, its item not resharded", func(s *cluster.JobSnapshot) bool { return !s.Online(xID) && ownsOne(s) })
		pollPeer(t, p.r.PeerGone, xID)
	}

	at := time.Now().Truncate(time.Second)
	b.exec.Fire(dispatch.Due{Job: "j", At: at}) // not the leader: waits for the resharding
	a.exec.Fire(dispatch.Due{Job: "j", At: at}) // the leader: reshards at the fire
	recv.await(t, 3, at)                        // x owned one of the three
	a.exec.Drain(5 * time.Second)
	b.exec.Drain(5 * time.Second)
	recv.eachOnce(t)
}

// A stopping peer removes its peer node first (Leave) and keeps its instance nodes until its session closes:
// the others hold the fires of its item meanwhile. A fire it ran itself before it closed is not run again; a
// fire it did not run (its scheduler had stopped) runs late, once, after the leader resharded. Without the
// hold, that fire's item is delivered by nobody.
func TestAStoppingPeersItemsAreHeldUntilResharded(t *testing.T) {
	recv, url := newDeliveries(t)
	a, b, x, ownsOne := threePeers(t, zktest.Namespace("leaving"), url)
	xID := x.r.Me().InstanceID
	if err := x.r.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*firePeer{a, b} {
		pollPeer(t, p.r.PeerLeft, xID)
	}
	ran := time.Now().Truncate(time.Second)
	x.exec.Fire(dispatch.Due{Job: "j", At: ran}) // begun before its scheduler stopped
	recv.awaitItems(t, 1, ran)
	missed := ran.Add(time.Second) // after it stopped scheduling: x does not run it
	for _, at := range []time.Time{ran, missed} {
		a.exec.Fire(dispatch.Due{Job: "j", At: at})
		b.exec.Fire(dispatch.Due{Job: "j", At: at})
	}
	waitFor(t, b.node, "j", "x's item still x's, held", func(s *cluster.JobSnapshot) bool { return s.Online(xID) && ownsOne(s) })
	x.exec.Drain(5 * time.Second)
	x.node.stop()
	recv.await(t, 3, ran, missed)
	a.exec.Drain(5 * time.Second)
	b.exec.Drain(5 * time.Second)
	recv.eachOnce(t)
}

// pollPeer waits until a question about a registry's cache of the live peers says yes for id (a peers watch,
// not a job's: Wait does not wake on it).
func pollPeer(t *testing.T, yes func(id string) bool, id string) {
	t.Helper()
	poll(t, "peer "+id, func() bool { return yes(id) })
}

func shardingSettled(s *cluster.JobSnapshot) bool {
	return !s.Necessary && s.Sharded() && s.ItemsSettled
}

// An instance that left a job is flagged for resharding unless the job's leader resharded it already (at a
// fire that found the instance gone): a second resharding would write the same owners. Any other cause is
// flagged all the same.
func TestAJobReshardedAtAFireIsNotFlaggedAgain(t *testing.T) {
	ns := zktest.Namespace("noreflag")
	a := newNode(t, ns, "10.8.0.1", clock.Real{}) // its coordinator is not started: nothing reshards on its own
	startRegistry(t, a)
	t.Cleanup(a.stop)
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "j", 2, "http://127.0.0.1:9/x"
	if _, err := a.r.CreateJob(cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "j", "a leads", func(s *cluster.JobSnapshot) bool { return leads(s) })
	b := newNode(t, ns, "10.8.0.2", clock.Real{})
	startRegistry(t, b)
	waitFor(t, a, "j", "b registered", func(s *cluster.JobSnapshot) bool { return len(s.Instances) == 2 })
	if err := a.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	bID := b.r.Me().InstanceID
	waitFor(t, a, "j", "b owns an item", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(1).Owner == bID })
	b.stop()
	snap := waitFor(t, a, "j", "b gone", func(s *cluster.JobSnapshot) bool { return !s.Online(bID) && shardingSettled(s) })
	if v := a.c.flagWanted(snap, true); v != Reshard {
		t.Fatalf("a job whose item the instance that left still owns is not flagged: %s", v)
	}
	if err := a.c.Reshard(context.Background(), "j"); err != nil { // as a fire does when it finds b gone
		t.Fatal(err)
	}
	snap = waitFor(t, a, "j", "resharded", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(1).Owner != bID })
	if v := a.c.flagWanted(snap, true); v != Keep {
		t.Fatalf("a job resharded already is %s again for the instance that left", v)
	}
	if a.c.flagWanted(snap, false) != Reshard {
		t.Fatal("a job queued for another cause than an instance leaving is not flagged")
	}
	// queued when b left (its item still b's), judged when its flag is set: the fire's resharding made it
	// right meanwhile, so no flag (judged at the queueing, a restart's flags landed just after the fires'
	// reshardings, and each fire waited for a second one behind thousands of jobs)
	if _, ok := a.c.flagAll([]string{"j"}, map[string]bool{"j": true}, nil, nil); !ok {
		t.Fatal("flagAll failed")
	}
	if created, err := a.r.SetNecessary("j"); err != nil || !created {
		t.Fatalf("flagAll flagged a job its fire had resharded already (this create: %v, %v)", created, err)
	}
}
