package cluster

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/ejserver/ejserver/internal/clock"
)

func TestDecidesItems(t *testing.T) {
	want := map[refreshKind]bool{
		kindJobs: false, kindPeer: false, kindPeers: false, kindPresence: false, kindReport: false,
		kindLoad: true, kindConfig: true, kindSharding: true,
		kindItemInstance: true, kindItemDisabled: true, kindItemFailover: true,
		kindNecessary: true, kindFailoverItems: true,
		kindInstances: false, kindServers: false, kindServer: false, kindLeader: false,
		kindTrigger: false, kindRegister: false, kindCampaign: false, kindCampaignLate: false,
	}
	for k := refreshKind(1); k <= lastKind; k++ {
		w, ok := want[k]
		if !ok {
			t.Fatalf("refresh kind %d is not classified here: does a fire choose its items by what it reads?", k)
		}
		if got := decidesItems(k); got != w {
			t.Errorf("decidesItems(%d) = %v, want %v", k, got, w)
		}
	}
}

// TestItemsSettledCountsOnlyItemRefreshes: a job whose registration writes and instance reads are queued
// is not Settled but is ItemsSettled; an item read queued makes it neither, until it is done.
func TestItemsSettledCountsOnlyItemRefreshes(t *testing.T) {
	r := &Registry{jobs: map[string]*jobEntry{}}
	e := r.ensureEntry("orders")
	e.st.hasConfig, e.st.loaded = true, true
	snap := func() *JobSnapshot {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.snapshotLocked(Identity{InstanceID: "me"})
	}
	check := func(step string, settled, itemsSettled bool) {
		t.Helper()
		s := snap()
		if s.Settled != settled || s.ItemsSettled != itemsSettled {
			t.Fatalf("%s: Settled %v ItemsSettled %v, want %v %v", step, s.Settled, s.ItemsSettled, settled, itemsSettled)
		}
	}
	check("idle", true, true)
	reg := refreshKey{kind: kindRegister, job: "orders"}
	inst := refreshKey{kind: kindInstances, job: "orders"}
	item := refreshKey{kind: kindItemInstance, job: "orders", item: 0}
	r.pendingDelta(reg, +1)
	r.pendingDelta(inst, +1)
	check("registration queued", false, true)
	r.pendingDelta(item, +1)
	check("an owner read queued", false, false)
	r.pendingDelta(reg, -1)
	r.pendingDelta(inst, -1)
	check("registration done", false, false)
	r.pendingDelta(item, -1)
	check("owner read", true, true)
	r.pendingDelta(refreshKey{kind: kindItemInstance, job: "other"}, +1) // another job, not loaded: no effect
	check("another job's read", true, true)
}

func TestUrgentRefreshes(t *testing.T) {
	for k := refreshKind(1); k <= lastKind; k++ {
		want := (decidesItems(k) && k != kindLoad) || k == kindPeers || k == kindReport
		if got := urgent(refreshKey{kind: k, job: "j"}); got != want {
			t.Errorf("urgent(%d) = %v, want %v", k, got, want)
		}
	}
}

// TestRefresherRunsUrgentKeysFirst: a resharding's owner read kicked behind a backlog of loads runs before them.
func TestRefresherRunsUrgentKeysFirst(t *testing.T) {
	w, stop, order := recordingRefresher()
	for i := range 5 {
		w.kick(refreshKey{kind: kindLoad, job: fmt.Sprintf("j%d", i)})
	}
	owner := refreshKey{kind: kindItemInstance, job: "j9", item: 0}
	w.kick(owner)
	drainRefresher(w, stop)
	if order := order(); len(order) != 6 || order[0] != owner {
		t.Fatalf("run order %v: want the owner read first, then the 5 loads", order)
	}
}

// TestRefresherKicksUrgentKeysFirst: a lost leader's campaign (not urgent by its kind) kicked with kickUrgent
// behind a backlog of instance listings runs before them (deletions.go).
func TestRefresherKicksUrgentKeysFirst(t *testing.T) {
	w, stop, order := recordingRefresher()
	for i := range 5 {
		w.kick(refreshKey{kind: kindInstances, job: fmt.Sprintf("j%d", i)})
	}
	campaign := refreshKey{kind: kindCampaign, job: "j9"}
	w.kickUrgent(campaign)
	w.kickUrgent(campaign) // kicked again while queued: as with kick, it is not queued twice
	drainRefresher(w, stop)
	if order := order(); len(order) < 6 || order[0] != campaign {
		t.Fatalf("run order %v: want the campaign first, then the 5 listings", order)
	}
}

// recordingRefresher is a one-worker refresher with the registry's urgent keys whose runs order reports.
func recordingRefresher() (w *refresher, stop chan struct{}, order func() []refreshKey) {
	stop = make(chan struct{})
	var mu sync.Mutex
	var ran []refreshKey
	w = newRefresher(1, func(k refreshKey) error {
		mu.Lock()
		ran = append(ran, k)
		mu.Unlock()
		return nil
	}, slog.New(slog.DiscardHandler), clock.Real{}, stop)
	w.urgent = urgent
	return w, stop, func() []refreshKey {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran)
	}
}
