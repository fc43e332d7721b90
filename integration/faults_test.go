package integration

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A peer frozen past its session timeout has stopped dispatching before the others take its items; after it
// thaws it rejoins, and no item of any fire is POSTed twice. Sequential (no t.Parallel): it races a 2 s session
// against SIGSTOP, which other tests' load would blur.
func TestFrozenPeerStopsBeforeOthersTakeOverAndRejoins(t *testing.T) {
	const sessionTimeout = 2 * time.Second
	recv := newReceiver(t)
	c := newCluster(t, 3, withSessionTimeout(sessionTimeout))
	frozen := c.peers[2]
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("frost", "* * * * * ?", 6, recv.URL), http.StatusCreated, nil)
	waitSpread(t, recv, "frost", 6, time.Time{}, map[string][]int{
		c.peers[0].InstanceID(): {0, 1}, c.peers[1].InstanceID(): {2, 3}, frozen.InstanceID(): {4, 5}})

	if err := frozen.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	// the others take the frozen peer's items once its session expires
	waitSpread(t, recv, "frost", 6, paused.Add(sessionTimeout), map[string][]int{
		c.peers[0].InstanceID(): {0, 1, 2}, c.peers[1].InstanceID(): {3, 4, 5}})
	if err := frozen.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	// it renews its session, re-registers and gets its share back
	waitSpread(t, recv, "frost", 6, resumed, map[string][]int{
		c.peers[0].InstanceID(): {0, 1}, c.peers[1].InstanceID(): {2, 3}, frozen.InstanceID(): {4, 5}})
	noDoubleDelivery(t, recv)
	for _, d := range recv.Deliveries(nil) {
		if d.Payload.InstanceID == frozen.InstanceID() && d.ArrivedAt.After(paused) && d.ArrivedAt.Before(resumed) {
			t.Fatalf("the frozen peer delivered item %d while frozen", d.Payload.ShardingItem)
		}
	}
	if frozen.Exited() {
		t.Fatal("the frozen peer exited")
	}
	if log := frozen.Log(); !strings.Contains(log, "ZooKeeper session expired") || !strings.Contains(log, "ZooKeeper session renewed") {
		t.Fatal("the frozen peer's session did not expire and renew: the test did not test what it says")
	}
}

// ZooKeeper stopped and restarted: the peers stop dispatching while it is gone and fire again when it is
// back; no job is left shut down.
func TestZooKeeperRestartResumesJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zk, err := zktest.StartStandalone(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zk.Stop)
	recv := newReceiver(t)
	c := newCluster(t, 2, withZK(zk.Addr), withSessionTimeout(4*time.Second))
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("zkr", "* * * * * ?", 2, recv.URL), http.StatusCreated, nil)
	if _, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return completeFires(ds, 2) >= 2 }); !ok {
		t.Fatal("no fires before the restart")
	}
	for _, outage := range []time.Duration{2 * time.Second, 8 * time.Second} {
		zk.Stop()
		stopped := time.Now()
		// while it is down nothing new starts (allow the fire in flight at the stop)
		ds, _ := recv.WaitFor(outage, func([]harness.Delivery) bool { return false })
		for _, d := range ds {
			if d.Payload.ScheduledAt.After(stopped.Add(time.Second)) {
				t.Fatalf("item %d of the fire at %v was POSTed while ZooKeeper was down", d.Payload.ShardingItem, d.Payload.ScheduledAt)
			}
		}
		if err := zk.Start(); err != nil {
			t.Fatal(err)
		}
		back := time.Now()
		if _, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool {
			n := 0
			for at, group := range fires(ds) {
				if at.After(back) && len(group) == 2 {
					n++
				}
			}
			return n >= 2
		}); !ok {
			t.Fatalf("jobs did not resume after a %s ZooKeeper outage", outage)
		}
		t.Logf("resumed after a %s outage", outage)
	}
	noDoubleDelivery(t, recv)
	for _, p := range c.peers {
		if p.Exited() {
			t.Fatal("a peer exited")
		}
	}
}

// Killing a node of a 3-node ensemble (its leader) does not stop the jobs.
func TestEnsembleNodeLossKeepsJobsFiring(t *testing.T) {
	t.Parallel()
	ens, err := zktest.StartEnsemble(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ens.Stop)
	recv := newReceiver(t)
	c := newCluster(t, 2, withZK(ens.Connect()), withSessionTimeout(6*time.Second))
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("ens", "* * * * * ?", 4, recv.URL), http.StatusCreated, nil)
	if _, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return completeFires(ds, 4) >= 2 }); !ok {
		t.Fatal("no fires on the ensemble")
	}
	var leader *zktest.Server
	for _, n := range ens.Nodes {
		if zktest.Mode(n.Addr) == "leader" {
			leader = n
		}
	}
	if leader == nil {
		t.Fatal("no ZooKeeper leader")
	}
	leader.Kill()
	killed := time.Now()
	if _, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool {
		n := 0
		for at, group := range fires(ds) {
			if at.After(killed.Add(time.Second)) && len(group) == 4 {
				n++
			}
		}
		return n >= 3
	}); !ok {
		t.Fatal("jobs stopped after the ensemble lost its leader")
	}
	gap := time.Duration(0)
	var prev time.Time
	for _, at := range sortedFireTimes(recv.Deliveries(nil)) {
		if !prev.IsZero() && at.Sub(prev) > gap {
			gap = at.Sub(prev)
		}
		prev = at
	}
	t.Logf("longest gap between fires across the ZooKeeper leader's death: %s", gap)
	noDoubleDelivery(t, recv)
}

func sortedFireTimes(ds []harness.Delivery) []time.Time {
	var out []time.Time
	for at := range fires(ds) {
		out = append(out, at)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}
