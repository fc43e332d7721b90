package cluster

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestItemOwnersReadBackTogether: when another writer moves the items of many jobs at once (a leader's
// reshardings after a peer stopped), a peer under the namespace's recursive watch reads the new owners that
// queued meanwhile in multiRead requests of up to itemBatch reads, not one get per item; with one-shot watches
// each item is read alone, with a watch. Either way the peer's cache ends with every new owner. The reading
// peer has one refresh worker, so that the events queue while it reads (a peer behind a restart's backlog).
func TestItemOwnersReadBackTogether(t *testing.T) {
	for _, oneShot := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneShot=%v", oneShot), func(t *testing.T) {
			ns := zktest.Namespace("itembatch")
			addr := zktest.Addr(t)
			a := startPeerAt(t, addr, ns, "10.0.0.1@-@1", "10.0.0.1", false)
			const jobs, items = 40, 3
			var names []string
			for i := range jobs {
				name := fmt.Sprintf("job%02d", i)
				owners := make([]string, items)
				for k := range owners {
					owners[k] = "10.0.0.1@-@1"
				}
				if _, err := a.r.CreateJobSharded(testJob(name, items), owners); err != nil {
					t.Fatal(err)
				}
				names = append(names, name)
			}
			b := startPeerWorkers(t, addr, ns, "10.0.0.2@-@1", "10.0.0.2", oneShot, 1)
			for _, name := range names {
				waitJob(t, a, name, "leadership", func(s *JobSnapshot) bool { return s.Settled && s.IsLeader() })
				waitJob(t, b, name, "load", func(s *JobSnapshot) bool {
					return s.Settled && s.Registered && s.Leader == "10.0.0.1@-@1"
				})
			}
			base := b.s.reads.totals()
			var ops []any
			for _, name := range names {
				for k := range items {
					ops = append(ops, opSet(a.r.p.ItemNode(name, k, NodeInstance), []byte("10.0.0.2@-@1"), -1))
				}
			}
			if _, err := a.s.multi(ops...); err != nil { // one transaction: its events come together
				t.Fatal(err)
			}
			for _, name := range names {
				waitJob(t, b, name, "the new owners", func(s *JobSnapshot) bool {
					for k := range items {
						if it := s.Items[k]; it.Owner != "10.0.0.2@-@1" || it.OwnerVersion != 1 {
							return false
						}
					}
					return s.ItemsSettled
				})
			}
			got := b.s.reads.totals().minus(base)
			t.Logf("%+v for %d items' owners", got, jobs*items)
			if oneShot {
				if got.get < jobs*items {
					t.Errorf("one-shot watches: %d gets for %d items' owners, want one each", got.get, jobs*items)
				}
				return
			}
			// the first event's read goes alone; the others queue while it runs
			if got.get != 0 || got.multi == 0 || got.multi > jobs*items/4 {
				t.Errorf("%+v for %d items' owners: want no get and at most %d multiReads", got, jobs*items, jobs*items/4)
			}
		})
	}
}

// TestRefresherRunsItemReadsFirstTogether: the live peers' listing runs first (laneFront), then the item
// reads of laneItems, before the other urgent keys that queued before them (a restart's reports and
// campaigns), up to the lane's max at once.
func TestRefresherRunsItemReadsFirstTogether(t *testing.T) {
	w, stop, order := recordingRefresher()
	w.front = front
	var mu sync.Mutex
	var batches [][]refreshKey
	ranBefore := -1 // the single keys run before the first batch
	w.batches[laneItems] = batchLane{max: 2,
		of: func(k refreshKey) bool { return k.kind == kindItemInstance || k.kind == kindItemDisabled },
		run: func(keys []refreshKey) []error {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, slices.Clone(keys))
			if ranBefore < 0 {
				ranBefore = len(order())
			}
			return make([]error, len(keys))
		}}
	report := refreshKey{kind: kindReport, job: "j0"}
	w.kick(report)
	w.kickUrgent(refreshKey{kind: kindCampaign, job: "j0"})
	items := []refreshKey{{kind: kindItemInstance, job: "j1"}, {kind: kindItemDisabled, job: "j1"},
		{kind: kindItemInstance, job: "j2"}}
	for _, k := range items {
		w.kick(k)
	}
	peers := refreshKey{kind: kindPeers}
	w.kick(peers)
	if got, want := w.backlog(), (Backlog{Urgent: 6}); got != want {
		t.Fatalf("backlog %+v, want %+v", got, want)
	}
	drainRefresher(w, stop)
	if want := [][]refreshKey{items[:2], items[2:]}; !reflect.DeepEqual(batches, want) {
		t.Errorf("item batches %v, want %v", batches, want)
	}
	campaign := refreshKey{kind: kindCampaign, job: "j0"}
	if got := order(); ranBefore != 1 || !slices.Equal(got, []refreshKey{peers, report, campaign}) {
		t.Errorf("%d keys ran before the item reads, of %v: want the peers' listing, then the report and the campaign",
			ranBefore, got)
	}
}
