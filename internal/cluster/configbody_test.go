package cluster

import (
	"reflect"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
)

func TestBodyKey(t *testing.T) {
	tests := []struct {
		name, data, key string
		keyed           bool
	}{
		{"first line", "jobName: a\ncron: x\n", "cron: x\n", true},
		{"middle line", "cron: x\njobName: \"a\"\nshardingTotalCount: 1\n", "cron: x\nshardingTotalCount: 1\n", true},
		{"last line", "cron: x\njobName: a\n", "cron: x\n", true},
		{"last line without its newline", "cron: x\njobName: a", "", false},
		{"none", "cron: x\n", "", false},
		{"two", "jobName: a\njobName: b\n", "", false},
		{"indented: not the top level's", "props:\n  jobName: a\n", "", false},
		{"flow style", "{jobName: a, cron: x}\n", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, keyed := bodyKey([]byte(tt.data))
			if keyed != tt.keyed || string(key) != tt.key {
				t.Fatalf("bodyKey(%q) = %q, %v; want %q, %v", tt.data, key, keyed, tt.key, tt.keyed)
			}
		})
	}
}

func marshalJob(t testing.TB, cfg ejserver.JobConfig) []byte {
	t.Helper()
	data, err := ejserver.MarshalElasticJobYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConfigBodiesShareOnlyEqualShapes: jobs that differ only in their name share one body; another cron, a
// secret or a header is another body; a node that does not parse is nobody's.
func TestConfigBodiesShareOnlyEqualShapes(t *testing.T) {
	var bodies configBodies
	parse := func(cfg ejserver.JobConfig) *ejserver.JobConfig {
		t.Helper()
		body, err := bodies.parse(marshalJob(t, cfg))
		if err != nil {
			t.Fatal(err)
		}
		if body.JobName != "" {
			t.Fatalf("a body has the name %q", body.JobName)
		}
		return body
	}
	a, b := testJob("a", 1), testJob("b", 1)
	if parse(a) != parse(b) {
		t.Fatal("jobs that differ only in their name have two bodies")
	}
	other := testJob("c", 1)
	other.Cron = "0/7 * * * * ?"
	secret := testJob("d", 1)
	secret.Webhook.Secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"
	header := testJob("e", 1)
	header.Webhook.Headers = map[string]string{"X-Team": "payments"}
	for _, cfg := range []ejserver.JobConfig{other, secret, header} {
		if parse(cfg) == parse(a) {
			t.Fatalf("job %s shares job a's body", cfg.JobName)
		}
		want := cfg
		want.JobName = ""
		got := *parse(cfg)
		got.JobName = ""
		if got.Cron != want.Cron || got.Webhook.Secret != want.Webhook.Secret || !reflect.DeepEqual(got.Webhook.Headers, want.Webhook.Headers) {
			t.Fatalf("job %s's body is not its config: %+v", cfg.JobName, got)
		}
	}
	bad := []byte("jobName: bad\nshardingTotalCount: [\n")
	b1, err1 := bodies.parse(bad)
	b2, err2 := bodies.parse(bad)
	if err1 == nil || err2 == nil || b1 == b2 {
		t.Fatalf("a node that does not parse: errors %v, %v; shared: %v", err1, err2, b1 == b2)
	}
}

// FuzzBodyKey: two nodes with the same key parse to the same config apart from the name (or both fail).
func FuzzBodyKey(f *testing.F) {
	a, b := testJob("a", 1), testJob("b", 2)
	f.Add(marshalJob(f, a), marshalJob(f, b))
	b.ShardingTotalCount = 1
	f.Add(marshalJob(f, a), marshalJob(f, b))
	f.Add([]byte("jobName: a\ncron: x\n"), []byte("cron: x\njobName: b\n"))
	f.Add([]byte("jobName: a\n  b\ncron: x\n"), []byte("jobName: c\n  b\ncron: x\n"))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		kx, okx := bodyKey(x)
		ky, oky := bodyKey(y)
		if !okx || !oky || string(kx) != string(ky) {
			return
		}
		cx, errx := ejserver.ParseElasticJobYAML(x)
		cy, erry := ejserver.ParseElasticJobYAML(y)
		if (errx == nil) != (erry == nil) {
			t.Fatalf("same key %q, errors %v and %v", kx, errx, erry)
		}
		if errx != nil {
			return
		}
		cx.JobName, cy.JobName = "", ""
		if !reflect.DeepEqual(cx, cy) {
			t.Fatalf("same key %q, configs %+v and %+v", kx, cx, cy)
		}
	})
}

// TestColdJobsLetTheirSnapshotAndConfigGo: a job not read between two sweeps holds neither its snapshot nor
// its named config; its next read makes them again, equal to before; a job read meanwhile keeps both.
func TestColdJobsLetTheirSnapshotAndConfigGo(t *testing.T) {
	r := benchRegistry()
	loadBenchJobs(t, r, 61) // jobs 0 and 60 have one cron
	hot, cold := r.entry("steady-000000"), r.entry("steady-000060")
	before := *r.Job(cold.name)
	r.Job(hot.name)
	if hot.st.body != cold.st.body {
		t.Fatal("two jobs of one shape hold two bodies")
	}
	r.sweepCold() // both were read since the last sweep
	r.Job(hot.name)
	r.sweepCold()
	held := func(e *jobEntry) bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.snap != nil || e.st.cfg != nil
	}
	if held(cold) {
		t.Fatal("a job unread for a whole sweep keeps its snapshot or config")
	}
	if !held(hot) {
		t.Fatal("a job read since the last sweep lost its snapshot")
	}
	after := r.Job(cold.name)
	if after.Config.JobName != cold.name || !reflect.DeepEqual(*after.Config, *before.Config) {
		t.Fatalf("config made again: %+v, want %+v", *after.Config, *before.Config)
	}
	before.Config, after.Config = nil, nil
	if !reflect.DeepEqual(before, *after) {
		t.Fatalf("snapshot made again: %+v, want %+v", *after, before)
	}
}

// TestAConfigChangeReplacesTheBody: a new version of one job's config changes that job only.
func TestAConfigChangeReplacesTheBody(t *testing.T) {
	r := benchRegistry()
	loadBenchJobs(t, r, 2)
	e := r.entry("steady-000000")
	cfg := *r.Job(e.name).Config
	cfg.Cron = "0/3 * * * * ?"
	body, err := r.bodies.parse(marshalJob(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.setConfigLocked(body, nil, &zk.Stat{Version: 1})
	e.changedLocked()
	e.mu.Unlock()
	if got := r.Job(e.name).Config; got.Cron != cfg.Cron || got.JobName != e.name {
		t.Fatalf("changed job's config: %q %q", got.JobName, got.Cron)
	}
	if got := r.Job("steady-000001").Config.Cron; got != "1 * * * * ?" {
		t.Fatalf("the other job's cron changed to %q", got)
	}
}

// TestTheSweepVisitsTheWarmJobsOnly: the sweep's list holds the jobs read since the last sweep and no other,
// whatever reads, changes and sweeps run at once: every job that holds a snapshot or a named config is listed
// (once), so the sweep that finds it unread lets them go; a deleted job leaves the list within two sweeps.
func TestTheSweepVisitsTheWarmJobsOnly(t *testing.T) {
	r, names := coldRegistry(t, 200)
	if n := len(r.entries.warm.take()); n != 0 {
		t.Fatalf("%d jobs listed after two sweeps with no read", n)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; ; k += 7 {
				select {
				case <-stop:
					return
				default:
				}
				name := names[k%len(names)]
				if r.Job(name) == nil {
					t.Errorf("job %s not loaded", name)
					return
				}
				if k%5 == 0 { // a change: the snapshot goes, the named config stays
					e := r.entry(name)
					e.mu.Lock()
					e.changedLocked()
					e.mu.Unlock()
				}
			}
		}()
	}
	for range 200 {
		r.sweepCold()
	}
	close(stop)
	wg.Wait()
	check := func(when string) {
		listed := map[*jobEntry]int{}
		for _, e := range r.entries.warm.list {
			listed[e]++
		}
		for _, name := range names {
			e := r.entry(name)
			e.mu.Lock()
			holds, warm := e.snap != nil || e.st.cfg != nil, e.warm
			e.mu.Unlock()
			if holds && !warm || warm != (listed[e] == 1) || listed[e] > 1 {
				t.Fatalf("%s: job %s holds %v, warm %v, listed %d times", when, name, holds, warm, listed[e])
			}
		}
	}
	check("after the race")
	r.Job(names[3])
	r.sweepCold()
	r.sweepCold()
	check("after two sweeps")
	if n := len(r.entries.warm.list); n != 0 {
		t.Fatalf("%d jobs listed after two sweeps with no read", n)
	}
	r.Job(names[3])
	r.removeEntries([]string{names[3]})
	r.sweepCold()
	r.sweepCold()
	if n := len(r.entries.warm.list); n != 0 {
		t.Fatalf("a deleted job is still listed after two sweeps (%d listed)", n)
	}
}

// BenchmarkSweepCold: one sweep of a peer of 100,000 one-item jobs of which 2,000 were read since the last
// one (a minute's fires spread over its seconds: those of the last 5-10 s), in ns per sweep.
//
//	go test -run '^$' -bench BenchmarkSweepCold ./internal/cluster/
func BenchmarkSweepCold(b *testing.B) {
	r, names := coldRegistry(b, 100_000)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for k := range 2_000 {
			r.Job(names[(i*2_000+k)%len(names)])
		}
		b.StartTimer()
		r.sweepCold()
	}
}

// coldRegistry is a registry of n loaded jobs, none read since two sweeps.
func coldRegistry(tb testing.TB, n int) (*Registry, []string) {
	r := benchRegistry()
	names := loadBenchJobs(tb, r, n)
	r.sweepCold()
	r.sweepCold()
	return r, names
}
