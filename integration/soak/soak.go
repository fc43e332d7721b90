// Package soak is ejserver's nemesis soak: a 3-node ZooKeeper ensemble and several ejserver peers on
// loopback (each reaching ZooKeeper through TCP proxies it can black-hole), PostgreSQL history, a mixed job
// set whose receivers record every request, and a seeded nemesis that injects overlapping faults from a menu
// (plan.go). At the end the checker (integration/soak/checker) judges the whole run from the schedules, the
// faults' windows, the receivers' records and the history rows. A seed reproduces the fault schedule, not
// the exact interleaving: the run's event log (faults, deliveries) and the peers' logs stay in the run's
// directory when it fails. `make soak` runs it (integration/cmd/soak); `make test` runs a short one.
package soak

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/integration/soak/checker"
	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/testutil/pgtest"
	"github.com/ejserver/ejserver/internal/testutil/tcpproxy"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// Config configures a soak run.
type Config struct {
	Seed     uint64
	Duration time.Duration // how long the nemesis injects faults
	Peers    int           // 3-5
	// Dir holds the run (binaries, ZooKeeper's and PostgreSQL's data, the peers' logs, events.jsonl,
	// report.txt). It is removed after a passing run unless Keep.
	Dir            string
	Keep           bool
	SessionTimeout time.Duration
	Log            io.Writer // progress
}

// Result is a run's outcome.
type Result struct {
	Report checker.Report
	Plan   []Action
	Dir    string // kept when the run failed or Keep
}

// env is one run's processes and records.
type env struct {
	cfg     Config
	log     io.Writer
	dir     string
	bins    [2]string // the build under test, the "newer" build of a rolling restart
	zk      *zktest.Ensemble
	pg      *pgtest.Cluster
	dsn     string
	recv    *recv
	peers   []*harness.Peer
	proxies [][]*tcpproxy.Proxy
	client  *http.Client

	mu        sync.Mutex
	instances [][]string // per peer, every instance id it has had
	faults    []checker.Fault
	jobs      map[string]*checker.Job
	events    *os.File
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "%s soak: %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Run runs one soak and checks it. An error means the run could not be carried out; violations are in the
// report.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if cfg.Peers < 3 || cfg.Peers > 5 {
		return res, errors.New("soak: 3 to 5 peers")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 4 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	e := &env{cfg: cfg, log: cfg.Log, dir: cfg.Dir, jobs: map[string]*checker.Job{},
		client: &http.Client{Timeout: 5 * time.Second}}
	if e.dir == "" {
		if e.dir, err = os.MkdirTemp("", "ejsoak-"); err != nil {
			return res, err
		}
	}
	res.Dir = e.dir
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return res, err
	}
	if e.events, err = os.Create(filepath.Join(e.dir, "events.jsonl")); err != nil {
		return res, err
	}
	defer e.events.Close()
	defer func() {
		e.stop()
		failed := err != nil || len(res.Report.Violations) > 0
		if !failed && !cfg.Keep {
			os.RemoveAll(e.dir)
			res.Dir = ""
		}
	}()
	if err := e.start(ctx); err != nil {
		return res, err
	}
	res.Plan = Plan(PlanConfig{Seed: cfg.Seed, Duration: cfg.Duration, Peers: cfg.Peers, Jobs: Mix, SessionTimeout: cfg.SessionTimeout})
	for _, a := range res.Plan {
		e.event("planned", a.String())
	}
	e.logf("seed %d: %d actions planned over %s; run directory %s", cfg.Seed, len(res.Plan), cfg.Duration, e.dir)

	if err := e.register(); err != nil {
		return res, err
	}
	// a warm-up: every peer has its share of every job before the checked window starts
	warm := 15 * time.Second
	if err := sleepCtx(ctx, warm); err != nil {
		return res, err
	}
	from := time.Now().Truncate(time.Second).Add(time.Second)
	e.runPlan(ctx, res.Plan, from)
	e.heal()
	to := time.Now().Add(10 * time.Second)
	e.logf("nemesis done; fires up to %s are checked", to.UTC().Format("15:04:05"))
	if err := sleepCtx(ctx, time.Until(to)+5*time.Second); err != nil {
		return res, err
	}
	e.settle(ctx)
	recs, err := e.readHistory(ctx)
	if err != nil {
		return res, err
	}
	run := checker.Run{From: from, To: to, Grace: 2*cfg.SessionTimeout + 12*time.Second, Deliveries: e.recv.deliveries(),
		History: recs, Faults: e.faults}
	for _, j := range Mix {
		run.Jobs = append(run.Jobs, *e.jobs[j.Name])
	}
	res.Report = checker.Check(run)
	text := fmt.Sprintf("seed %d, %d peers, nemesis %s, checked fires %s..%s\n%s", cfg.Seed, cfg.Peers, cfg.Duration,
		from.UTC().Format("15:04:05"), to.UTC().Format("15:04:05"), res.Report.Text())
	_ = os.WriteFile(filepath.Join(e.dir, "report.txt"), []byte(text), 0o644)
	return res, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// event appends one line to the event log.
func (e *env) event(kind, detail string, kv ...any) {
	m := map[string]any{"at": time.Now().UTC().Format(time.RFC3339Nano), "event": kind, "detail": detail}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.events.Write(append(b, '\n'))
}

func (e *env) start(ctx context.Context) error {
	var err error
	e.logf("building ejserver (under test, and a newer build for the rolling restart)")
	if e.bins[0], err = harness.BuildVersion(e.dir, "soak-1"); err != nil {
		return err
	}
	if e.bins[1], err = harness.BuildVersion(e.dir, "soak-2"); err != nil {
		return err
	}
	e.logf("starting a 3-node ZooKeeper ensemble and PostgreSQL")
	if e.zk, err = zktest.StartEnsemble(filepath.Join(e.dir, "zk")); err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if e.pg, err = pgtest.FromEnvOrStart(pctx); err != nil {
		return err
	}
	if e.dsn, err = e.pg.CreateDatabase(pctx, fmt.Sprintf("soak_%d_%d", e.cfg.Seed%1000000, time.Now().Unix()%100000)); err != nil {
		return err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	secretFile := filepath.Join(e.dir, "callback-secret")
	if err := os.WriteFile(secretFile, []byte(hex.EncodeToString(secret)), 0o600); err != nil {
		return err
	}
	if e.recv, err = newRecv(&lockedWriter{mu: &e.mu, w: e.events}, e.peerURLs); err != nil {
		return err
	}
	for _, j := range Mix {
		e.recv.async[j.Name], e.recv.strm[j.Name] = j.Async, j.Streaming
	}
	e.logf("starting %d peers", e.cfg.Peers)
	for i := range e.cfg.Peers {
		var links []*tcpproxy.Proxy
		var addrs []string
		for _, n := range e.zk.Nodes {
			p, err := tcpproxy.New(n.Addr)
			if err != nil {
				return err
			}
			links = append(links, p)
			addrs = append(addrs, p.Addr())
		}
		e.proxies = append(e.proxies, links)
		p, err := harness.StartPeer(harness.PeerConfig{Binary: e.bins[0], ZK: strings.Join(addrs, ","), Namespace: "soak",
			ServerIP: fmt.Sprintf("127.0.0.%d", i+1), SessionTimeout: e.cfg.SessionTimeout,
			DataDir:   filepath.Join(e.dir, fmt.Sprintf("peer%d", i+1)),
			ExtraArgs: []string{"--history-dsn", e.dsn, "--callback-secret-file", secretFile, "--log-level", "info"}})
		if err != nil {
			return err
		}
		e.peers = append(e.peers, p)
		e.instances = append(e.instances, []string{p.InstanceID()})
	}
	return nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (e *env) peerURLs() []string {
	var out []string
	for _, p := range e.peers {
		out = append(out, strings.TrimSuffix(p.URL("/"), "/"))
	}
	return out
}

// api calls the first peer that answers (peers may be down or frozen) and returns its status.
func (e *env) api(method, path string, body any, out any) error {
	var last error
	for _, p := range e.peers {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, p.URL(path), rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			last = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
			if resp.StatusCode == http.StatusServiceUnavailable {
				continue
			}
			return last
		}
		if out != nil {
			return json.Unmarshal(raw, out)
		}
		return nil
	}
	return last
}

func (e *env) register() error {
	now := time.Now()
	for _, j := range Mix {
		if err := e.api("POST", "/api/v1/jobs", j.body(e.recv.URL, j.Total), nil); err != nil {
			return fmt.Errorf("register %s: %w", j.Name, err)
		}
		e.jobs[j.Name] = &checker.Job{Name: j.Name, Cron: j.Cron, Misfire: j.Misfire, Failover: j.Failover, Async: j.Async, Unmonitored: j.Unmonitored,
			Overlap: j.Overlap, CatchUp: j.CatchUp, CatchUpWindow: time.Duration(j.CatchUpWindowSeconds) * time.Second,
			Totals: []checker.Total{{At: now.Add(-time.Minute), Total: j.Total}}, ItemDisabled: map[int][]checker.Window{}}
	}
	e.logf("%d jobs registered", len(Mix))
	return nil
}

// stop ends everything this run started, by PID.
func (e *env) stop() {
	var wg sync.WaitGroup
	for _, p := range e.peers {
		wg.Go(func() {
			_ = p.Resume()
			_ = p.Stop(20 * time.Second)
		})
	}
	wg.Wait()
	for _, links := range e.proxies {
		for _, p := range links {
			p.Close()
		}
	}
	if e.recv != nil {
		e.recv.close()
	}
	if e.zk != nil {
		e.zk.Stop()
	}
	if e.pg != nil {
		_ = e.pg.Close()
	}
}

// settle disables every job and waits until the receivers have been quiet for 5 s and the accepted items'
// callbacks are done (a minute at most), then gives the history writers a moment.
func (e *env) settle(ctx context.Context) {
	for _, j := range Mix {
		if err := e.api("POST", "/api/v1/jobs/"+j.Name+"/disable", nil, nil); err != nil {
			e.logf("disable %s at the end: %v", j.Name, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	last, quiet := e.recv.count(), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if n := e.recv.count(); n != last {
			last, quiet = n, time.Now()
		}
		if time.Since(quiet) > 5*time.Second && e.asyncDone() {
			break
		}
		_ = sleepCtx(ctx, 200*time.Millisecond)
	}
	_ = sleepCtx(ctx, 3*time.Second)
}

func (e *env) asyncDone() bool {
	for _, d := range e.recv.deliveries() {
		if d.Status == http.StatusAccepted && d.Ended.IsZero() {
			return false
		}
	}
	return true
}

// readHistory reads every execution of the soak's jobs from PostgreSQL, through the product's store.
func (e *env) readHistory(ctx context.Context) ([]checker.Record, error) {
	store, err := history.Open(ctx, e.dsn)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	var out []checker.Record
	for _, j := range Mix {
		f := history.ExecutionFilter{JobName: j.Name, Limit: history.MaxLimit}
		for {
			page, err := store.ListExecutions(ctx, f)
			if err != nil {
				return nil, fmt.Errorf("read the history of %s: %w", j.Name, err)
			}
			for _, x := range page.Items {
				out = append(out, checker.Record{ExecutionID: x.ID, Job: x.JobName, Item: x.ShardingItem, Source: string(x.Source),
					ScheduledAt: x.ScheduledAt, Instance: x.InstanceID, Ended: !x.CompletedAt.IsZero(), Success: x.Success,
					StatusCode: x.StatusCode, Cause: x.FailureCause})
			}
			if page.NextCursor == "" {
				break
			}
			f.Cursor = page.NextCursor
		}
	}
	return out, nil
}
