package integration

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// catchUp all across a peer's death or freeze (issue 24): "with all, a fault costs lateness, never a fire".
// The peer dies (or freezes past its session) while its request for an item is at the receiver, so the run
// is left behind in flight: the survivor ends it as LOST (its receiver had it) and, once it gains the items,
// runs every fire they missed since, each once, as MISFIRE with its own scheduledAt. Every fire of every
// item between the first full fire before the fault and one well after it reaches the receiver under one
// webhook-id, whatever the load (no timing is asserted: deadlines are upper bounds).

func TestCatchUpAllWhenAPeerIsKilled(t *testing.T) {
	t.Parallel()
	catchUpAcrossAFault(t, "killed", func(t *testing.T, victim *harness.Peer, _ func() bool) { victim.Kill() })
}

func TestCatchUpAllWhenAPeerFreezesPastItsSession(t *testing.T) {
	t.Parallel()
	catchUpAcrossAFault(t, "frozen", func(t *testing.T, victim *harness.Peer, tookOver func() bool) {
		if err := victim.Pause(); err != nil {
			t.Fatal(err)
		}
		ok := eventually(40*time.Second, tookOver)
		if err := victim.Resume(); err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatal("the survivor never ran the frozen peer's items")
		}
	})
}

func catchUpAcrossAFault(t *testing.T, name string, fault func(t *testing.T, victim *harness.Peer, tookOver func() bool)) {
	recv := newReceiver(t)
	c := newCluster(t, 2, withSessionTimeout(2*time.Second))
	const items = 4
	spec := job(name, "* * * * * ?", items, recv.URL)
	spec["catchUp"] = "all"
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	deliveries := func() []harness.Delivery { return recv.Deliveries(harness.Job(name)) }

	// start: the first fire whose items all reached the receiver from two peers, one more fire after it
	var start time.Time
	owners := map[int]string{}
	if !eventually(30*time.Second, func() bool {
		start, owners = firstFullFire(deliveries(), items)
		return !start.IsZero() && len(distinct(owners)) == 2 && latestNormal(deliveries()).After(start)
	}) {
		t.Fatalf("no fire ran the %d items on two peers: %v", items, owners)
	}
	victim, survivor := c.peers[0], c.peers[1]
	if owners[0] != victim.InstanceID() {
		victim, survivor = survivor, victim
	}
	var victims []int
	for i, o := range owners {
		if o == victim.InstanceID() {
			victims = append(victims, i)
		}
	}

	// hold the victim's next request at the receiver, and strike while it is there
	var once sync.Once
	held := make(chan struct{})
	var mu sync.Mutex
	holding := true
	var struckFire time.Time // the fire the victim had in flight
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if holding && d.Payload.InstanceID == victim.InstanceID() {
			once.Do(func() { struckFire = d.Payload.ScheduledAt; close(held) })
			return http.StatusOK, `{"ok":true}`, 3 * time.Second
		}
		return http.StatusOK, `{"ok":true}`, 0
	})
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the victim sent nothing more")
	}
	struck := time.Now()
	tookOver := func() bool { // the survivor ran a scheduled fire of every item of the victim
		ran := map[int]bool{}
		for _, d := range deliveries() {
			if d.Payload.InstanceID == survivor.InstanceID() && d.Payload.Source == "NORMAL_TRIGGER" && d.ArrivedAt.After(struck) {
				ran[d.Payload.ShardingItem] = true
			}
		}
		for _, i := range victims {
			if !ran[i] {
				return false
			}
		}
		return true
	}
	fault(t, victim, tookOver)
	mu.Lock()
	holding = false
	mu.Unlock()

	// end: a fire well after the survivor took over (and after the frozen peer came back) that ran every item
	if !eventually(60*time.Second, tookOver) {
		t.Fatalf("the survivor never ran the %s peer's items %v", name, victims)
	}
	after := time.Now().Add(3 * time.Second)
	var end time.Time
	if !eventually(60*time.Second, func() bool {
		end = fullFireAfter(deliveries(), items, after)
		return !end.IsZero()
	}) {
		t.Fatalf("no fire ran all %d items after the fault", items)
	}
	// every fire of every item in [start, end] reaches the receiver (catch-ups run one after another), but
	// for the victim's items at the fire it had in flight when it died or froze: without failover (the
	// default, as in ElasticJob) such a run is ended as LOST, its outcome unknown (its request may not have
	// left; a frozen peer that wakes without its session does not send it), and it is not run again: its
	// receiver has it at most once
	mu.Lock()
	inFlight := struckFire
	mu.Unlock()
	var missing []string
	if !eventually(60*time.Second, func() bool {
		missing = slices.DeleteFunc(missingFires(deliveries(), items, start, end), func(k string) bool {
			return slices.ContainsFunc(victims, func(i int) bool {
				return k == fmt.Sprintf("%d@%s", i, inFlight.Format("15:04:05"))
			})
		})
		return len(missing) == 0
	}) {
		logPeers(t, c)
		t.Fatalf("fires never delivered between %s and %s: %v", start.Format("15:04:05"), end.Format("15:04:05"), missing)
	}
	ids := map[string]map[string]bool{} // item@second -> webhook-ids
	misfires := 0
	for _, d := range deliveries() {
		p := d.Payload
		if p.ScheduledAt.Before(start) || p.ScheduledAt.After(end) || p.Source == "MANUAL" {
			continue
		}
		k := fmt.Sprintf("%d@%s", p.ShardingItem, p.ScheduledAt.Format("15:04:05"))
		if ids[k] == nil {
			ids[k] = map[string]bool{}
		}
		ids[k][p.ExecutionID] = true
		if p.Source == "MISFIRE" {
			misfires++
		}
	}
	for k, set := range ids {
		if len(set) > 1 {
			defer logPeers(t, c)
			t.Errorf("item@fire %s delivered under %d webhook-ids: %v", k, len(set), set)
		}
	}
	if misfires == 0 {
		t.Errorf("no fire was caught up as MISFIRE: the fault cost no fire at all?")
	}
	t.Logf("%s peer: fires %s..%s of %d items each delivered once, %d of them caught up as MISFIRE",
		name, start.Format("15:04:05"), end.Format("15:04:05"), items, misfires)
}

// firstFullFire returns the earliest scheduled time whose fire reached the receiver for every item (NORMAL),
// and who ran each item then.
func firstFullFire(ds []harness.Delivery, items int) (time.Time, map[int]string) {
	by := map[time.Time]map[int]string{}
	for _, d := range ds {
		if d.Payload.Source != "NORMAL_TRIGGER" {
			continue
		}
		at := d.Payload.ScheduledAt
		if by[at] == nil {
			by[at] = map[int]string{}
		}
		by[at][d.Payload.ShardingItem] = d.Payload.InstanceID
	}
	var times []time.Time
	for at, m := range by {
		if len(m) == items && len(distinct(m)) > 1 {
			times = append(times, at)
		}
	}
	if len(times) == 0 {
		return time.Time{}, nil
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times[0], by[times[0]]
}

// fullFireAfter returns the earliest scheduled time after t whose fire reached the receiver for every item.
func fullFireAfter(ds []harness.Delivery, items int, t time.Time) time.Time {
	by := map[time.Time]map[int]bool{}
	var best time.Time
	for _, d := range ds {
		at := d.Payload.ScheduledAt
		if !at.After(t) || d.Payload.Source != "NORMAL_TRIGGER" {
			continue
		}
		if by[at] == nil {
			by[at] = map[int]bool{}
		}
		by[at][d.Payload.ShardingItem] = true
		if len(by[at]) == items && (best.IsZero() || at.Before(best)) {
			best = at
		}
	}
	return best
}

func latestNormal(ds []harness.Delivery) time.Time {
	var t time.Time
	for _, d := range ds {
		if d.Payload.Source == "NORMAL_TRIGGER" && d.Payload.ScheduledAt.After(t) {
			t = d.Payload.ScheduledAt
		}
	}
	return t
}

// missingFires lists the item@second in [start, end] (a per-second job) that never reached the receiver.
func missingFires(ds []harness.Delivery, items int, start, end time.Time) []string {
	got := map[string]bool{}
	for _, d := range ds {
		got[fmt.Sprintf("%d@%d", d.Payload.ShardingItem, d.Payload.ScheduledAt.Unix())] = true
	}
	var out []string
	for at := start; !at.After(end); at = at.Add(time.Second) {
		for i := range items {
			if !got[fmt.Sprintf("%d@%d", i, at.Unix())] {
				out = append(out, fmt.Sprintf("%d@%s", i, at.Format("15:04:05")))
			}
		}
	}
	return out
}

func distinct(m map[int]string) map[string]bool {
	out := map[string]bool{}
	for _, v := range m {
		out[v] = true
	}
	return out
}

// logPeers logs the peers' lines about catch-ups, runs not run and sessions, to tell why a fire went missing.
func logPeers(t *testing.T, c *testCluster) {
	for i, p := range c.peers {
		for _, line := range strings.Split(p.Log(), "\n") {
			if strings.Contains(line, "catch-up") || strings.Contains(line, "not run") || strings.Contains(line, "skipped") ||
				strings.Contains(line, "dropped") || strings.Contains(line, "session") || strings.Contains(line, "resharded") ||
				strings.Contains(line, "vanished") {
				t.Logf("peer %d: %s", i, line)
			}
		}
	}
}
