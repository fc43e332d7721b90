package cluster

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestItemOwnersReadBackTogether: when another writer moves the items of many jobs at once (a leader's
// reshardings after a peer stopped), a peer under the namespace's recursive watch reads the new owners that
// queued meanwhile in multiRead requests of up to readBatch reads, not one get per item; with one-shot watches
// each item is read alone, with a watch. Either way the peer's cache ends with every new owner. The reading
// peer has one refresh worker, so that the events queue while it reads (a peer behind a restart's backlog).
func TestItemOwnersReadBackTogether(t *testing.T) {
	for _, oneShot := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneShot=%v", oneShot), func(t *testing.T) {
			ns := zktest.Namespace("itembatch")
			addr := zktest.Addr(t)
			const jobs, items = 40, 3
			names := jobNames(jobs)
			a, b := ledByA(t, addr, ns, names, items, oneShot)
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

// TestJobLevelReadsTravelTogether: the reads a restart or a registration queues in bulk on a peer (the jobs'
// leader nodes, their instances' listings, servers' states, leader/sharding/necessary) travel in multiRead
// requests under the namespace's recursive watch, not one get, list or exists each; an instance that is not
// a live peer still has its node read. The reading peer has one refresh worker, so the reads queue while it
// reads.
func TestJobLevelReadsTravelTogether(t *testing.T) {
	ns := zktest.Namespace("readbatch")
	addr := zktest.Addr(t)
	const jobs = 40
	names := jobNames(jobs)
	a, b := ledByA(t, addr, ns, names, 1, false)
	// writes ops(job) of every job in one transaction (its events come together) and returns what b's reads
	// cost until b's snapshot of every job satisfies cond
	episode := func(what string, ops func(job string) []any, cond func(s *JobSnapshot) bool) readTotals {
		t.Helper()
		base := b.s.reads.totals()
		var all []any
		for _, name := range names {
			all = append(all, ops(name)...)
		}
		if _, err := a.s.multi(all...); err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			waitJob(t, b, name, what, cond)
		}
		waitIdle(t, b)
		got := b.s.reads.totals().minus(base)
		t.Logf("%s: %+v for %d jobs", what, got, jobs)
		return got
	}
	batched := func(what string, got readTotals) {
		t.Helper()
		if got.get != 0 || got.exists != 0 || got.children != 0 || got.multi == 0 || got.multi > jobs/4 {
			t.Errorf("%s: %+v for %d jobs: want no get, exists or list, and at most %d multiReads", what, got, jobs, jobs/4)
		}
	}

	// the leader nodes written with another instance (a leader's node replaced, which a and b both take for
	// the leader from then on: neither reshards the jobs below): each job's leader is read
	const fake = "10.0.0.3@-@1"
	got := episode("leaders", func(job string) []any {
		return []any{opSet(a.r.p.LeaderInstance(job), []byte(fake), 0)}
	}, func(s *JobSnapshot) bool { return s.Leader == fake })
	batched("leaders", got)

	// leader/sharding/necessary created (nobody reshards: the leader is not a peer)
	got = episode("necessary", func(job string) []any {
		return []any{a.s.opCreate(a.r.p.Necessary(job), nil, 0)}
	}, func(s *JobSnapshot) bool { return s.Necessary })
	batched("necessary", got)

	// a's server disabled in every job: each servers/{ip} is read
	got = episode("servers", func(job string) []any {
		return []any{opSet(a.r.p.Server(job, "10.0.0.1"), []byte(ServerDisabled), -1)}
	}, func(s *JobSnapshot) bool { return s.Servers["10.0.0.1"] == ServerDisabled })
	batched("servers", got)

	// a job's leader node and server state changed in one transaction: both read in the batch that holds the
	// job (not the second alone, after it)
	got = episode("leaders and servers", func(job string) []any {
		return []any{opSet(a.r.p.LeaderInstance(job), []byte(fake), -1),
			opSet(a.r.p.Server(job, "10.0.0.1"), []byte(ServerEnabled), -1)}
	}, func(s *JobSnapshot) bool { return s.Servers["10.0.0.1"] == ServerEnabled })
	batched("leaders and servers", got)

	// an instance of a process b has no peer node of is added to every job: its listing is read again alone,
	// with its node for its server IP
	const other = "10.0.0.9@-@1"
	got = episode("unknown instances", func(job string) []any {
		return []any{a.s.opCreate(a.r.p.Instance(job, other), []byte("10.0.0.9"), zk.FlagEphemeral)}
	}, func(s *JobSnapshot) bool { return s.Instances[other] == "10.0.0.9" })
	if got.get != jobs {
		t.Errorf("unknown instances: %+v for %d jobs: want one get per job", got, jobs)
	}
	// listed again, every instance known: together
	base := b.s.reads.totals()
	for _, name := range names {
		b.r.w.kick(refreshKey{kind: kindInstances, job: name})
	}
	waitIdle(t, b)
	batched("instances", b.s.reads.totals().minus(base))
	for _, name := range names {
		if s := b.r.Job(name); len(s.Instances) != 3 || s.Instances[other] != "10.0.0.9" || !s.Registered {
			t.Errorf("job %s: instances %v (registered %v) after the listing, want 3 with %s at 10.0.0.9",
				name, s.Instances, s.Registered, other)
		}
	}
}

// waitIdle waits until p's refresher has nothing queued or running.
func waitIdle(t *testing.T, p *peer) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		ch := p.r.w.idleCh() // before idle(): an idle state reached after the check closes it
		if p.r.w.idle() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("the refresher is not idle after 15 s")
		}
	}
}

// TestRefresherRunsLeaderReadsAfterLoadsTogether: the batched leader and instances' reads (laneReads) wait
// behind the urgent keys and the loads, before the other keys (campaigns, registrations); a leader read
// kicked urgent keeps the urgent lane, alone.
func TestRefresherRunsLeaderReadsAfterLoadsTogether(t *testing.T) {
	w, stop, order := recordingRefresher()
	var mu sync.Mutex
	var batches [][]refreshKey
	record := func(keys []refreshKey) []error {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, slices.Clone(keys))
		return make([]error, len(keys))
	}
	w.batches[laneLoads] = batchLane{max: 8, of: func(k refreshKey) bool { return k.kind == kindLoad }, run: record}
	w.batches[laneReads] = batchLane{max: 8, run: record,
		of: func(k refreshKey) bool { return k.kind == kindLeader || k.kind == kindInstances }}
	campaign := refreshKey{kind: kindCampaign, job: "j0"}
	w.kick(campaign)
	reads := []refreshKey{{kind: kindLeader, job: "j1"}, {kind: kindInstances, job: "j1"}, {kind: kindLeader, job: "j2"}}
	for _, k := range reads {
		w.kick(k)
	}
	load := refreshKey{kind: kindLoad, job: "j3"}
	w.kick(load)
	urgentLeader := refreshKey{kind: kindLeader, job: "j4"}
	w.kickUrgent(urgentLeader)
	if got, want := w.backlog(), (Backlog{Urgent: 1, Batched: 1, Other: 4}); got != want {
		t.Fatalf("backlog %+v, want %+v", got, want)
	}
	drainRefresher(w, stop)
	if want := [][]refreshKey{{load}, reads}; !reflect.DeepEqual(batches, want) {
		t.Errorf("batches %v, want %v", batches, want)
	}
	if got := order(); !slices.Equal(got, []refreshKey{urgentLeader, campaign}) {
		t.Errorf("keys run alone %v, want the urgent leader read first, the campaign last", got)
	}
}

// TestBatchedReadOfABusyJobWaitsForIt: a batch does not wait for a job another refresh holds (a load): it
// reads the others, lets its locks go, then reads that job alone once it is free. The reading peer's one
// worker is held on a third job meanwhile, so the batch under test is the only reader.
func TestBatchedReadOfABusyJobWaitsForIt(t *testing.T) {
	ns := zktest.Namespace("readbusy")
	addr := zktest.Addr(t)
	a, b := ledByA(t, addr, ns, []string{"busy", "free", "stuck"}, 1, false)
	waitIdle(t, b)
	stuck, busy := b.r.entry("stuck"), b.r.entry("busy")
	stuck.refreshMu.Lock()
	hold := refreshKey{kind: kindConfig, job: "stuck"}
	b.r.w.kick(hold)
	for waiting(b.r.w, hold) { // until the worker takes it, and waits for stuck
		time.Sleep(5 * time.Millisecond)
	}
	defer stuck.refreshMu.Unlock()
	busy.refreshMu.Lock()
	if _, err := a.s.multi(opSet(a.r.p.LeaderInstance("busy"), []byte("10.0.0.3@-@1"), 0),
		opSet(a.r.p.LeaderInstance("free"), []byte("10.0.0.3@-@1"), 0)); err != nil {
		t.Fatal(err)
	}
	done := make(chan []error)
	go func() {
		done <- b.r.refreshBatched([]refreshKey{{kind: kindLeader, job: "busy"}, {kind: kindLeader, job: "free"}})
	}()
	waitJob(t, b, "free", "the new leader", func(s *JobSnapshot) bool { return s.Leader == "10.0.0.3@-@1" })
	select {
	case errs := <-done:
		t.Fatalf("the batch ended (%v) while the busy job was held", errs)
	case <-time.After(200 * time.Millisecond):
	}
	if s := b.r.Job("busy"); s.Leader != "10.0.0.1@-@1" {
		t.Errorf("the busy job's leader %q was applied while its load held it", s.Leader)
	}
	busy.refreshMu.Unlock()
	if errs := <-done; errs[0] != nil || errs[1] != nil {
		t.Fatalf("errs %v", errs)
	}
	if s := b.r.Job("busy"); s.Leader != "10.0.0.3@-@1" {
		t.Errorf("the busy job's leader %q after its load let it go, want 10.0.0.3@-@1", s.Leader)
	}
}

// waiting reports whether k waits in one of w's lanes.
func waiting(w *refresher, k refreshKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.lanes {
		if slices.Contains(q, k) {
			return true
		}
	}
	return false
}

// jobNames are n job names, job00...
func jobNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("job%02d", i)
	}
	return names
}

// ledByA creates jobs of items items, all owned and led by peer a (10.0.0.1@-@1), then starts peer b
// (10.0.0.2@-@1, one refresh worker: its reads queue while it reads) and waits until b has loaded them all,
// registered, with both instances listed.
func ledByA(t *testing.T, addr, ns string, jobs []string, items int, oneShot bool) (a, b *peer) {
	t.Helper()
	a = startPeerAt(t, addr, ns, "10.0.0.1@-@1", "10.0.0.1", false)
	owners := make([]string, items)
	for k := range owners {
		owners[k] = "10.0.0.1@-@1"
	}
	for _, name := range jobs {
		if _, err := a.r.CreateJobSharded(testJob(name, items), owners); err != nil {
			t.Fatal(err)
		}
	}
	// a leads every job before b starts: b, the preferred candidate of some jobs, would otherwise win those
	// whose campaign a still had on its way (its campaigns are batched: a burst's last ones wait a round trip)
	for _, name := range jobs {
		waitJob(t, a, name, "leadership", func(s *JobSnapshot) bool { return s.Settled && s.IsLeader() })
	}
	b = startPeerWorkers(t, addr, ns, "10.0.0.2@-@1", "10.0.0.2", oneShot, 1)
	for _, name := range jobs {
		waitJob(t, b, name, "load", func(s *JobSnapshot) bool {
			return s.Settled && s.Registered && s.Leader == "10.0.0.1@-@1" && len(s.Instances) == 2
		})
	}
	return a, b
}
