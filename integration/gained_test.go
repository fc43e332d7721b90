package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// A peer killed just before a fire it would have run: the survivor decides that fire while the dead peer's
// session still stands (its items look owned), so it runs only its own; once the session expires its leader
// reshards and the survivor gains the dead peer's item, which it then runs for that fire, late, under the
// fire's scheduled time and as a scheduled fire (not a failover: nothing was running). Before, that item of
// that fire was delivered by nobody.
func TestAFireDecidedBeforeAReshardingRunsTheItemsItGave(t *testing.T) {
	t.Parallel()
	// the dead peer's session ends between 8 and 12 s after its last ping (it pings every 4 s): 5-9 s after the
	// fire
	const sessionTimeout = 12 * time.Second
	recv := newReceiver(t)
	c := newCluster(t, 2, withSessionTimeout(sessionTimeout))
	// every 20 s, so the dead peer's session ends outside the 3 s around a fire in which a leader only flags a
	// resharding for the next fire, and long before that one
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("gain", "0/20 * * * * ?", 2, recv.URL), http.StatusCreated, nil)
	jobs := map[string]int{"gain": 2}
	first := waitFire(t, recv, jobs, time.Time{}, func(by map[string]bool) bool { return len(by) == 2 })

	var victim, survivor *harness.Peer
	for _, d := range recv.Deliveries(func(d harness.Delivery) bool { return d.Payload.ScheduledAt.Equal(first) }) {
		if d.Payload.ShardingItem == 1 {
			for _, p := range c.peers {
				if p.InstanceID() == d.Payload.InstanceID {
					victim = p
				} else {
					survivor = p
				}
			}
		}
	}
	if victim == nil || survivor == nil {
		t.Fatalf("the fire at %s: no peer ran item 1", first.Format(time.TimeOnly))
	}
	// killed 3 s before a fire: before it hands the fire off (1 s before) and begins its item
	fire := first.Add(20 * time.Second)
	for time.Until(fire) < 5*time.Second {
		fire = fire.Add(20 * time.Second)
	}
	time.Sleep(time.Until(fire.Add(-3 * time.Second)))
	victim.Kill()

	of := func(d harness.Delivery) bool { return d.Payload.ScheduledAt.Equal(fire) }
	_, ok := recv.WaitFor(time.Until(fire.Add(sessionTimeout+15*time.Second)), func(ds []harness.Delivery) bool {
		n := 0
		for _, d := range ds {
			if of(d) {
				n++
			}
		}
		return n >= 2
	})
	if !ok {
		t.Fatalf("the fire at %s: items delivered %v, want both", fire.Format(time.TimeOnly), items(recv.Deliveries(of)))
	}
	time.Sleep(time.Second) // a second delivery of an item would come about now
	ds := recv.Deliveries(of)
	if len(ds) != 2 {
		t.Fatalf("the fire at %s: %d deliveries %v, want 2", fire.Format(time.TimeOnly), len(ds), items(ds))
	}
	for _, d := range ds {
		if d.Payload.InstanceID != survivor.InstanceID() || d.Payload.Source != "NORMAL_TRIGGER" {
			t.Fatalf("item %d of the fire at %s: run by %s as %s, want the survivor %s as NORMAL_TRIGGER",
				d.Payload.ShardingItem, fire.Format(time.TimeOnly), d.Payload.InstanceID, d.Payload.Source, survivor.InstanceID())
		}
		if d.Payload.ShardingItem == 1 {
			late := d.ArrivedAt.Sub(fire)
			t.Logf("the dead peer's item ran %s after its fire's time", late.Round(time.Millisecond))
		}
	}
	if log := survivor.Log(); !strings.Contains(log, "items this peer gained after it decided their fire: run for it") {
		t.Fatal("the survivor's log does not say it ran an item it gained after it decided its fire")
	}
}

// items lists the items of deliveries.
func items(ds []harness.Delivery) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Payload.ShardingItem
	}
	return out
}
