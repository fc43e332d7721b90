package integration

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

func withBinary(bin string) clusterOpt {
	return func(c *harness.PeerConfig) { c.Binary = bin }
}

// A rolling upgrade under a steady workload: each of 3 peers is replaced in turn by a process of a newer build,
// in the two ways it is done:
//   - surge, as a Kubernetes Deployment does it (maxSurge 1, maxUnavailable 0): the new process starts on a
//     new address (a new pod), takes a share of the items, then the old one gets SIGTERM, drains and exits 0;
//   - in place, as systemd or an operator does it: the old process gets SIGTERM, drains and exits 0, then the
//     new build starts on the same address and data directory.
//
// Across the whole upgrade every item of every fire is delivered, and an item delivered twice is a re-POST
// under the same webhook-id (a failover the receiver can dedupe), never a second execution; at the end every
// instance reports the newer version.
func TestRollingUpgradeMissesNoFire(t *testing.T) {
	// sequential (no t.Parallel): under other tests' load a fire next to a resharding lost items, decided by
	// two peers on either side of it (fixed: internal/dispatch/gained.go); its drains are timed as well
	newer, err := harness.BuildVersion(t.TempDir(), upgradeVersion)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("surge", func(t *testing.T) { testRollingUpgrade(t, newer, true) })
	t.Run("in place", func(t *testing.T) { testRollingUpgrade(t, newer, false) })
}

const upgradeVersion = "v0.0.0-upgrade-test"

func testRollingUpgrade(t *testing.T, newer string, surge bool) {
	recv := newReceiver(t)
	// a receiver that takes a while, so that items are in flight when a peer is told to stop
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) {
		return http.StatusOK, `{"ok":true}`, 150 * time.Millisecond
	})
	c := newCluster(t, 3, withSessionTimeout(4*time.Second))
	jobs := map[string]int{"roll-a": 6, "roll-b": 3}
	for name, items := range jobs {
		spec := job(name, "* * * * * ?", items, recv.URL)
		spec["failover"] = true
		spec["misfire"] = true
		mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	}
	var oldIDs []string
	for _, p := range c.peers {
		oldIDs = append(oldIDs, p.InstanceID())
	}
	byOld := func(by map[string]bool) bool {
		for _, id := range oldIDs {
			if by[id] {
				return true
			}
		}
		return false
	}
	// the window starts at the first fire of both jobs that all three old peers share
	start := waitFire(t, recv, jobs, time.Time{}, func(by map[string]bool) bool {
		return len(by) == 3 && by[oldIDs[0]] && by[oldIDs[1]] && by[oldIDs[2]]
	})
	t.Logf("workload steady on 3 peers from %s", start.Format(time.TimeOnly))

	for i, o := range slices.Clone(c.peers) {
		oldID := o.InstanceID()
		var n *harness.Peer
		if surge {
			n = c.add(withBinary(newer))
			// the new peer takes items before the old one leaves
			waitFire(t, recv, jobs, time.Now(), func(by map[string]bool) bool { return by[n.InstanceID()] })
		}
		stopping := time.Now()
		if err := o.Stop(30 * time.Second); err != nil {
			t.Fatalf("old peer %d (%s) did not exit 0 on SIGTERM: %v", i+1, oldID, err)
		}
		drained := time.Since(stopping).Round(time.Millisecond)
		if !surge {
			o.Config.Binary = newer
			if err := o.Restart(); err != nil {
				t.Fatalf("start the newer build in place of peer %d: %v", i+1, err)
			}
			n = o
		}
		// a complete fire without the old process, the new one taking part
		waitFire(t, recv, jobs, time.Now(), func(by map[string]bool) bool { return !by[oldID] && by[n.InstanceID()] })
		t.Logf("peer %d replaced: %s (%s) -> %s (%s); the old one drained in %s", i+1, oldID, o.Config.ServerIP,
			n.InstanceID(), n.Config.ServerIP, drained)
	}
	// the window ends at the next fire, delivered by the three new processes alone
	end := waitFire(t, recv, jobs, time.Now(), func(by map[string]bool) bool { return !byOld(by) && len(by) == 3 })

	// every scheduled second of the window: every item of both jobs, and no second execution
	ds := recv.Deliveries(nil)
	type key struct {
		job  string
		at   time.Time
		item int
	}
	got := map[key][]harness.Delivery{}
	for _, d := range ds {
		k := key{d.Payload.JobName, d.Payload.ScheduledAt, d.Payload.ShardingItem}
		got[k] = append(got[k], d)
	}
	fires, missed, redelivered := 0, 0, 0
	for at := start; !at.After(end); at = at.Add(time.Second) {
		for name, items := range jobs {
			fires++
			for item := range items {
				group := got[key{name, at, item}]
				switch {
				case len(group) == 0:
					missed++
					t.Errorf("missed: %s item %d of the fire at %s", name, item, at.Format(time.TimeOnly))
				case len(group) > 1:
					redelivered++
					for _, d := range group[1:] {
						if id := d.Header.Get("webhook-id"); id != group[0].Header.Get("webhook-id") {
							t.Errorf("duplicate: %s item %d of the fire at %s executed twice under two webhook-ids (%s by %s %s, %s by %s %s)",
								name, item, at.Format(time.TimeOnly), group[0].Header.Get("webhook-id"), group[0].Payload.InstanceID,
								group[0].Payload.Source, id, d.Payload.InstanceID, d.Payload.Source)
						}
					}
				}
			}
		}
	}
	t.Logf("window %s-%s: %d fires of 2 jobs, %d items missed, %d re-POSTed under the same webhook-id",
		start.Format(time.TimeOnly), end.Format(time.TimeOnly), fires, missed, redelivered)

	// the cluster now runs the newer build only
	var list struct {
		Items []struct {
			InstanceID string `json:"instanceId"`
			Version    string `json:"version"`
		} `json:"items"`
	}
	mustDo(t, c.peers[len(c.peers)-1], "GET", "/api/v1/instances", nil, http.StatusOK, &list)
	if len(list.Items) != 3 {
		t.Fatalf("instances after the upgrade: %+v", list.Items)
	}
	for _, in := range list.Items {
		if in.Version != upgradeVersion {
			t.Errorf("instance %s runs %q after the upgrade", in.InstanceID, in.Version)
		}
	}
}

// waitFire waits for a scheduled time after after at which every item of every job arrived and the
// instances that delivered them satisfy by; it returns that time.
func waitFire(t *testing.T, recv *harness.Receiver, jobs map[string]int, after time.Time, by func(map[string]bool) bool) time.Time {
	t.Helper()
	var found time.Time
	_, ok := recv.WaitFor(60*time.Second, func(ds []harness.Delivery) bool {
		type fire struct {
			items map[string]map[int]bool
			by    map[string]bool
		}
		all := map[time.Time]*fire{}
		for _, d := range ds {
			at := d.Payload.ScheduledAt
			if !at.After(after) {
				continue
			}
			f := all[at]
			if f == nil {
				f = &fire{items: map[string]map[int]bool{}, by: map[string]bool{}}
				all[at] = f
			}
			if f.items[d.Payload.JobName] == nil {
				f.items[d.Payload.JobName] = map[int]bool{}
			}
			f.items[d.Payload.JobName][d.Payload.ShardingItem] = true
			f.by[d.Payload.InstanceID] = true
		}
		var times []time.Time
		for at, f := range all {
			complete := true
			for name, n := range jobs {
				complete = complete && len(f.items[name]) == n
			}
			if complete && by(f.by) {
				times = append(times, at)
			}
		}
		if len(times) == 0 {
			return false
		}
		found = slices.MinFunc(times, time.Time.Compare)
		return true
	})
	if !ok {
		t.Fatalf("no complete fire after %s delivered as wanted", after.Format(time.TimeOnly))
	}
	return found
}
