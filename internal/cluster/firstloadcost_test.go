package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A peer's first load of a job costs few requests (issue 21: at 100,000 jobs a starting peer is bound by
// the requests it sends): under the namespace's recursive watch the reads travel as two multiReads
// (bulkload.go). Read one by one (a ZooKeeper without multiRead), an absent node (an item's failover, most
// of the time) is one get, not a get and an exists watch, and the instance nodes of live ejserver peers
// are not read (their peer node gave the IP).
func TestFirstLoadReadsPerJob(t *testing.T) {
	t.Run("bulk", func(t *testing.T) { testFirstLoadReads(t, false) })
	t.Run("one-by-one", func(t *testing.T) { testFirstLoadReads(t, true) })
}

func testFirstLoadReads(t *testing.T, oneByOne bool) {
	ns := zktest.Namespace("firstload-cost")
	const jobs = 40
	a := startPeerAt(t, zktest.Addr(t), ns, "10.0.0.1@-@1", "10.0.0.1", false)
	for i := range jobs {
		if _, err := a.r.CreateJobSharded(testJob(fmt.Sprintf("job%02d", i), 1), []string{"10.0.0.1@-@1"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range jobs {
		waitJob(t, a, fmt.Sprintf("job%02d", i), "its leader", func(s *JobSnapshot) bool { return s.Leader != "" && s.Settled })
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Dial(ctx, SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 8 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry(s, RegistryConfig{Namespace: ns, Identity: Identity{InstanceID: "10.0.0.2@-@2", ServerIP: "10.0.0.2"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	r.noMultiRead.Store(oneByOne)
	b := &peer{s: s, r: r}
	t.Cleanup(b.close)
	// the live peers are listed before the jobs, so a's instance nodes need not be read
	r.w.kick(refreshKey{kind: kindPeers})
	base := s.reads.totals()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		waitJob(t, b, fmt.Sprintf("job%02d", i), "registration", func(s *JobSnapshot) bool { return s.Registered && s.Settled && len(s.Instances) == 2 })
	}
	got := s.reads.totals().minus(base)
	t.Logf("per job: %.2f requests: %.2f multiReads, %.2f gets, %.2f exists, %.2f children lists", float64(got.requests())/jobs,
		float64(got.multi)/jobs, float64(got.get)/jobs, float64(got.exists)/jobs, float64(got.children)/jobs)
	if !oneByOne {
		// two multiReads, then b's own servers/10.0.0.2 and instances/ once its registration reports them; a
		// few more for the namespace and the peers
		if max := int64(5 * jobs); got.requests() > max {
			t.Errorf("%d requests for %d jobs, want at most %d", got.requests(), jobs, max)
		}
		return
	}
	// gets: config, servers/10.0.0.1, the leader, sharding/0/instance and sharding/0/failover (absent), and
	// b's own servers/10.0.0.2 once its registration reports it; exists: necessary, trigger/{me},
	// sharding/0/disabled. A few more for the namespace and the peers.
	if max := int64(6*jobs + 10); got.get > max {
		t.Errorf("%d gets for %d jobs, want at most %d", got.get, jobs, max)
	}
	if max := int64(3*jobs + 10); got.exists > max {
		t.Errorf("%d exists for %d jobs, want at most %d", got.exists, jobs, max)
	}
}

// Jobs created and deleted while a peer watches are added and removed one by one (refreshPresence), without
// listing the namespace again: at 100,000 jobs a listing is ~1.5 MB, and one per job created made the
// registration of many jobs quadratic (issue 21: one peer read 60 MB/s of listings while 100,000 jobs
// registered).
func TestJobsComeAndGoWithoutListingTheNamespace(t *testing.T) {
	ns := zktest.Namespace("presence")
	const jobs = 30
	a := startPeerAt(t, zktest.Addr(t), ns, "10.0.0.1@-@1", "10.0.0.1", false)
	waitJobsListed := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(a.r.Jobs()) != want {
			if time.Now().After(deadline) {
				t.Fatalf("the peer lists %d jobs, want %d", len(a.r.Jobs()), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	a.s.reads.countLists(a.r.p.Root())
	base := a.s.reads.totals()
	for i := range jobs {
		if _, err := a.r.CreateJobSharded(testJob(fmt.Sprintf("job%02d", i), 1), []string{"10.0.0.1@-@1"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range jobs {
		waitJob(t, a, fmt.Sprintf("job%02d", i), "loaded", func(s *JobSnapshot) bool { return s.Settled })
	}
	for i := range jobs / 2 {
		if err := a.r.DeleteJob(fmt.Sprintf("job%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitJobsListed(jobs - jobs/2)
	got := a.s.reads.totals().minus(base)
	// the children lists left: each job's own folders when read one by one (none in bulk), never the
	// namespace once per job
	listings := a.s.reads.listsOf()
	t.Logf("%d jobs created, %d deleted: %d namespace listings, %d requests in all", jobs, jobs/2, listings, got.requests())
	if listings > 0 {
		t.Errorf("the namespace was listed %d times while jobs came and went, want 0", listings)
	}
}
