package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// benchCluster is a ZooKeeper of its own and the peers of one workload.
type benchCluster struct {
	e      *env
	dir    string
	zk     *zktest.Server
	zkPID  int
	peers  []*harness.Peer
	pprof  []string // each peer's profiler address, if profiling
	client *http.Client
	// secretFile holds the cluster's callback token secret (--callback-secret-file)
	secretFile string
	// historyDSN is the PostgreSQL database the peers share (--history-dsn); empty with SQLite
	historyDSN string
	// stopSamples holds, by peer index, its counters read just before a restart stopped it (noteStop)
	mu          sync.Mutex
	stopSamples map[int][]counterSample
}

// noteStop reads peer i's counters before it is stopped, so that the window's figures keep what its process
// counted until then.
func (c *benchCluster) noteStop(i int) {
	s := c.peerSample(c.peers[i])
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopSamples == nil {
		c.stopSamples = map[int][]counterSample{}
	}
	c.stopSamples[i] = append(c.stopSamples[i], s)
}

// windowCounters is how the peers' counters changed since before (peerCounters at the window's start), summed
// over the peers, a restarted peer's old and new processes both counted.
func (c *benchCluster) windowCounters(before []counterSample) map[string]float64 {
	after := c.peerCounters()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	for i := range after {
		var samples []counterSample
		if i < len(before) {
			samples = append(samples, before[i])
		}
		samples = append(append(samples, c.stopSamples[i]...), after[i])
		for k, v := range processDelta(samples) {
			out[k] += v
		}
	}
	return out
}

func (e *env) startCluster(name string, peers int) (*benchCluster, error) {
	c := &benchCluster{e: e, dir: e.dataDir(name),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128}}}
	zk, err := zktest.StartStandalone(filepath.Join(c.dir, "zk"))
	if err != nil {
		return nil, err
	}
	c.zk = zk
	_, port, _ := strings.Cut(zk.Addr, ":")
	p, _ := strconv.Atoi(port)
	c.zkPID = pidListening(p)
	// every peer holds the same callback token secret; without the file each would warn that the secret is in
	// ZooKeeper without --zk-digest (true here, and a note in every workload's row)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	c.secretFile = filepath.Join(c.dir, "callback-secret")
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		c.stop()
		return nil, err
	}
	if err := os.WriteFile(c.secretFile, []byte(hex.EncodeToString(secret)), 0o600); err != nil {
		c.stop()
		return nil, err
	}
	if c.historyDSN, err = e.historyDatabase(); err != nil {
		c.stop()
		return nil, err
	}
	for range peers {
		if _, err := c.addPeer(); err != nil {
			c.stop()
			return nil, err
		}
	}
	return c, nil
}

// historyDatabase makes a PostgreSQL database for one cluster's peers (-history postgres), so that each
// workload starts with an empty history, and returns its DSN; "" with SQLite.
func (e *env) historyDatabase() (string, error) {
	if e.pg == nil {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return e.pg.CreateDatabase(ctx, fmt.Sprintf("ejbench_%d", e.databases.Add(1)))
}

// addPeer starts one more peer (server IP 127.0.0.{n}).
func (c *benchCluster) addPeer() (*harness.Peer, error) {
	i := len(c.peers) + 1
	// the last --log-level wins over the harness's debug
	args := []string{"--log-level", c.e.o.peerLogLevel, "--callback-secret-file", c.secretFile}
	if c.historyDSN != "" {
		args = append(args, "--history-dsn", c.historyDSN)
	}
	addr := ""
	if c.e.o.profile != "" {
		port, err := harness.FreePort()
		if err != nil {
			return nil, err
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		args = append(args, "--pprof", addr)
	}
	p, err := harness.StartPeer(harness.PeerConfig{Binary: c.e.bin, ZK: c.zk.Addr, Namespace: "bench",
		ServerIP: fmt.Sprintf("127.0.0.%d", i), SessionTimeout: c.e.o.sessionTimeout,
		DataDir: filepath.Join(c.dir, fmt.Sprintf("peer%d", i)), ExtraArgs: args, Env: peerEnv(c.e.o)})
	if err != nil {
		return nil, fmt.Errorf("start peer %d: %w", i, err)
	}
	c.peers = append(c.peers, p)
	c.pprof = append(c.pprof, addr)
	return p, nil
}

// peerEnv is what the options add to a peer's environment.
func peerEnv(o options) []string {
	if o.peerProcs > 0 {
		return []string{fmt.Sprintf("GOMAXPROCS=%d", o.peerProcs)}
	}
	return nil
}

// urls are the peers' base URLs (http://host:port).
func (c *benchCluster) urls() []string {
	var out []string
	for _, p := range c.peers {
		out = append(out, strings.TrimSuffix(p.URL("/"), "/"))
	}
	return out
}

func (c *benchCluster) pids() []int {
	var out []int
	for _, p := range c.peers {
		out = append(out, p.PID())
	}
	return out
}

// stop ends the peers (SIGTERM, then SIGKILL) and ZooKeeper, and removes the data unless -keep.
func (c *benchCluster) stop() {
	var wg sync.WaitGroup
	for _, p := range c.peers {
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Stop(20 * time.Second) }()
	}
	wg.Wait()
	for i, p := range c.peers {
		if n := readProblems(p.LogPath).errors; n > 0 {
			c.e.logf("peer %d logged %d errors (see %s with -keep)", i+1, n, p.LogPath)
		}
	}
	if c.zk != nil {
		c.zk.Stop()
	}
	if !c.e.o.keep {
		os.RemoveAll(c.dir)
	}
}

// peerProblems is what a peer logged at ERROR and WARN, counted, with the first few lines of each: a miss or a
// failure in a run is then explained by the table's notes, not only by a log that is gone without -keep.
type peerProblems struct {
	errors, warnings int
	first            []string
}

const problemLinesKept = 3

// readProblems reads a peer's log. A loopback peer without API tokens warns about it: expected here, skipped.
func readProblems(path string) peerProblems {
	var p peerProblems
	f, err := os.Open(path)
	if err != nil {
		return p
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "level=ERROR"):
			p.errors++
		case strings.Contains(line, "level=WARN") && !strings.Contains(line, "API has no tokens"):
			p.warnings++
		default:
			continue
		}
		if len(p.first) < problemLinesKept {
			p.first = append(p.first, line)
		}
	}
	return p
}

// jobBody is the API's job JSON for job k of the workload.
func jobBody(w workload, k int, url string) map[string]any {
	j := map[string]any{"jobName": w.sched.jobName(k), "cron": w.sched.cron(k), "shardingTotalCount": w.sched.items,
		"jobShardingStrategyType": w.strategy, "webhook": map[string]any{"url": url}}
	if w.kind == "fanout" {
		// as ElasticJob users shard: every item has its parameter (each item's request carries its own)
		params := make([]string, w.sched.items)
		for i := range params {
			params[i] = fmt.Sprintf("%d=part-%d", i, i)
		}
		j["shardingItemParameters"] = strings.Join(params, ",")
	}
	if w.kind == "async" {
		j["async"] = map[string]any{"leaseSeconds": w.leaseSeconds}
	}
	if w.alerts {
		j["alerts"] = map[string]any{"rules": []any{map[string]any{"on": []string{"FIRE_FAILED"}, "channels": []string{"bench"}}}}
	}
	if w.kind == "failover" {
		j["failover"] = true
		j["webhook"] = map[string]any{"url": url, "timeoutMs": 60000}
		j["retry"] = map[string]any{"maxAttempts": 1}
	}
	return j
}

// register creates the workload's jobs through the API, concurrently, spread over the peers.
func (c *benchCluster) register(w workload, url string) (time.Duration, error) {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for range min(c.e.o.regWorkers, w.sched.jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= w.sched.jobs {
					return
				}
				p := c.peers[k%len(c.peers)]
				if err := c.post(p, "/api/v1/jobs", jobBody(w, k, url)); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

func (c *benchCluster) post(p *harness.Peer, path string, body any) error {
	b, _ := json.Marshal(body)
	for attempt := 1; ; attempt++ {
		resp, err := c.client.Post(p.URL(path), "application/json", bytes.NewReader(b))
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated || attempt > 1 && resp.StatusCode == http.StatusConflict {
				return nil // a 409 on a retry: the try that timed out or failed with a 5xx had landed
			}
			err = fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, raw)
			if resp.StatusCode < 500 {
				return err
			}
		}
		if attempt == 3 {
			return err
		}
		time.Sleep(time.Second)
	}
}

// waitScheduled waits until every peer's scheduler holds n jobs.
func (c *benchCluster) waitScheduled(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		var got []int
		for _, p := range c.peers {
			v := c.metric(p, "ejserver_scheduled_jobs")
			got = append(got, int(v))
			ok = ok && int(v) >= n
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("peers still schedule %v of %d jobs after %s", got, n, timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// metric reads one unlabelled gauge or counter from a peer's /metrics (-1 if unreadable).
func (c *benchCluster) metric(p *harness.Peer, name string) float64 {
	resp, err := c.client.Get(p.URL("/metrics"))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// profile takes a CPU profile of every peer for d from at (at once if at has passed; in the background: wait
// on the returned channel) when -profile is set, and halfway through it a dump of the peer's goroutines
// (goroutine?debug=1: how many wait where, which a CPU profile does not show). -profile-at sets at into the
// window (a restart's minute, say).
func (c *benchCluster) profile(name string, at time.Time, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	if c.e.o.profile == "" || d < time.Second {
		if c.e.o.profile != "" {
			c.e.logf("no CPU profile of %s: -profile-at leaves %s of its window", name, d)
		}
		close(done)
		return done
	}
	var wg sync.WaitGroup
	for i, addr := range c.pprof {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(at))
			path := filepath.Join(c.e.o.profile, fmt.Sprintf("%s-peer%d.cpu.pprof", name, i+1))
			if err := fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())), path, d+time.Minute); err != nil {
				c.e.logf("CPU profile of peer %d: %v", i+1, err)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(at.Add(d / 2)))
			path := filepath.Join(c.e.o.profile, fmt.Sprintf("%s-peer%d.goroutines.txt", name, i+1))
			if err := fetch(fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=1", addr), path, time.Minute); err != nil {
				c.e.logf("goroutines of peer %d: %v", i+1, err)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

// heapProfiles saves every peer's heap profile.
func (c *benchCluster) heapProfiles(name string) {
	if c.e.o.profile == "" {
		return
	}
	for i, addr := range c.pprof {
		path := filepath.Join(c.e.o.profile, fmt.Sprintf("%s-peer%d.heap.pprof", name, i+1))
		if err := fetch("http://"+addr+"/debug/pprof/heap", path, time.Minute); err != nil {
			c.e.logf("heap profile of peer %d: %v", i+1, err)
		}
		// the text form ends with runtime.MemStats: how the RSS splits into heap, stacks and the runtime's own
		if err := fetch("http://"+addr+"/debug/pprof/heap?debug=1", strings.TrimSuffix(path, ".pprof")+".txt", time.Minute); err != nil {
			c.e.logf("heap stats of peer %d: %v", i+1, err)
		}
	}
}

func fetch(url, path string, timeout time.Duration) error {
	resp, err := (&http.Client{Timeout: timeout}).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// counterPrefixes are the peers' own counters the benchmark reports (their change over the window, summed
// over the peers): they say why a fire was missed (skipped, by reason), late (misfires) or failed, and how
// often the peers collected garbage (all collections, and those started between bursts), and what became of
// accepted (202) items.
var counterPrefixes = []string{"ejserver_fires_skipped_total", "ejserver_item_executions_total", "ejserver_misfires_total",
	"ejserver_failovers_total", "ejserver_reshardings_total", "ejserver_history_dropped_total", "ejserver_history_status_traces_shed_total",
	"ejserver_gc_between_bursts_total", "go_gc_duration_seconds_count", "ejserver_async_", "ejserver_zookeeper_write_",
	"ejserver_zookeeper_requests_total", "ejserver_zookeeper_events_total"}

// counterSample is one peer process's counterPrefixes series as read from its /metrics.
type counterSample struct {
	pid  int
	vals map[string]float64
}

// counters reads counterPrefixes' series from every peer's /metrics, summed by series.
func (c *benchCluster) counters() map[string]float64 { return sumSamples(c.peerCounters()) }

// sumSamples sums samples by series.
func sumSamples(samples []counterSample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		for k, v := range s.vals {
			out[k] += v
		}
	}
	return out
}

// peerCounters reads each peer's counterPrefixes series (a peer that has exited or does not answer: no series).
func (c *benchCluster) peerCounters() []counterSample {
	out := make([]counterSample, len(c.peers))
	for i, p := range c.peers {
		out[i] = c.peerSample(p)
	}
	return out
}

func (c *benchCluster) peerSample(p *harness.Peer) counterSample {
	s := counterSample{pid: p.PID(), vals: map[string]float64{}}
	if p.Exited() {
		return s
	}
	resp, err := c.client.Get(p.URL("/metrics"))
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, pre := range counterPrefixes {
			if strings.HasPrefix(line, pre) {
				i := strings.LastIndexByte(line, ' ')
				v, err := strconv.ParseFloat(line[i+1:], 64)
				if err == nil {
					s.vals[strings.TrimPrefix(line[:i], "ejserver_")] += v
				}
			}
		}
	}
	return s
}

// processDelta is how one peer's counters changed over samples taken in order (the window's start, any taken
// just before the peer was stopped, its end): a new process (another pid) counts from zero, so a restart in
// the window adds the old process's change up to its stop to the new one's from its start.
func processDelta(samples []counterSample) map[string]float64 {
	out := map[string]float64{}
	if len(samples) == 0 {
		return out
	}
	add := func(last, first map[string]float64) {
		for k, v := range last {
			out[k] += v - first[k]
		}
	}
	first, cur := samples[0].vals, samples[0]
	for _, s := range samples[1:] {
		if s.pid != cur.pid {
			add(cur.vals, first)
			first = nil
		}
		cur = s
	}
	add(cur.vals, first)
	return nonZero(out)
}

// nonZero drops m's series that are 0 (did not change).
func nonZero(m map[string]float64) map[string]float64 {
	maps.DeleteFunc(m, func(_ string, v float64) bool { return v == 0 })
	return m
}
