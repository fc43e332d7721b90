// Command ejbench is ejserver's benchmark harness. For each named workload it starts a ZooKeeper of its own,
// N real ejserver peers and an instant webhook receiver that records every request's arrival, registers the
// workload's jobs through the API, measures a window of fires, and then fires the same schedule from a bare
// timer loop (`ejbench loop`, no ZooKeeper and no ejserver) against the same receiver: the baseline, this
// machine's limit at that moment. It prints one table (or -json) with each figure and its ratio to the
// baseline.
//
//	go run ./integration/cmd/ejbench                       # every workload, 5-minute windows (make bench)
//	go run ./integration/cmd/ejbench -workload second,fanout -duration 2m
//	go run ./integration/cmd/ejbench -workload steady-200 -duration 1m -profile /tmp/prof
//	go run ./integration/cmd/ejbench -workload async -duration 2m
//	go run ./integration/cmd/ejbench -workload steady-10k -history postgres   # the peers share a PostgreSQL history
//
// Workloads: steady-1k, steady-10k (1,000 / 10,000 jobs x 1 item every 10 s on 3 peers; steady-N for any N,
// every 10 s up to 10,000 jobs and once a minute beyond, spread over the minute's seconds: steady-100000 is
// not in the default list, it takes long),
// fanout (1 job x 2,000 items, each with its parameter, every 10 s, 3 peers), second (200 jobs every second,
// 1 peer), failover (kill -9 one of 3 peers while a slow receiver holds its items: time until every orphaned
// item is re-POSTed), reshard (a 4th peer joins 3 peers carrying 1,000 jobs: time until fires use it), async
// (1,000 jobs x 10 items a minute on 3 peers, each item answered 202 and completed by callback 1-30 s later:
// nothing lost, nothing recorded twice, and the callbacks' round trips). Not in the default list:
// backfill-10k (steady-10k, one window without and one with a 10,000-fire backfill of a 10-item job running:
// the steady jobs' and the backfilled job's own lateness in both, and the backfill's throughput).
//
// Only loopback is used. Every process is started by this program and stopped by its PID.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/pgtest"
)

type options struct {
	alerts         bool
	workloads      []string
	duration       time.Duration
	warmup         time.Duration
	period         time.Duration
	peers          int
	jobs           int
	json           bool
	out            string
	keep           bool
	baseline       bool
	ejserver       bool
	bin            string
	profile        string
	profileAt      time.Duration
	records        string
	sessionTimeout time.Duration
	zkHeap         string
	zkJVMFlags     string
	peerLogLevel   string
	peerProcs      int
	history        string // the peers' history store: "sqlite" or "postgres"
	regWorkers     int
	grace          time.Duration
	restartAt      time.Duration
	// the async workload's
	leaseSeconds int
	callbackMin  time.Duration
	callbackMax  time.Duration
	repeatShare  float64
	seed         uint64
}

var allWorkloads = []string{"steady-1k", "steady-10k", "fanout", "second", "failover", "reshard", "async"}

func main() { os.Exit(command(os.Args[1:])) }

// command runs ejbench, or `ejbench loop` (the baseline, which ejbench runs as a process of its own), and
// returns its exit status.
func command(args []string) int {
	if len(args) > 0 && args[0] == "loop" {
		return runLoop(args[1:])
	}
	return run(args)
}

func run(args []string) int {
	var o options
	fs := flag.NewFlagSet("ejbench", flag.ContinueOnError)
	wl := fs.String("workload", strings.Join(allWorkloads, ","), "workloads to run, comma-separated: "+strings.Join(allWorkloads, ", ")+", or steady-N (N jobs)")
	fs.DurationVar(&o.duration, "duration", 5*time.Minute, "measured window of the steady workloads (steady-*, fanout, second); a multiple of their period")
	fs.DurationVar(&o.warmup, "warmup", 0, "time between the jobs being scheduled on every peer and the window (default: one period + 5s)")
	fs.DurationVar(&o.period, "period", 0, "override the jobs' period of steady-* workloads and async (a divisor of 60s; default 10s, async 60s)")
	fs.IntVar(&o.peers, "peers", 0, "override the number of peers of every workload (default: the workload's)")
	fs.IntVar(&o.jobs, "jobs", 0, "override the number of jobs of every workload (default: the workload's)")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON instead of the table")
	fs.StringVar(&o.out, "out", "", "also write the results as JSON to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep ZooKeeper's data and the peers' logs and history (the directory is printed)")
	fs.BoolVar(&o.baseline, "baseline", true, "run the bare-loop baseline after each workload")
	fs.BoolVar(&o.ejserver, "ejserver", true, "run ejserver (false: the baselines only, to calibrate the machine)")
	fs.StringVar(&o.bin, "bin", "", "ejserver binary to run (default: build ./cmd/ejserver)")
	fs.StringVar(&o.profile, "profile", "", "directory: take a CPU profile of every peer during the window (peers run with --pprof) and a heap profile at its end")
	fs.DurationVar(&o.profileAt, "profile-at", 0, "with -profile: begin the CPU profile this long into the window (e.g. -restart-peer-at's time, for the survivors' CPU through a restart) instead of at its start")
	fs.StringVar(&o.records, "records", "", "directory: write each run's deliveries as CSV (workload-run.csv: scheduled and arrival times, job, item, source, instance, execution id, attempt)")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", 10*time.Second, "the peers' --session-timeout")
	fs.StringVar(&o.zkHeap, "zk-heap", "1g", "ZooKeeper's JVM heap (EJ_ZK_HEAP)")
	fs.StringVar(&o.zkJVMFlags, "zk-jvm-flags", "", "more flags for ZooKeeper's JVM, space-separated, e.g. -Xlog:gc:file=/tmp/zk-gc.log (EJ_ZK_JVMFLAGS)")
	fs.StringVar(&o.peerLogLevel, "peer-log-level", "warn", "the peers' --log-level (info logs every item; with -keep the logs stay)")
	fs.IntVar(&o.peerProcs, "peer-gomaxprocs", 0, "the peers' GOMAXPROCS (0: Go's default, the host's cores or the CPU limit); the baseline's is unchanged")
	fs.StringVar(&o.history, "history", "sqlite", "the peers' history store: sqlite (each peer's own file) or postgres (one PostgreSQL ejbench starts with its default, durable settings and the peers share, as the README's deployment does; its CPU is reported beside ZooKeeper's)")
	fs.IntVar(&o.regWorkers, "register-workers", 32, "concurrent API calls registering jobs")
	fs.DurationVar(&o.grace, "grace", 3*time.Second, "how long after the window late deliveries are still awaited")
	fs.DurationVar(&o.restartAt, "restart-peer-at", 0, "steady-*: stop the last peer (SIGTERM) this long into the window and start it again; report how soon it schedules every job (0: no restart)")
	fs.BoolVar(&o.alerts, "alerts", false, "give every job an alert rule on FIRE_FAILED, so its fires are followed (to measure the alert ledger's ZooKeeper requests per item)")
	fs.IntVar(&o.leaseSeconds, "lease-seconds", 60, "async: the jobs' async.leaseSeconds (no heartbeats are sent: keep it above -callback-max)")
	fs.DurationVar(&o.callbackMin, "callback-min", time.Second, "async: the shortest delay from a delivery to its completion callback")
	fs.DurationVar(&o.callbackMax, "callback-max", 30*time.Second, "async: the longest (delays are uniform between the two)")
	fs.Float64Var(&o.repeatShare, "repeat-share", 0.1, "async: the share of completions answered 200 that are sent again, 1-5 s later (at most the delays' range), to another peer")
	fs.Uint64Var(&o.seed, "seed", 1, "async: the seed of the callbacks' delays, targets and repeats")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: ejbench [flags]\n\nRuns real ZooKeeper, real ejserver peers and a recording receiver through named workloads, each beside a\nbare-loop baseline, and prints one table.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.callbackMin <= 0 || o.callbackMax < o.callbackMin || o.repeatShare < 0 || o.repeatShare > 1 {
		fmt.Fprintln(os.Stderr, "ejbench: -callback-min must be positive and at most -callback-max, -repeat-share within 0-1")
		return 2
	}
	if o.peerProcs < 0 {
		fmt.Fprintln(os.Stderr, "ejbench: -peer-gomaxprocs must not be negative")
		return 2
	}
	if o.history != "sqlite" && o.history != "postgres" {
		fmt.Fprintf(os.Stderr, "ejbench: -history must be sqlite or postgres, got %q\n", o.history)
		return 2
	}
	if o.profileAt < 0 || o.profileAt > 0 && o.profile == "" {
		fmt.Fprintln(os.Stderr, "ejbench: -profile-at must not be negative, and needs -profile")
		return 2
	}
	if o.restartAt < 0 {
		fmt.Fprintln(os.Stderr, "ejbench: -restart-peer-at must not be negative")
		return 2
	}
	for _, w := range strings.Split(*wl, ",") {
		if w = strings.TrimSpace(w); w != "" {
			if _, err := lookupWorkload(w, o); err != nil {
				fmt.Fprintln(os.Stderr, "ejbench:", err)
				return 2
			}
			o.workloads = append(o.workloads, w)
		}
	}
	if o.zkHeap != "" && os.Getenv("EJ_ZK_HEAP") == "" {
		os.Setenv("EJ_ZK_HEAP", o.zkHeap)
	}
	if o.zkJVMFlags != "" && os.Getenv("EJ_ZK_JVMFLAGS") == "" {
		os.Setenv("EJ_ZK_JVMFLAGS", o.zkJVMFlags)
	}
	e, err := newEnv(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ejbench:", err)
		return 1
	}
	defer e.close()
	defer e.closeOnSignal()()
	if err := e.startHistory(); err != nil {
		fmt.Fprintln(os.Stderr, "ejbench:", err)
		return 1
	}
	var results []Result
	failed := false
	procs := ""
	if o.peerProcs > 0 {
		procs = fmt.Sprintf(", the peers with GOMAXPROCS=%d", o.peerProcs)
	}
	for _, name := range o.workloads {
		w, _ := lookupWorkload(name, o)
		e.logf("== %s: %s%s (load average %s)", w.name, w.describe(), procs, loadAvg())
		rs, err := e.runWorkload(w)
		if err != nil {
			e.logf("%s failed: %v", w.name, err)
			failed = true
		}
		results = append(results, rs...)
		if len(rs) > 0 {
			printTable(os.Stderr, rs) // progress: each workload's rows as they come
		}
	}
	if o.out != "" {
		if err := writeJSON(o.out, results); err != nil {
			fmt.Fprintln(os.Stderr, "ejbench:", err)
			failed = true
		}
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
	} else {
		fmt.Printf("ejbench %s, %d CPUs, load average %s at the end\n\n", time.Now().Format(time.RFC3339), cpus(), loadAvg())
		printTable(os.Stdout, results)
	}
	if failed {
		return 1
	}
	return 0
}

func writeJSON(path string, results []Result) error {
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// env is what every workload shares: the binaries and a scratch directory.
type env struct {
	o    options
	bin  string // ejserver
	self string // this program, for `ejbench loop`
	dir  string
	// pg is the PostgreSQL every workload's peers write their history to (-history postgres), each workload
	// into a database of its own; nil with SQLite
	pg        *pgtest.Cluster
	databases atomic.Int64 // the PostgreSQL databases made so far
}

func newEnv(o options) (*env, error) {
	dir, err := os.MkdirTemp("", "ejbench-")
	if err != nil {
		return nil, err
	}
	e := &env{o: o, dir: dir, bin: o.bin}
	e.logf("scratch directory %s", dir)
	if e.bin == "" {
		e.logf("building ejserver")
		if e.bin, err = harness.Build(dir, false); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if e.self, err = os.Executable(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// startHistory starts the PostgreSQL the peers write their history to (-history postgres); nothing with SQLite.
func (e *env) startHistory() (err error) {
	if e.o.history != "postgres" {
		return nil
	}
	e.logf("starting PostgreSQL")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if e.pg, err = pgtest.StartWith(ctx, pgtest.Options{Durable: true}); err != nil {
		return err
	}
	e.logf("PostgreSQL %d in %s", e.pg.PID(), e.pg.Dir())
	return nil
}

// closeOnSignal makes an interrupt (SIGINT, SIGTERM) stop what this process started that would outlive it (the
// peers and ZooKeeper die with it; PostgreSQL's postmaster, started by pg_ctl, does not), and exit with 130. The
// returned func ends the watch.
func (e *env) closeOnSignal() (stop func()) {
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sig:
			e.logf("%v: stopping", s)
			e.close()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() { signal.Stop(sig); close(done) }
}

func (e *env) close() {
	if e.pg != nil {
		stop := e.pg.Close // Close also removes its directory, which -keep keeps
		if e.o.keep {
			stop = e.pg.Stop
			e.logf("keeping PostgreSQL's cluster in %s", e.pg.Dir())
		}
		if err := stop(); err != nil {
			e.logf("stop PostgreSQL: %v", err)
		}
	}
	if e.o.keep {
		e.logf("kept %s", e.dir)
		return
	}
	os.RemoveAll(e.dir)
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s ejbench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func cpus() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\nprocessor") + btoi(strings.HasPrefix(string(b), "processor"))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// workload is one named benchmark.
type workload struct {
	name     string
	kind     string // steady, fanout, second, failover, reshard, async
	peers    int
	sched    schedule
	strategy string
	duration time.Duration
	// leaseSeconds is the async workload's async.leaseSeconds
	leaseSeconds int
	// alerts gives every job an alert rule (the fire ledger follows its fires: ZooKeeper traffic per item)
	alerts bool
}

func (w workload) describe() string {
	return fmt.Sprintf("%d jobs x %d items every %s on %d peers, window %s", w.sched.jobs, w.sched.items, w.sched.period, w.peers, w.duration)
}

func lookupWorkload(name string, o options) (workload, error) {
	w := workload{name: name, kind: name, peers: 3, strategy: "ROUND_ROBIN", duration: o.duration,
		sched: schedule{prefix: "bench", jobs: 1000, items: 1, period: 10 * time.Second, spread: true}}
	switch {
	case name == "steady-1k":
		w.kind = "steady"
	case name == "steady-10k":
		w.kind, w.sched.jobs = "steady", 10000
	case strings.HasPrefix(name, "steady-"):
		n, err := strconv.Atoi(strings.TrimPrefix(name, "steady-"))
		if err != nil || n < 1 {
			return w, fmt.Errorf("workload %q: steady-N takes a number of jobs", name)
		}
		w.kind, w.sched.jobs = "steady", n
		if n > 10000 {
			// beyond steady-10k's 10,000 jobs every 10 s, each job fires once a minute (steady-100000 is issue
			// 21's: 100,000 jobs spread over the minute's seconds, 1,667 items a second)
			w.sched.period = time.Minute
		}
	case name == "fanout":
		w.sched.jobs, w.sched.items, w.sched.spread, w.strategy = 1, 2000, false, "AVG_ALLOCATION"
	case name == "second":
		w.peers, w.sched.jobs, w.sched.period = 1, 200, time.Second
	case name == "failover":
		// every job has one item on each peer; all fire together, and the receiver holds NORMAL_TRIGGER
		// requests for 25 s, so the victim's items are in flight when it is killed
		w.sched.jobs, w.sched.items, w.sched.period, w.sched.spread, w.strategy = 100, 3, 30*time.Second, false, "AVG_ALLOCATION"
		w.duration = 60 * time.Second
	case name == "reshard":
		w.duration = 60 * time.Second
	case name == "backfill-10k":
		// steady-10k beside a 10,000-fire backfill of a 10-item job (not in the default list: minutes more)
		w.kind, w.sched.jobs = "backfill", 10000
	case name == "async":
		// 10,000 items a minute answered 202 and completed by callback later: 1,000 jobs of 10 items, job k at
		// second spreadOffset(k, 60) of every minute (160-170 items a second, as steady-10k spreads its jobs over its period)
		w.sched.jobs, w.sched.items, w.sched.period = 1000, 10, time.Minute
		w.leaseSeconds = o.leaseSeconds
	default:
		return w, fmt.Errorf("unknown workload %q (have %s, steady-N, backfill-10k)", name, strings.Join(allWorkloads, ", "))
	}
	w.alerts = o.alerts
	if o.period > 0 && (w.kind == "steady" || w.kind == "async" || w.kind == "backfill") {
		if o.period%time.Second != 0 || (60*time.Second)%o.period != 0 {
			return w, fmt.Errorf("-period %s: must be whole seconds dividing a minute", o.period)
		}
		w.sched.period = o.period
	}
	if o.peers > 0 {
		w.peers = o.peers
	}
	if o.jobs > 0 {
		w.sched.jobs = o.jobs
	}
	switch w.kind {
	case "steady", "fanout", "second", "async", "backfill":
		if w.duration%w.sched.period != 0 {
			return w, fmt.Errorf("-duration %s: must be a multiple of %s's period %s", w.duration, name, w.sched.period)
		}
	}
	return w, nil
}

func (e *env) runWorkload(w workload) ([]Result, error) {
	capacity := w.sched.expected(time.Unix(0, 0), time.Unix(0, 0).Add(w.duration+2*time.Minute))
	rec, err := newRecorder(capacity + capacity/4 + 1024)
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	var out []Result
	var r Result
	if e.o.ejserver {
		switch w.kind {
		case "steady", "fanout", "second":
			r, err = e.runPeriodic(w, rec)
		case "failover":
			r, err = e.runFailover(w, rec)
		case "reshard":
			r, err = e.runReshard(w, rec)
		case "async":
			r, err = e.runAsync(w, rec)
		case "backfill":
			return e.runBackfill(w, rec) // its comparison is its own two windows, not a baseline
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if e.o.baseline {
		rec.reset()
		b, err := e.runBaseline(w, rec)
		if err != nil {
			return out, fmt.Errorf("baseline: %w", err)
		}
		out = append(out, b)
		if e.o.ejserver {
			out = append(out, ratio(r, b))
		}
	}
	return out, nil
}

// dataDir is a fresh directory for one run of a workload.
func (e *env) dataDir(name string) string {
	return filepath.Join(e.dir, fmt.Sprintf("%s-%d", name, time.Now().UnixNano()))
}
