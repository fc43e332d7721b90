package integration

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/schedule"
)

// Issue 24 (S1): overlapPolicy, catchUp and jitterMs against real peers, ZooKeeper and receivers.

// slowFirst answers the first NORMAL_TRIGGER delivery after hold, every other at once.
func slowFirst(recv *harness.Receiver, hold time.Duration) {
	var mu sync.Mutex
	done := false
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if !done && d.Payload.Source == "NORMAL_TRIGGER" {
			done = true
			return 200, `{}`, hold
		}
		return 200, `{}`, 0
	})
}

func execution(t *testing.T, p *harness.Peer, id string) ejserver.Execution {
	t.Helper()
	var e ejserver.Execution
	mustDo(t, p, "GET", "/api/v1/executions/"+id, nil, http.StatusOK, &e)
	return e
}

// ALLOW: fires that find the item running run beside it, each its own execution, and no catch-up follows.
func TestOverlapAllowRunsBeside(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	slowFirst(recv, 3*time.Second)
	c := newCluster(t, 2)
	spec := job("allow", "* * * * * ?", 1, recv.URL)
	spec["overlapPolicy"] = "ALLOW"
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool {
		return len(ds) >= 3 && ds[len(ds)-1].ArrivedAt.Before(ds[0].ArrivedAt.Add(3*time.Second))
	})
	if !ok {
		t.Fatalf("no fire ran beside the slow one: %d deliveries", len(ds))
	}
	ids := map[string]bool{}
	for _, d := range ds {
		if d.Payload.Source != "NORMAL_TRIGGER" || ids[d.Payload.ExecutionID] {
			t.Fatalf("delivery %+v: a catch-up or a reused execution id", d.Payload)
		}
		ids[d.Payload.ExecutionID] = true
	}
	first := ds[0].Payload.ExecutionID
	if !eventually(10*time.Second, func() bool { e := execution(t, c.peers[0], first); return e.Done() && e.Success }) {
		t.Fatal("the slow execution's end is not in the history")
	}
	if e := execution(t, c.peers[0], ds[1].Payload.ExecutionID); !e.Done() || !e.Success {
		t.Fatalf("the overlapping execution's record: %+v", e)
	}
	for _, d := range recv.Deliveries(anyDelivery) {
		if d.Payload.Source == "MISFIRE" {
			t.Fatal("ALLOW buffered a catch-up")
		}
	}
}

// SKIP (overlapPolicy, not misfire): the fires that find the item running are skipped, none is caught up.
func TestOverlapSkip(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	slowFirst(recv, 2500*time.Millisecond)
	c := newCluster(t, 1)
	spec := job("skipper", "* * * * * ?", 1, recv.URL)
	spec["overlapPolicy"] = "SKIP"
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(10*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 3 })
	if !ok {
		t.Fatalf("%d deliveries", len(ds))
	}
	if ds[1].ArrivedAt.Before(ds[0].ArrivedAt.Add(2500 * time.Millisecond)) {
		t.Fatal("a fire ran while the item was running")
	}
	for _, d := range ds {
		if d.Payload.Source != "NORMAL_TRIGGER" {
			t.Fatalf("source %s with SKIP", d.Payload.Source)
		}
	}
}

// CANCEL_PREVIOUS: the next fire ends the running attempt as cancelled, on the peer that runs it, and runs
// at once rather than after it.
func TestOverlapCancelPrevious(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	slowFirst(recv, 20*time.Second)
	c := newCluster(t, 2)
	spec := job("replace", "0/2 * * * * ?", 1, recv.URL)
	spec["overlapPolicy"] = "CANCEL_PREVIOUS"
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("the next fire did not run while the first was held")
	}
	if gap := ds[1].ArrivedAt.Sub(ds[0].ArrivedAt); gap > 4*time.Second {
		t.Fatalf("the next fire waited %s for the cancelled one", gap)
	}
	first := ds[0].Payload.ExecutionID
	var e ejserver.Execution
	if !eventually(10*time.Second, func() bool { e = execution(t, c.peers[0], first); return e.Done() }) {
		t.Fatal("the cancelled execution has no end in the history")
	}
	if e.Success || e.State != "CANCELLED" {
		t.Fatalf("the cancelled execution is recorded as %+v", e)
	}
	if ds[1].Payload.ExecutionID == first || ds[1].Payload.Source != "NORMAL_TRIGGER" {
		t.Fatalf("the replacing fire: %+v", ds[1].Payload)
	}
}

// CANCEL_PREVIOUS whose running item is on a dead peer: once the dead peer's session ends, a survivor owns
// the item, ends the dead peer's attempt in the history, and the fires run again.
func TestOverlapCancelPreviousOnDeadPeer(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	slowFirst(recv, time.Minute)
	c := newCluster(t, 2, withSessionTimeout(4*time.Second))
	spec := job("replacedead", "* * * * * ?", 1, recv.URL)
	spec["overlapPolicy"] = "CANCEL_PREVIOUS"
	spec["failover"] = false
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("no fire")
	}
	held := ds[0].Payload
	var dead, alive *harness.Peer
	for _, p := range c.peers {
		if p.InstanceID() == held.InstanceID {
			dead = p
		} else {
			alive = p
		}
	}
	if dead == nil || alive == nil {
		t.Fatalf("the held item ran on %s, not one of the peers", held.InstanceID)
	}
	// the holder's cancel of its own attempt at the next fire is TestOverlapCancelPrevious: kill it before
	dead.Kill()
	killed := time.Now()
	_, ok = recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		return slices.ContainsFunc(ds, func(d harness.Delivery) bool { return d.Payload.InstanceID == alive.InstanceID() })
	})
	if !ok {
		t.Fatal("the survivor never ran the item")
	}
	t.Logf("first fire on the survivor %s after the kill", time.Since(killed).Round(time.Millisecond))
	var e ejserver.Execution
	if !eventually(10*time.Second, func() bool { e = execution(t, alive, held.ExecutionID); return e.Done() }) {
		t.Fatalf("the dead peer's attempt has no end in the history: %+v", e)
	}
	if e.Success {
		t.Fatalf("the dead peer's attempt is recorded as a success: %+v", e)
	}
}

// catchUp all: after the whole cluster was down, every fire missed within the window runs, oldest first,
// each as MISFIRE with its own scheduledAt.
func TestCatchUpAllAfterOutage(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	spec := job("catchall", "* * * * * ?", 2, recv.URL)
	spec["catchUp"] = "all"
	spec["catchUpWindowSeconds"] = 60
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	if _, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 4 }); !ok {
		t.Fatal("no fires")
	}
	for _, p := range c.peers {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	before := recv.Deliveries(anyDelivery)
	lastRun := map[int]time.Time{}
	for _, d := range before {
		if d.Payload.ScheduledAt.After(lastRun[d.Payload.ShardingItem]) {
			lastRun[d.Payload.ShardingItem] = d.Payload.ScheduledAt
		}
	}
	recv.WaitFor(3*time.Second, func([]harness.Delivery) bool { return false }) // the cluster is down for 3 s
	for _, p := range c.peers {
		if err := p.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	var firstNormal map[int]time.Time
	ok := eventually(20*time.Second, func() bool {
		firstNormal = map[int]time.Time{}
		for _, d := range recv.Deliveries(anyDelivery)[len(before):] {
			if d.Payload.Source == "NORMAL_TRIGGER" && (firstNormal[d.Payload.ShardingItem].IsZero() || d.Payload.ScheduledAt.Before(firstNormal[d.Payload.ShardingItem])) {
				firstNormal[d.Payload.ShardingItem] = d.Payload.ScheduledAt
			}
		}
		if len(firstNormal) < 2 {
			return false
		}
		for item := range 2 {
			if len(missedRuns(recv.Deliveries(anyDelivery)[len(before):], item)) < int(firstNormal[item].Sub(lastRun[item])/time.Second)-1 {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("not every missed fire was caught up: last runs %v, first fires after %v", lastRun, firstNormal)
	}
	for item := range 2 {
		got := missedRuns(recv.Deliveries(anyDelivery)[len(before):], item)
		var want []time.Time
		for at := lastRun[item].Add(time.Second); at.Before(firstNormal[item]); at = at.Add(time.Second) {
			want = append(want, at)
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Fatalf("item %d caught up %v, want %v (oldest first, each once)", item, got, want)
		}
	}
}

// missedRuns lists the scheduledAt of an item's MISFIRE deliveries in arrival order.
func missedRuns(ds []harness.Delivery, item int) []time.Time {
	var out []time.Time
	for _, d := range ds {
		if d.Payload.Source == "MISFIRE" && d.Payload.ShardingItem == item {
			out = append(out, d.Payload.ScheduledAt)
		}
	}
	return out
}

// jitterMs: each fire leaves at its deterministic offset, the same on every peer, and the body says both.
func TestJitterIsDeterministicAndInTheBody(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	spec := job("jittery", "* * * * * ?", 4, recv.URL)
	spec["jitterMs"] = 700
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("plain", "* * * * * ?", 1, recv.URL), http.StatusCreated, nil)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(filter(ds, "jittery")) >= 12 })
	if !ok {
		t.Fatal("too few fires")
	}
	peers := map[string]bool{}
	offsets := map[time.Duration]bool{}
	for _, d := range filter(ds, "jittery") {
		p := d.Payload
		want := schedule.Jitter("jittery", p.ScheduledAt, 700)
		if time.Duration(p.JitterMs)*time.Millisecond != want || !p.DueAt.Equal(p.ScheduledAt.Add(want)) {
			t.Fatalf("item %d of %v: jitterMs %d dueAt %v, want %v", p.ShardingItem, p.ScheduledAt, p.JitterMs, p.DueAt, want)
		}
		if d.ArrivedAt.Before(p.DueAt) {
			t.Fatalf("item %d left %v before its due time %v", p.ShardingItem, p.DueAt.Sub(d.ArrivedAt), p.DueAt)
		}
		peers[p.InstanceID], offsets[want] = true, true
	}
	if len(peers) < 2 || len(offsets) < 2 {
		t.Fatalf("fires on %d peers with %d distinct offsets", len(peers), len(offsets))
	}
	for _, d := range filter(ds, "plain") {
		if d.Payload.JitterMs != 0 || !d.Payload.DueAt.IsZero() || d.Body == nil {
			t.Fatalf("a job without jitter has a changed body: %s", d.Body)
		}
	}
}

func anyDelivery(harness.Delivery) bool { return true }

// CANCEL_PREVIOUS of accepted work: the next fire cancels the item's lease, whichever peer holds it, and
// runs; the receiver learns it from its next heartbeat's answer, and the history says CANCELLED.
func TestOverlapCancelPreviousAsync(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	accepting(recv)
	c := newCluster(t, 2)
	spec := asyncJob("asyncreplace", "0/3 * * * * ?", 1, recv.URL, 30)
	spec["overlapPolicy"] = "CANCEL_PREVIOUS"
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("the next fire did not run while the accepted item was running")
	}
	first, next := ds[0].Payload, ds[1].Payload
	if next.ExecutionID == first.ExecutionID || next.Source != "NORMAL_TRIGGER" {
		t.Fatalf("the replacing fire: %+v", next)
	}
	other := c.peers[1]
	if other.InstanceID() == first.InstanceID {
		other = c.peers[0]
	}
	if s, typ, _ := callback(t, other, first.ExecutionID, "heartbeat", first.CallbackToken, nil); s != 409 || typ != "execution-cancelled" {
		t.Fatalf("heartbeat of the cancelled item: %d %s", s, typ)
	}
	e := waitExecution(t, other, first.ExecutionID, 10*time.Second, func(e executionRecord) bool { return e.CompletedAt != nil })
	if e.Success || e.State != "CANCELLED" || !strings.Contains(e.FailureCause, "CANCEL_PREVIOUS") {
		t.Fatalf("history of the cancelled item: %+v", e)
	}
	if s, _, v := callback(t, other, next.ExecutionID, "heartbeat", next.CallbackToken, nil); s != 200 || v.State != "RUNNING" {
		t.Fatalf("the replacing item is not running: %d %+v", s, v)
	}
}
