package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// Fires missed while the whole cluster was down are replayed once only when the job asks for it.
func TestMissedFiresReplayOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	replay := job("replay", "* * * * * ?", 1, recv.URL)
	replay["replayMissedFires"] = true
	mustDo(t, p, "POST", "/api/v1/jobs", replay, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs", job("noreplay", "* * * * * ?", 1, recv.URL), http.StatusCreated, nil)
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		return len(filter(ds, "replay")) >= 2 && len(filter(ds, "noreplay")) >= 2
	}); !ok {
		t.Fatal("no fires")
	}
	if err := p.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	recv.WaitFor(3*time.Second, func([]harness.Delivery) bool { return false }) // the cluster is down for 3 s
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		for _, d := range ds {
			if d.Payload.JobName == "replay" && d.Payload.Source == "MISFIRE" {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatal("no catch-up of the fires missed while the cluster was down")
	}
	var catchUps []harness.Delivery
	for _, d := range ds {
		if d.Payload.Source == "MISFIRE" {
			catchUps = append(catchUps, d)
		}
	}
	if len(catchUps) != 1 || catchUps[0].Payload.JobName != "replay" || !catchUps[0].Payload.ScheduledAt.After(down) {
		t.Fatalf("catch-ups %+v", catchUps)
	}
	// a few more fires: still one catch-up, and none for the job that did not ask
	ds, _ = recv.WaitFor(3*time.Second, func([]harness.Delivery) bool { return false })
	n := 0
	for _, d := range ds {
		if d.Payload.Source == "MISFIRE" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d catch-ups", n)
	}
}

// A peer whose clock differs from ZooKeeper's by more than maxTimeDiffSeconds refuses to fire and says why.
// ZooKeeper's clock has millisecond resolution and the probe's round trip is not zero, so the measured
// difference is never exactly zero: maxTimeDiffSeconds = 0 always refuses, 60 never does here.
func TestClockCheckRefusesToFireAndSaysWhy(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	strict := job("strict", "* * * * * ?", 1, recv.URL)
	strict["maxTimeDiffSeconds"] = 0
	lenient := job("lenient", "* * * * * ?", 1, recv.URL)
	lenient["maxTimeDiffSeconds"] = 60
	mustDo(t, p, "POST", "/api/v1/jobs", strict, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs", lenient, http.StatusCreated, nil)
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(filter(ds, "lenient")) >= 3 }); !ok {
		t.Fatal("the lenient job did not fire")
	}
	if n := len(recv.Deliveries(harness.Job("strict"))); n != 0 {
		t.Fatalf("the strict job fired %d times", n)
	}
	var v struct {
		Problems []string `json:"problems"`
	}
	mustDo(t, p, "GET", "/api/v1/jobs/strict", nil, http.StatusOK, &v)
	if len(v.Problems) == 0 || !strings.Contains(v.Problems[0], "clock") {
		t.Fatalf("the API does not say why the job does not fire: %v", v.Problems)
	}
	if !strings.Contains(p.Log(), "clock check failed") {
		t.Fatal("the log does not say why")
	}
}

// SIGTERM lets in-flight webhooks finish, then leaves at once so another peer takes the items.
func TestGracefulShutdownFinishesInFlightWebhooks(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var mu sync.Mutex
	finished := map[string]bool{}
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		return 200, `{}`, 2 * time.Second
	})
	c := newCluster(t, 2)
	a, b := c.peers[0], c.peers[1]
	spec := job("drain", "0/5 * * * * ?", 2, recv.URL)
	mustDo(t, a, "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("no fire")
	}
	started := time.Now()
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatalf("SIGTERM exit: %v", err)
	}
	took := time.Since(started)
	if took < time.Second {
		t.Fatalf("peer a exited in %s without waiting for its in-flight webhook", took)
	}
	log := a.Log()
	for _, d := range ds[:2] {
		if d.Payload.InstanceID == a.InstanceID() {
			mu.Lock()
			finished[d.Payload.ExecutionID] = strings.Contains(log, "execution_id="+d.Payload.ExecutionID+" status=success")
			mu.Unlock()
		}
	}
	for id, ok := range finished {
		if !ok {
			t.Fatalf("in-flight execution %s did not finish before the exit", id)
		}
	}
	// peer b owns both items at the next fire
	stopped := time.Now()
	waitSpread(t, recv, "drain", 2, stopped, map[string][]int{b.InstanceID(): {0, 1}})
}

// A running node left by an instance that is gone (with failover off, e.g. written by a crashed ElasticJob
// instance) never blocks the item: the next fire clears it.
func TestStaleRunningNodeDoesNotBlockTheItem(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", job("stale", "* * * * * ?", 1, recv.URL), http.StatusCreated, nil)
	if _, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 }); !ok {
		t.Fatal("no fire")
	}
	mustDo(t, p, "POST", "/api/v1/jobs/stale/disable", nil, http.StatusOK, nil)
	zkCli(t, c.zk, "create", "/"+c.ns+"/stale/sharding/0/running", "10.9.9.9@-@1")
	mustDo(t, p, "POST", "/api/v1/jobs/stale/enable", nil, http.StatusOK, nil)
	enabled := time.Now()
	if _, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool {
		for _, d := range ds {
			if d.ArrivedAt.After(enabled) {
				return true
			}
		}
		return false
	}); !ok {
		t.Fatal("the stale running node blocked the item")
	}
	if !strings.Contains(p.Log(), "clearing a stale running node") {
		t.Fatal("no log of the clean-up")
	}
}

// An operator's empty trigger/{instanceId} node, as ElasticJob operators create it, runs that instance once.
func TestElasticJobTriggerNode(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("zktrig", "", 2, recv.URL), http.StatusCreated, nil)
	// shard it first with an API trigger, then trigger only peer 2 by hand
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/zktrig/trigger", nil, http.StatusAccepted, nil)
	if _, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 }); !ok {
		t.Fatal("API trigger did not run both items")
	}
	recv.Reset()
	zkCli(t, c.zk, "create", "/"+c.ns+"/zktrig/trigger/"+c.peers[1].InstanceID(), "")
	if _, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 }); !ok {
		t.Fatal("the trigger node did not run the instance")
	}
	recv.WaitFor(2*time.Second, func([]harness.Delivery) bool { return false })
	ds := recv.Deliveries(nil)
	if len(ds) != 1 || ds[0].Payload.InstanceID != c.peers[1].InstanceID() || ds[0].Payload.Source != "MANUAL" {
		t.Fatalf("deliveries %+v", ds)
	}
	if out := zkCli(t, c.zk, "ls", "/"+c.ns+"/zktrig/trigger"); !strings.Contains(out, "[]") {
		t.Fatalf("the trigger node was not consumed:\n%s", out)
	}
}

// A trigger the API sent before a peer registered on the job (the leader reshards for it and gives that peer
// items) still runs every item: the resharding leader hands the trigger on to the newcomer.
func TestTriggerReachesAnInstanceThatJoinedBeforeTheResharding(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("late", "", 2, recv.URL), http.StatusCreated, nil)
	var leader string
	if !eventually(10*time.Second, func() bool {
		var v struct {
			InstanceCount int    `json:"instanceCount"`
			Leader        string `json:"leader"`
		}
		mustDo(t, c.peers[0], "GET", "/api/v1/jobs/late", nil, http.StatusOK, &v)
		leader = v.Leader
		return v.InstanceCount == 2 && leader != ""
	}) {
		t.Fatal("the job never had two instances and a leader")
	}
	// what the API writes when it lists only the leader: the job is not sharded yet, so the leader reshards
	// and gives the other instance an item
	body := fmt.Sprintf(`{"id":"t-late","jobParameter":"late","instances":[%q]}`, leader)
	zkCli(t, c.zk, "create", "/"+c.ns+"/late/trigger/"+leader, body)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatalf("the trigger ran %d of 2 items", len(ds))
	}
	recv.WaitFor(time.Second, func([]harness.Delivery) bool { return false })
	ds = recv.Deliveries(nil)
	owners := map[string]bool{}
	for _, d := range ds {
		if d.Payload.Source != "MANUAL" || d.Payload.JobParameter != "late" {
			t.Fatalf("delivery %+v", d.Payload)
		}
		owners[d.Payload.InstanceID] = true
	}
	if len(ds) != 2 || len(owners) != 2 {
		t.Fatalf("deliveries %+v, want one item on each peer", ds)
	}
	if out := zkCli(t, c.zk, "ls", "/"+c.ns+"/late/trigger"); !strings.Contains(out, "[]") {
		t.Fatalf("a trigger node was left behind:\n%s", out)
	}
}
