package integration

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

func leaderOf(t *testing.T, p *harness.Peer, job string) string {
	t.Helper()
	var v struct {
		Leader string `json:"leader"`
	}
	mustDo(t, p, "GET", "/api/v1/jobs/"+job, nil, http.StatusOK, &v)
	return v.Leader
}

// A peer killed while its items are in flight: a survivor re-POSTs exactly those items with source FAILOVER
// and the same webhook-id, within the session timeout plus a second. Sequential (no t.Parallel): that bound
// measures the machine too, and other tests' load would stretch it.
func TestFailoverRePostsTheItemsAKilledPeerWasRunning(t *testing.T) {
	for _, victimIsLeader := range []bool{false, true} {
		t.Run(fmt.Sprintf("leader=%v", victimIsLeader), func(t *testing.T) {
			testFailover(t, victimIsLeader)
		})
	}
}

func testFailover(t *testing.T, victimIsLeader bool) {
	const sessionTimeout = 2 * time.Second
	recv := newReceiver(t)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Source == "FAILOVER" {
			return 200, `{}`, 0
		}
		<-release // normal runs hang until the test ends: they are "in flight" when the peer dies
		return 200, `{}`, 0
	})
	c := newCluster(t, 3, withSessionTimeout(sessionTimeout))
	spec := job("fo", "0/2 * * * * ?", 6, recv.URL)
	spec["failover"] = true
	spec["retry"] = map[string]any{"maxAttempts": 1}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)

	// the first fire: all six items in flight
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 6 })
	if !ok {
		t.Fatalf("only %d items in flight", len(ds))
	}
	leader := leaderOf(t, c.peers[0], "fo")
	var victim *harness.Peer
	for _, p := range c.peers {
		if (p.InstanceID() == leader) == victimIsLeader {
			victim = p
			break
		}
	}
	var victimItems []int
	ids := map[int]string{}
	for _, d := range ds[:6] {
		if d.Payload.InstanceID == victim.InstanceID() {
			victimItems = append(victimItems, d.Payload.ShardingItem)
			ids[d.Payload.ShardingItem] = d.Payload.ExecutionID
		}
	}
	slices.Sort(victimItems)
	if len(victimItems) != 2 {
		t.Fatalf("victim ran %v", victimItems)
	}

	victim.Kill()
	killed := time.Now()
	failovers, ok := recv.WaitFor(sessionTimeout+10*time.Second, func(ds []harness.Delivery) bool {
		n := 0
		for _, d := range ds {
			if d.Payload.Source == "FAILOVER" {
				n++
			}
		}
		return n >= 2
	})
	if !ok {
		t.Fatalf("no failover of items %v", victimItems)
	}
	var got []int
	var last time.Time
	for _, d := range failovers {
		if d.Payload.Source != "FAILOVER" {
			continue
		}
		got = append(got, d.Payload.ShardingItem)
		if d.Header.Get("webhook-id") != ids[d.Payload.ShardingItem] || d.Payload.ExecutionID != ids[d.Payload.ShardingItem] {
			t.Errorf("item %d re-POSTed with webhook-id %s, want the interrupted %s", d.Payload.ShardingItem, d.Header.Get("webhook-id"), ids[d.Payload.ShardingItem])
		}
		if d.Payload.InstanceID == victim.InstanceID() {
			t.Errorf("failover by the dead peer itself")
		}
		last = d.ArrivedAt
	}
	slices.Sort(got)
	if !slices.Equal(got, victimItems) {
		t.Fatalf("failed over %v, want exactly %v", got, victimItems)
	}
	delay := last.Sub(killed)
	t.Logf("failover delay (kill -9 to the last re-POST): %s with a %s session timeout", delay.Round(time.Millisecond), sessionTimeout)
	if delay > sessionTimeout+time.Second {
		t.Errorf("failover took %s, more than the session timeout + 1 s", delay)
	}
}

// A receiver slower than the cron interval: the fires that find the item running collapse into exactly
// one MISFIRE catch-up after it ends.
func TestMisfireGivesOneCatchUpPerBacklog(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var mu sync.Mutex
	slowDone := false
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if !slowDone && d.Payload.Source == "NORMAL_TRIGGER" {
			slowDone = true
			return 200, `{}`, 3500 * time.Millisecond // spans three or four fires
		}
		return 200, `{}`, 0
	})
	c := newCluster(t, 1)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("slow", "* * * * * ?", 1, recv.URL), http.StatusCreated, nil)
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool {
		for _, d := range ds {
			if d.Payload.Source == "MISFIRE" {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no misfire catch-up; deliveries %d", len(ds))
	}
	first := ds[0]
	// let a few more normal fires pass: no second catch-up for the same backlog (checked below)
	ds, _ = recv.WaitFor(4*time.Second, func(ds []harness.Delivery) bool { return false })
	var misfires []harness.Delivery
	for _, d := range ds {
		if d.Payload.Source == "MISFIRE" {
			misfires = append(misfires, d)
		}
	}
	if len(misfires) == 0 {
		t.Fatal("the misfire catch-up is gone from the deliveries")
	}
	// The slow run's backlog gets exactly one catch-up. A fire that comes while that catch-up is itself still
	// running (on a loaded machine its start and record can straddle the next whole second) is a new backlog and
	// gets one of its own. So every later catch-up must be for a fire scheduled after the slow run answered
	// and after the fire of the catch-up before it: one per missed fire, or a repeat, breaks that.
	slowEnd := first.ArrivedAt.Add(3500 * time.Millisecond)
	for i := 1; i < len(misfires); i++ {
		at := misfires[i].Payload.ScheduledAt
		if !at.After(slowEnd) || !at.After(misfires[i-1].Payload.ScheduledAt) {
			t.Fatalf("%d misfire catch-ups: the one for the fire at %s repeats the backlog of the slow run (answered %s) or of the catch-up before it (fire at %s)",
				len(misfires), at.Format(time.StampMilli), slowEnd.Format(time.StampMilli), misfires[i-1].Payload.ScheduledAt.Format(time.StampMilli))
		}
	}
	m := misfires[0]
	if m.ArrivedAt.Before(slowEnd) || !m.Payload.ScheduledAt.After(first.Payload.ScheduledAt) {
		t.Fatalf("catch-up %+v arrived before the slow run ended or for the wrong fire", m.Payload)
	}
	if m.Payload.ExecutionID == first.Payload.ExecutionID {
		t.Fatal("the catch-up reused the slow run's execution id")
	}
	// normal fires resumed after the catch-up
	normalAfter := 0
	for _, d := range ds {
		if d.Payload.Source == "NORMAL_TRIGGER" && d.ArrivedAt.After(m.ArrivedAt) {
			normalAfter++
		}
	}
	if normalAfter == 0 {
		t.Fatal("no normal fire after the catch-up")
	}
}

// With misfire off, the fires that find the item running are skipped.
func TestMisfireOffSkips(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var mu sync.Mutex
	slowDone := false
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if !slowDone {
			slowDone = true
			return 200, `{}`, 2500 * time.Millisecond
		}
		return 200, `{}`, 0
	})
	c := newCluster(t, 1)
	spec := job("skip", "* * * * * ?", 1, recv.URL)
	spec["misfire"] = false
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, _ := recv.WaitFor(8*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 4 })
	for _, d := range ds {
		if d.Payload.Source != "NORMAL_TRIGGER" {
			t.Fatalf("source %s with misfire off", d.Payload.Source)
		}
	}
	if len(ds) < 2 {
		t.Fatalf("%d deliveries", len(ds))
	}
}

// A trigger while the item runs is not dropped: it runs right after, and the response says so.
func TestTriggerWhileRunningRunsRightAfter(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var mu sync.Mutex
	slowDone := false
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if !slowDone {
			slowDone = true
			return 200, `{}`, 3 * time.Second
		}
		return 200, `{}`, 0
	})
	c := newCluster(t, 1)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("busy", "", 2, recv.URL), http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/busy/trigger", map[string]any{"items": []int{0}}, http.StatusAccepted, nil)
	if _, ok := recv.WaitFor(10*time.Second, func(ds []harness.Delivery) bool { return len(ds) == 1 }); !ok {
		t.Fatal("first trigger did not arrive")
	}
	var res struct {
		Instances []struct {
			Items   []int `json:"items"`
			Running []int `json:"running"`
		} `json:"instances"`
		Message string `json:"message"`
	}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/busy/trigger", map[string]any{"jobParameter": "second"}, http.StatusAccepted, &res)
	if len(res.Instances) != 1 || !slices.Equal(res.Instances[0].Items, []int{0, 1}) || !slices.Equal(res.Instances[0].Running, []int{0}) {
		t.Fatalf("trigger answer %+v", res)
	}
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 3 })
	if !ok {
		t.Fatalf("%d deliveries; the second trigger was dropped", len(ds))
	}
	var second []harness.Delivery
	for _, d := range ds {
		if d.Payload.JobParameter == "second" {
			second = append(second, d)
		}
	}
	if len(second) != 2 {
		t.Fatalf("second trigger ran %d items", len(second))
	}
	for _, d := range second {
		if d.Payload.ShardingItem == 0 && d.ArrivedAt.Before(ds[0].ArrivedAt.Add(3*time.Second)) {
			t.Fatal("item 0 ran again before its running run ended")
		}
	}
}
