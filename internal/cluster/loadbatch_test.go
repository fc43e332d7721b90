package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
	"go.uber.org/goleak"
)

// TestRefresherRunsLoadsInBatchesFirst: the loads a registration queued are handed out up to their lane's max at a
// time, after the urgent keys and before the other keys queued before them; a key that fails in a batch is
// run again, a key kicked while its batch runs runs once more, and the workers exit at stop.
func TestRefresherRunsLoadsInBatchesFirst(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stop := make(chan struct{})
	var mu sync.Mutex
	var order []string // "run KIND/JOB" or "batch N"
	failOnce := map[string]bool{"j7": true}
	w := newRefresher(1, func(k refreshKey) error {
		mu.Lock()
		order = append(order, fmt.Sprintf("run %d/%s", k.kind, k.job))
		mu.Unlock()
		return nil
	}, slog.New(slog.DiscardHandler), clock.Real{}, stop)
	w.urgent = func(k refreshKey) bool { return k.kind == kindItemInstance }
	w.batches[laneLoads] = batchLane{of: func(k refreshKey) bool { return k.kind == kindLoad }, max: 64}
	w.batches[laneLoads].run = func(keys []refreshKey) []error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, fmt.Sprintf("batch %d", len(keys)))
		errs := make([]error, len(keys))
		for i, k := range keys {
			if k.kind != kindLoad {
				t.Errorf("%v in a batch", k)
			}
			if k.job == "j3" && len(order) == 2 {
				w.kick(k) // an event while its load runs: it is loaded once more
			}
			if failOnce[k.job] {
				failOnce[k.job] = false
				errs[i] = errors.New("read failed")
			}
		}
		return errs
	}
	w.kick(refreshKey{kind: kindRegister, job: "x"})
	const loads = 100
	for i := range loads {
		w.kick(refreshKey{kind: kindLoad, job: fmt.Sprintf("j%d", i)})
	}
	w.kick(refreshKey{kind: kindItemInstance, job: "y"})
	drainRefresher(w, stop)
	mu.Lock()
	defer mu.Unlock()
	// one worker: the urgent key, 64 loads (j3 is kicked meanwhile and queued again, j7 fails and is
	// queued again after a pause), the 36 others with j3 and j7, then the key queued before the loads
	want := []string{fmt.Sprintf("run %d/y", kindItemInstance), "batch 64", "batch 38", fmt.Sprintf("run %d/x", kindRegister)}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// TestJobsReadTogether: jobs read in one batch read as each alone, in a few multiReads for all of them
// (each alone is two).
func TestJobsReadTogether(t *testing.T) {
	ns := zktest.Namespace("loadbatch")
	a := startPeerAt(t, zktest.Addr(t), ns, "10.0.0.1@-@1", "10.0.0.1", false)
	const jobs = 60
	var names []string
	var first []bool
	for i := range jobs {
		name := fmt.Sprintf("job%02d", i)
		if _, err := a.r.CreateJobSharded(testJob(name, 2), []string{"10.0.0.1@-@1", "10.0.0.1@-@1"}); err != nil {
			t.Fatal(err)
		}
		names, first = append(names, name), append(first, i%2 == 0)
	}
	for _, name := range names {
		// and its leadership: a campaign runs on its own goroutine, and its reads would be counted below
		waitJob(t, a, name, "registration", func(s *JobSnapshot) bool { return s.Registered && s.Settled && s.IsLeader() })
	}
	base := a.s.reads.totals()
	rds, bulk, err := a.r.readJobsBulk(names, first)
	if err != nil {
		t.Fatal(err)
	}
	got := a.s.reads.totals().minus(base)
	// 60 x 8.5 fixed reads (3 chunks of bulkChunk), then 60 x (1 server + 3 x 2 items on a first load)
	if got.requests() != got.multi || got.multi > 6 {
		t.Errorf("%d requests (%d multiReads) for %d jobs, want at most 6 multiReads", got.requests(), got.multi, jobs)
	}
	for i, name := range names {
		one, ok, err := a.r.readJobBulk(name, first[i])
		if err != nil || !ok || !bulk[i] {
			t.Fatalf("%s: bulk %v, %v alone (%v)", name, bulk[i], ok, err)
		}
		if !reflect.DeepEqual(one, rds[i]) {
			t.Fatalf("%s read together:\n%+v\nalone:\n%+v", name, rds[i], one)
		}
		if first[i] && (rds[i].apiMark == 0 || rds[i].apiMark != rds[i].st.Czxid || len(rds[i].read) != 2) {
			t.Fatalf("%s: a first load read mark %d (config czxid %d) and %d items", name, rds[i].apiMark, rds[i].st.Czxid, len(rds[i].read))
		}
	}
}

// TestRefresherLoadedWhileOthersRun: a starting registry waits for the listings and the loads (startsWith),
// not for the refresher to be idle: a registration still running does not hold it.
func TestRefresherLoadedWhileOthersRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stop := make(chan struct{})
	release := make(chan struct{})
	w := newRefresher(4, func(k refreshKey) error {
		if k.kind == kindRegister {
			<-release // a registration that takes its time
		}
		return nil
	}, slog.New(slog.DiscardHandler), clock.Real{}, stop)
	w.loadingOf = startsWith
	w.batches[laneLoads] = batchLane{of: func(k refreshKey) bool { return k.kind == kindLoad }, max: loadBatch,
		run: func(keys []refreshKey) []error { return make([]error, len(keys)) }}
	w.kick(refreshKey{kind: kindRegister, job: "x"})
	w.kick(refreshKey{kind: kindJobs})
	for i := range 10 {
		w.kick(refreshKey{kind: kindLoad, job: fmt.Sprintf("j%d", i)})
	}
	if w.loaded() {
		t.Fatal("loaded before the loads ran")
	}
	loaded := w.loadedCh()
	w.start()
	select {
	case <-loaded:
	case <-time.After(10 * time.Second):
		t.Error("the loads done, the refresher still reports loading while a registration runs")
	}
	if !w.loaded() || w.idle() {
		t.Errorf("loaded %v, idle %v: want loaded and not idle while the registration runs", w.loaded(), w.idle())
	}
	close(release)
	close(stop)
	w.wait()
}

// drainRefresher starts w, waits until it has nothing queued or running, then stops it and waits for its
// workers.
func drainRefresher(w *refresher, stop chan struct{}) {
	done := w.idleCh()
	w.start()
	<-done
	close(stop)
	w.wait()
}

// TestAnExpeditedKeyRunsBeforeItsLane: a queued key that is expedited runs before the lanes' other keys, on
// its own. A key not queued, or expedited already, is not moved; a key kicked while its expedited run runs
// runs once more afterwards (from its copy in its lane), and no more.
func TestAnExpeditedKeyRunsBeforeItsLane(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stop := make(chan struct{})
	var mu sync.Mutex
	var order []string
	reloads := 0 // j150's loads after its expedited one
	w := newRefresher(1, func(k refreshKey) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, fmt.Sprintf("run %s/%s", k.kind, k.job))
		return nil
	}, slog.New(slog.DiscardHandler), clock.Real{}, stop)
	loads := func(keys []refreshKey) []error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, fmt.Sprintf("batch %d", len(keys)))
		for _, k := range keys {
			if k.job != "j150" {
				continue
			}
			if len(order) == 1 {
				w.kick(k) // an event while the expedited load runs: it is loaded once more
			} else {
				reloads++
			}
		}
		return make([]error, len(keys))
	}
	w.batches[laneLoads] = batchLane{of: func(k refreshKey) bool { return k.kind == kindLoad }, max: 64, run: loads}
	w.batches[laneWanted] = batchLane{of: func(refreshKey) bool { return false }, max: 64, run: loads}
	w.kick(refreshKey{kind: kindRegister, job: "x"})
	for i := range 200 {
		w.kick(refreshKey{kind: kindLoad, job: fmt.Sprintf("j%d", i)})
	}
	if w.expedite(refreshKey{kind: kindConfig, job: "j150"}) {
		t.Fatal("a key not queued was expedited")
	}
	if !w.expedite(refreshKey{kind: kindLoad, job: "j150"}) {
		t.Fatal("a queued load was not expedited")
	}
	if w.expedite(refreshKey{kind: kindLoad, job: "j150"}) {
		t.Fatal("a load expedited already was expedited again")
	}
	urgent, other := w.queuedByKind()
	if urgent[kindLoad] != 1 || other[kindLoad] != 199 {
		t.Fatalf("queued loads: %d urgent, %d others; want 1 and 199 (the copy counted once)", urgent[kindLoad], other[kindLoad])
	}
	drainRefresher(w, stop)
	mu.Lock()
	defer mu.Unlock()
	// j150 first, alone; the kick during that load loads it once more, from its copy still in the lane (the
	// third batch: 64 keys); the key queued again at the lane's end is then passed over (8 = 200 - 3 x 64)
	want := []string{"batch 1", "batch 64", "batch 64", "batch 64", "batch 8", "run register/x"}
	if !reflect.DeepEqual(order, want) || reloads != 1 {
		t.Fatalf("order %v with j150 loaded %d times after, want %v and once", order, reloads, want)
	}
}

// TestAWaitForAJobsItemsOvertakesTheQueuedLoads: a job loaded once whose load was queued again behind many
// others (a restarted peer at 100,000 jobs had ~65,000 loads queued at its first fires) is read as soon as a
// fire waits for its items (Registry.Wait), not after the others: in run 38, 90 fires of jobs whose item the
// leader gave the restarted peer were skipped after 30 s "the job's sharding nodes still being read".
func TestAWaitForAJobsItemsOvertakesTheQueuedLoads(t *testing.T) {
	ns := zktest.Namespace("expedite")
	addr := zktest.Addr(t)
	const jobs = 640
	a := startPeerAt(t, addr, ns, "10.0.0.1@-@1", "10.0.0.1", false)
	for i := range jobs {
		if _, err := a.r.CreateJobSharded(testJob(fmt.Sprintf("job%03d", i), 1), []string{"10.0.0.1@-@1"}); err != nil {
			t.Fatal(err)
		}
	}
	// one refresh worker: the loads run one batch at a time
	b := startPeerWorkers(t, addr, ns, "10.0.0.2@-@2", "10.0.0.2", false, 1)
	for i := range jobs {
		waitJob(t, b, fmt.Sprintf("job%03d", i), "loaded", func(s *JobSnapshot) bool { return s.ItemsSettled })
	}
	b.r.resyncJobs() // every job's load queued again
	b.r.w.mu.Lock()
	q := b.r.w.lanes[laneLoads]
	last := q[len(q)-1].job // the job whose load is queued last
	b.r.w.mu.Unlock()
	if got := b.r.PendingReads(last, 1); got != "load (queued)" {
		t.Fatalf("%s's pending reads: %q, want the load queued", last, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := b.r.Wait(ctx, last, func(s *JobSnapshot) bool { return s.ItemsSettled }); err != nil {
		t.Fatal(err)
	}
	if got := b.r.PendingReads(last, 1); got != "" {
		t.Fatalf("%s's pending reads once its items are read: %q, want none", last, got)
	}
	if left := b.r.w.backlog().Batched; left < jobs/2 {
		t.Fatalf("%s's items read with %d loads left queued, want at least %d: the wait did not overtake them", last, left, jobs/2)
	}
}
