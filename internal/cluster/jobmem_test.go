package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/testutil"
)

// BenchmarkJobMemory measures, without ZooKeeper, what a peer keeps per job in the registry at 10,000 and
// 100,000 one-item jobs (issue 21, part mm): the live heap after a GC, per structure, in bytes per job.
// B/job is cold plus index: what a job that fires once a minute costs the registry between its fires.
// The jobs are the harness's steady-N jobs (the same cron for 1/60 of them, one webhook URL, one item),
// loaded through applyLoad as a bulk first load lands them; 3 peers' instances and servers.
//
//	go test -run '^$' -bench BenchmarkJobMemory -benchtime 1x ./internal/cluster/
func BenchmarkJobMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for range b.N {
				m := measureJobMemory(b, n)
				b.ReportMetric(m.entries, "entry-B/job")
				b.ReportMetric(m.snapshots, "snapshot-B/job")
				b.ReportMetric(m.cold, "cold-B/job")
				b.ReportMetric(m.index, "index-B/job")
				b.ReportMetric(m.cold+m.index, "B/job")
			}
		})
	}
}

// jobMemory is what the registry holds per job, in bytes: entries and snapshots while every job is read (hot);
// cold, entries and snapshots of jobs not read for a sweep (a job that fires once a minute, between its
// fires); index, what the refresher keeps after a registration's peak while refreshes keep coming.
type jobMemory struct {
	entries, snapshots, cold, index float64
}

func perJob(after, before uint64, n int) float64 {
	if after < before {
		return 0
	}
	return float64(after-before) / float64(n)
}

// benchJobYAML is job k's config node as the API writes it for the harness's steady-N workload.
func benchJobYAML(tb testing.TB, k int) []byte {
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName = fmt.Sprintf("steady-%06d", k)
	cfg.Cron = fmt.Sprintf("%d * * * * ?", k%60)
	cfg.ShardingTotalCount = 1
	cfg.Webhook.URL = "http://127.0.0.1:40123/hook"
	cfg.Normalize()
	data, err := ejserver.MarshalElasticJobYAML(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// benchRegistry is a registry with no session: applyLoad of a bulk first load and the snapshots need none
// when the peer's instance is already registered.
func benchRegistry() *Registry {
	r := &Registry{me: Identity{InstanceID: "10.0.0.1@-@1", ServerIP: "10.0.0.1"}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		clk: clock.Real{}, jobs: make(map[string]*jobEntry), stop: make(chan struct{})}
	r.entries.leads.me = r.me.InstanceID
	r.w = newRefresher(1, func(refreshKey) error { return nil }, r.log, r.clk, r.stop)
	return r
}

// loadBenchJobs lands n jobs in r as their bulk first loads do.
func loadBenchJobs(tb testing.TB, r *Registry, n int) []string {
	names := make([]string, n)
	for k := range n {
		names[k] = fmt.Sprintf("steady-%06d", k)
	}
	r.addEntries(names)
	for k, name := range names {
		e := r.entry(name)
		e.st.registered = true // registerSoon then has nothing to write
		rd := jobRead{
			data: benchJobYAML(tb, k), st: &zk.Stat{Czxid: int64(k + 1), Mzxid: int64(k + 1), Mtime: 1},
			instances:  map[string]string{"10.0.0.1@-@1": "10.0.0.1", "10.0.0.2@-@2": "10.0.0.2", "10.0.0.3@-@3": "10.0.0.3"},
			servers:    map[string]string{"10.0.0.1": "ENABLED", "10.0.0.2": "ENABLED", "10.0.0.3": "ENABLED"},
			serverVers: map[string]nodeVersion{"10.0.0.1": {1, 0}, "10.0.0.2": {2, 0}, "10.0.0.3": {3, 0}},
			leader:     leaderNode{id: "10.0.0.2@-@2"},
			items:      []string{"0"},
			read:       map[int]*ItemState{0: {Exists: true, Owner: "10.0.0.3@-@3", OwnerVersion: 0}},
		}
		if err := r.applyLoad(e, true, rd, true); err != nil {
			tb.Fatal(err)
		}
	}
	return names
}

// runRegistration queues, as a registration of n jobs does on every peer, each job's load, its registration
// and campaign and its item's three reads, and returns when the refresher's workers have run them all but
// one refresh of another job, which keeps running (refreshes keep coming: the index never empties) until
// release.
func runRegistration(tb testing.TB, r *Registry, names []string) (release func()) {
	busy := refreshKey{kind: kindLeader, job: "busy"}
	hold, running, stop, queued := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	w := newRefresher(2, func(k refreshKey) error {
		if k == busy {
			close(running)
			<-hold
		}
		// a registration queues faster than ZooKeeper's round trips run the refreshes: its backlog piles up
		<-queued
		return nil
	}, r.log, r.clk, stop)
	r.w = w
	w.start()
	w.kick(busy)
	<-running
	for _, name := range names {
		for _, kind := range []refreshKind{kindLoad, kindRegister, kindCampaign, kindItemInstance, kindItemDisabled, kindItemFailover} {
			w.kick(refreshKey{kind: kind, job: name})
		}
	}
	close(queued)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		w.mu.Lock()
		left := len(w.state)
		w.mu.Unlock()
		if left == 1 {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d refreshes left", left)
		}
		runtime.Gosched()
	}
	return func() {
		close(hold)
		close(stop)
		w.wait()
	}
}

func measureJobMemory(tb testing.TB, n int) jobMemory {
	var m jobMemory
	base := testutil.LiveHeap()
	r := benchRegistry()
	names := loadBenchJobs(tb, r, n)
	withEntries := testutil.LiveHeap()
	m.entries = perJob(withEntries, base, n)
	for _, name := range names {
		if r.Job(name) == nil {
			tb.Fatalf("job %s not loaded", name)
		}
	}
	withSnaps := testutil.LiveHeap()
	m.snapshots = perJob(withSnaps, withEntries, n)
	r.sweepCold()
	r.sweepCold()
	withSnaps = testutil.LiveHeap()
	m.cold = perJob(withSnaps, base, n)
	release := runRegistration(tb, r, names)
	m.index = perJob(testutil.LiveHeap(), withSnaps, n)
	release()
	runtime.KeepAlive(r)
	return m
}
