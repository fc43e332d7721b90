package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/sharding"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// Result is one row of the table: one run (ejserver or baseline) of one workload, or the ratio of the two.
type Result struct {
	Workload    string         `json:"workload"`
	Run         string         `json:"run"` // ejserver, baseline or ratio
	Peers       int            `json:"peers"`
	Jobs        int            `json:"jobs"`
	ItemsPerJob int            `json:"itemsPerJob"`
	Period      string         `json:"period"`
	Window      string         `json:"window"`
	LoadAvg     string         `json:"loadAvgAtStart"`
	Expected    int            `json:"expected"`
	Received    int            `json:"received"`
	Duplicates  int            `json:"duplicates"`
	Missed      int            `json:"missed"`
	Unexpected  int            `json:"unexpected,omitempty"`
	Other       int            `json:"otherSources,omitempty"`
	OtherBy     map[string]int `json:"otherBySource,omitempty"`
	MissedFires []string       `json:"missedFires,omitempty"` // some of them, job/item@time
	Lateness    Latency        `json:"lateness"`
	// FirstMinute and LastMinute: the trend (dkron looked fine for a minute, then collapsed).
	FirstMinute Minute   `json:"firstMinute"`
	LastMinute  Minute   `json:"lastMinute"`
	Minutes     []Minute `json:"minutes,omitempty"`
	FireSpan    Latency  `json:"fireSpan"` // per fire: its last item's arrival minus its scheduled time
	RequestsPS  float64  `json:"requestsPerSecond"`
	Usage       Usage    `json:"usage"` // peers (or the baseline loop)
	ZKUsage     *Usage   `json:"zkUsage,omitempty"`
	// HistoryCPU is the shared PostgreSQL's CPU over the window (-history postgres), its processes summed, in %
	// of one core; like ZooKeeper's, not in the peers' figures
	HistoryCPU *float64 `json:"historyCpuPercent,omitempty"`
	ZKPackets  int64    `json:"zkPacketsReceived,omitempty"`
	ZKPerItem  float64  `json:"zkRequestsPerItem,omitempty"`
	// ZKLatency is ZooKeeper's own view of its requests in the window (mntr after srst): P50 holds the
	// average, Max the maximum, in ms from a request's arrival to its answer.
	ZKLatency *Latency `json:"zkServerLatency,omitempty"`
	// PeerCounters: how the peers' own counters (/metrics) changed over the window, summed over the peers.
	PeerCounters map[string]float64 `json:"peerCounters,omitempty"`
	RegisterMs   float64            `json:"registerMs,omitempty"`   // registering every job through the API
	ReadyMs      float64            `json:"readyMs,omitempty"`      // from the last registration until every peer schedules every job
	FirstFiresMs float64            `json:"firstFiresMs,omitempty"` // from then until every job had fired (and been sharded) once
	// SetupCounters: the peers' counters from their start until the window's start (registration, first fires,
	// warm-up), summed over the peers: fires skipped while the jobs were being sharded show here.
	SetupCounters map[string]float64 `json:"setupCounters,omitempty"`
	// ZKStart, ZKReady, ZKEnd: what ZooKeeper held with the peers up and no job, when every peer scheduled
	// every job, and at the window's end.
	ZKStart  *ZKState        `json:"zkStart,omitempty"`
	ZKReady  *ZKState        `json:"zkReady,omitempty"`
	ZKEnd    *ZKState        `json:"zkEnd,omitempty"`
	Failover *FailoverResult `json:"failover,omitempty"`
	Reshard  *ReshardResult  `json:"reshard,omitempty"`
	Async    *AsyncResult    `json:"async,omitempty"`
	Backfill *BackfillResult `json:"backfill,omitempty"`
	Restart  *RestartResult  `json:"restart,omitempty"`
	Notes    []string        `json:"notes,omitempty"`
	// PeerLog holds the first ERROR and WARN lines of each peer's log, "peer N: line".
	PeerLog []string `json:"peerLog,omitempty"`
}

// FailoverResult: one of 3 peers is killed with -9 while its items are in flight.
type FailoverResult struct {
	SessionTimeoutMs float64 `json:"sessionTimeoutMs"`
	Orphans          int     `json:"orphans"`       // the victim's items in flight when it died
	RePosted         int     `json:"rePosted"`      // of them, re-POSTed as FAILOVER
	LastRePostMs     float64 `json:"lastRePostMs"`  // from the kill to the last orphan's re-POST
	FirstRePostMs    float64 `json:"firstRePostMs"` // from the kill to the first
	WrongRePosts     int     `json:"wrongRePosts"`  // FAILOVER deliveries of items that were not orphaned, or twice
	NextFire         int     `json:"nextFireItems"` // items of the next fire delivered (of jobs x items)
}

// ReshardResult: a 4th peer joins.
type ReshardResult struct {
	JoinMs       float64 `json:"joinMs"`       // from starting the process until its API is ready
	FirstFireMs  float64 `json:"firstFireMs"`  // from ready until its first delivery
	AllMovedMs   float64 `json:"allMovedMs"`   // from ready until every job it took over had fired from it
	MovedJobs    int     `json:"movedJobs"`    // jobs it fired
	ExpectedJobs int     `json:"expectedJobs"` // jobs ROUND_ROBIN would give it (about jobs / 4)
}

func (w workload) result(run string) Result {
	return Result{Workload: w.name, Run: run, Peers: w.peers, Jobs: w.sched.jobs, ItemsPerJob: w.sched.items,
		Period: w.sched.period.String(), Window: w.duration.String(), LoadAvg: loadAvg()}
}

// fill copies an analysis into the result.
func (r *Result) fill(a analysis, window time.Duration) {
	r.Expected, r.Received, r.Duplicates, r.Missed = a.Expected, a.Received, a.Duplicates, a.Missed
	r.Unexpected, r.Other, r.Lateness, r.FireSpan = a.Unexpected, a.Other, a.Lateness, a.FireSpan
	r.Minutes, r.OtherBy, r.MissedFires = a.Minutes, a.OtherBySource, a.MissedFires
	if len(a.Minutes) > 0 {
		r.FirstMinute, r.LastMinute = a.Minutes[0], a.Minutes[len(a.Minutes)-1]
	}
	r.RequestsPS = round1(float64(a.Arrivals) / window.Seconds())
	if a.Arrivals > 0 { // ZKPackets is measured before (zero for a baseline)
		r.ZKPerItem = float64(int64(float64(r.ZKPackets)/float64(a.Arrivals)*100+0.5)) / 100
	}
}

// prepare starts a cluster, registers the workload's jobs and waits until every peer schedules them.
func (e *env) prepare(w workload, rec *recorder, r *Result) (*benchCluster, error) {
	c, err := e.startCluster(w.name, w.peers)
	if err != nil {
		return nil, err
	}
	if cp := rec.async.Load(); cp != nil {
		cp.setPeers(c.urls())
	}
	if st, err := zkState(c.zk.Addr, c.zkPID); err == nil {
		r.ZKStart = &st
	}
	took, err := c.register(w, rec.URL)
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("register jobs: %w", err)
	}
	r.RegisterMs = float64(took.Milliseconds())
	e.logf("registered %d jobs through the API in %s (%.0f jobs/s)", w.sched.jobs, took.Round(time.Millisecond), float64(w.sched.jobs)/took.Seconds())
	t := time.Now()
	if err := c.waitScheduled(w.sched.jobs, 10*time.Minute); err != nil {
		c.stop()
		return nil, err
	}
	r.ReadyMs = float64(time.Since(t).Milliseconds())
	if st, err := zkState(c.zk.Addr, c.zkPID); err == nil {
		r.ZKReady = &st
	}
	e.logf("every peer schedules every job %s later", time.Since(t).Round(time.Millisecond))
	return c, nil
}

// settle waits until every job has fired once (its first fire also shards it, which for thousands of jobs
// at once is a burst of its own) and records how long that took; the window starts a warm-up after that.
func (e *env) settle(w workload, rec *recorder, r *Result) {
	start := time.Now()
	deadline := start.Add(5*time.Minute + 2*w.sched.period)
	seen := map[string]bool{}
	n := 0
	for len(seen) < w.sched.jobs && time.Now().Before(deadline) {
		recs := rec.since(n)
		for _, x := range recs {
			if x.src == srcNormal {
				seen[x.job()] = true
			}
		}
		n += len(recs)
		time.Sleep(200 * time.Millisecond)
	}
	r.FirstFiresMs = float64(time.Since(start).Milliseconds())
	if len(seen) < w.sched.jobs {
		r.Notes = append(r.Notes, fmt.Sprintf("only %d of %d jobs had fired %s after they were scheduled", len(seen), w.sched.jobs, time.Since(start).Round(time.Second)))
	}
	e.logf("every job has fired once %s after every peer scheduled them", time.Since(start).Round(time.Millisecond))
}

func (e *env) warmup(w workload) time.Duration {
	if e.o.warmup > 0 {
		return e.o.warmup
	}
	if w.kind == "async" {
		// settle has seen a whole period of fires; the completions of the last ones come this much later
		return e.o.callbackMax + 5*time.Second
	}
	return w.sched.period + 5*time.Second
}

// measure is what is read at the start and at the end of a window.
type measure struct {
	u, zu    *usage
	packets  int64
	zkAddr   string
	zkPID    int
	c        *benchCluster
	counters []counterSample // each peer's, at the window's start
	// pgPID is the shared history's postmaster (-history postgres), pgCPU its processes' CPU time at pgAt
	pgPID int
	pgCPU time.Duration
	pgAt  time.Time
}

func startMeasure(c *benchCluster) *measure {
	m := &measure{u: startUsageOf(c.pids), zkAddr: c.zk.Addr, zkPID: c.zkPID, c: c, counters: c.peerCounters()}
	if c.zkPID > 0 {
		m.zu = startUsage([]int{c.zkPID})
	}
	if c.e.pg != nil {
		if pid := c.e.pg.PID(); pid > 0 {
			if cpu, err := harness.TreeCPUTime(pid); err == nil { // else no figure rather than a wrong one
				m.pgPID, m.pgCPU, m.pgAt = pid, cpu, time.Now()
			}
		}
	}
	_, _ = zktest.FourLetter(c.zk.Addr, "srst") // ZooKeeper's latency figures cover the window only
	m.packets, _ = zkCounter(c.zk.Addr, "zk_packets_received")
	return m
}

func (m *measure) end(r *Result) {
	r.Usage = m.u.end()
	if m.pgPID > 0 {
		if cpu, err := harness.TreeCPUTime(m.pgPID); err == nil {
			pct := round1(100 * float64(cpu-m.pgCPU) / float64(time.Since(m.pgAt)))
			r.HistoryCPU = &pct
		}
	}
	if m.zu != nil {
		zu := m.zu.end()
		r.ZKUsage = &zu
	}
	if p, err := zkCounter(m.zkAddr, "zk_packets_received"); err == nil {
		r.ZKPackets = p - m.packets
	}
	avg, _ := zkFloat(m.zkAddr, "zk_avg_latency")
	mx, _ := zkFloat(m.zkAddr, "zk_max_latency")
	r.ZKLatency = &Latency{P50: avg, Max: mx}
	r.PeerCounters = m.c.windowCounters(m.counters)
	r.SetupCounters = nonZero(sumSamples(m.counters))
	if st, err := zkState(m.zkAddr, m.zkPID); err == nil {
		r.ZKEnd = &st
	}
}

// sleepUntil sleeps until t, logging progress every 30 s.
func (e *env) sleepUntil(t time.Time, rec *recorder, what string) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		if d > 30*time.Second {
			time.Sleep(30 * time.Second)
			e.logf("%s: %d requests received so far, %s to go (load average %s)", what, rec.count(), time.Until(t).Round(time.Second), loadAvg())
			continue
		}
		time.Sleep(d)
	}
}

// window waits until every job has fired (settle) and a warm-up has passed, and returns the measured window
// that starts then.
func (e *env) window(w workload, rec *recorder, r *Result) (from, to time.Time) {
	e.settle(w, rec, r)
	from = ceilSecond(time.Now().Add(e.warmup(w)))
	to = from.Add(w.duration)
	e.logf("window %s - %s", from.Format(time.TimeOnly), to.Format(time.TimeOnly))
	e.sleepUntil(from, rec, "warm-up")
	return from, to
}

// runPeriodic runs a steady workload: a window of fires on a cluster that has fired every job at least once.
func (e *env) runPeriodic(w workload, rec *recorder) (Result, error) {
	r := w.result("ejserver")
	c, err := e.prepare(w, rec, &r)
	if err != nil {
		return r, err
	}
	defer c.stop()
	from, to := e.window(w, rec, &r)
	// a heap profile at the window's start too: its alloc_space and alloc_objects are the base the end's are
	// read against (go tool pprof -diff_base), so the allocations of the window alone divide by its items
	c.heapProfiles(w.name + "-start")
	m := startMeasure(c)
	prof := c.profile(w.name, from.Add(e.o.profileAt), min(w.duration-e.o.profileAt, 30*time.Second))
	var restarted <-chan *RestartResult
	if e.o.restartAt > 0 {
		restarted = e.restartPeer(c, from.Add(e.o.restartAt), w.sched.jobs)
	}
	e.sleepUntil(to, rec, w.name)
	if restarted != nil {
		r.Restart = <-restarted
		r.Notes = append(r.Notes, "a peer was restarted in the window: its CPU and counters are both processes' (the new one's from its start), its RSS the higher of the two")
	}
	m.end(&r)
	c.heapProfiles(w.name)
	time.Sleep(e.o.grace)
	<-prof
	a := analyze(rec.records(), w.sched, from, to)
	r.fill(a, w.duration)
	c.notes(&r)
	e.writeRecords(&r, rec)
	return r, nil
}

// notes adds the peers' logged errors and warnings, if any.
func (c *benchCluster) notes(r *Result) {
	for i, p := range c.peers {
		pr := readProblems(p.LogPath)
		if pr.errors+pr.warnings == 0 {
			continue
		}
		r.Notes = append(r.Notes, fmt.Sprintf("peer %d logged %d errors and %d warnings", i+1, pr.errors, pr.warnings))
		for _, line := range pr.first {
			if len(line) > 400 {
				line = line[:400] + "..."
			}
			r.PeerLog = append(r.PeerLog, fmt.Sprintf("peer %d: %s", i+1, line))
		}
	}
}

// runBaseline fires the workload's schedule from `ejbench loop` against the same receiver.
func (e *env) runBaseline(w workload, rec *recorder) (Result, error) {
	r := w.result("baseline")
	r.Peers = 0
	window := w.duration
	if w.kind == "failover" {
		window = w.sched.period // one fire of the same burst
	}
	// one period of warm-up fires before the window (not counted), as ejserver's window follows a warm-up
	from := ceilSecond(time.Now().Add(1500 * time.Millisecond).Add(w.sched.period))
	to := from.Add(window)
	r.Window = window.String()
	conc := 256 * max(1, w.peers) // ejserver's default --max-concurrent-requests on each peer
	cmd := exec.Command(e.self, loopArgs(loopConfig{url: rec.URL, prefix: w.sched.prefix, jobs: w.sched.jobs,
		items: w.sched.items, period: w.sched.period, spread: w.sched.spread, start: from.Add(-w.sched.period),
		duration: window + w.sched.period, conc: conc})...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	if w.kind == "failover" {
		rec.delayNormal.Store(int64(25 * time.Second))
		defer rec.delayNormal.Store(0)
	}
	time.Sleep(time.Until(from))
	u := startUsage([]int{cmd.Process.Pid})
	e.sleepUntil(to, rec, "baseline")
	r.Usage = u.end() // before the loop is reaped: a zombie's /proc/{pid}/stat still holds its CPU time
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(e.o.grace)
	select {
	case err := <-done:
		if err != nil {
			return r, fmt.Errorf("ejbench loop: %w", err)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		r.Notes = append(r.Notes, "the loop did not finish within 60 s of the window's end")
	}
	a := analyze(rec.records(), w.sched, from, to)
	r.fill(a, window)
	e.writeRecords(&r, rec)
	return r, nil
}

// runFailover kills one of 3 peers while every item of a fire is in flight (the receiver holds NORMAL_TRIGGER
// requests for 25 s) and measures until every orphaned item is re-POSTed by a survivor.
func (e *env) runFailover(w workload, rec *recorder) (Result, error) {
	r := w.result("ejserver")
	rec.delayNormal.Store(int64(25 * time.Second))
	defer rec.delayNormal.Store(0)
	c, err := e.prepare(w, rec, &r)
	if err != nil {
		return r, err
	}
	defer c.stop()
	p := w.sched.period
	fire := time.Now().Add(5 * time.Second).Truncate(p).Add(p)
	e.logf("fire at %s; the victim is killed once every item has arrived", fire.Format(time.TimeOnly))
	e.sleepUntil(fire, rec, "warm-up")
	m := startMeasure(c)
	total := w.sched.jobs * w.sched.items
	count := func(at time.Time) int {
		n := 0
		for _, x := range rec.records() {
			if x.src == srcNormal && x.scheduled == at.UnixNano() {
				n++
			}
		}
		return n
	}
	for time.Since(fire) < 20*time.Second && count(fire) < total {
		time.Sleep(20 * time.Millisecond)
	}
	victim := c.peers[len(c.peers)-1]
	vid := victim.InstanceID()
	killAt := time.Now()
	victim.Kill()
	e.logf("killed peer %d (%s) %s after the fire; %d of %d items had arrived", len(c.peers), vid, killAt.Sub(fire).Round(time.Millisecond), count(fire), total)
	orphans := map[fireKey]bool{}
	for _, x := range rec.records() {
		if x.src == srcNormal && x.scheduled == fire.UnixNano() && x.instance() == vid {
			orphans[x.key()] = false
		}
	}
	fr := &FailoverResult{SessionTimeoutMs: float64(e.o.sessionTimeout.Milliseconds()), Orphans: len(orphans)}
	r.Failover = fr
	deadline := killAt.Add(e.o.sessionTimeout + 30*time.Second)
	for time.Now().Before(deadline) {
		if fr.RePosted = e.rePosts(rec, orphans, killAt, fr); fr.RePosted == len(orphans) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.logf("%d of %d orphaned items re-POSTed, the last %.0f ms after the kill", fr.RePosted, fr.Orphans, fr.LastRePostMs)
	// the next fire runs on the two survivors
	next := fire.Add(p)
	e.sleepUntil(next.Add(5*time.Second), rec, "next fire")
	m.end(&r)
	r.Usage = r.Usage.first(len(c.peers) - 1)
	fr.NextFire = count(next)
	a := analyze(rec.records(), w.sched, fire, next.Add(time.Second))
	r.fill(a, next.Add(5*time.Second).Sub(fire))
	r.Window = next.Add(5 * time.Second).Sub(fire).String()
	c.notes(&r)
	e.writeRecords(&r, rec)
	return r, nil
}

// rePosts marks the orphans re-POSTed as FAILOVER and fills the timings; it returns how many were.
func (e *env) rePosts(rec *recorder, orphans map[fireKey]bool, killAt time.Time, fr *FailoverResult) int {
	seen := map[fireKey]int{}
	var first, last int64
	fr.WrongRePosts = 0
	for _, x := range rec.records() {
		if x.src != srcFailover {
			continue
		}
		k := x.key()
		seen[k]++
		if _, ok := orphans[k]; !ok || seen[k] > 1 {
			fr.WrongRePosts++
			continue
		}
		d := x.arrived - killAt.UnixNano()
		if first == 0 || d < first {
			first = d
		}
		last = max(last, d)
	}
	n := 0
	for k := range orphans {
		if seen[k] > 0 {
			n++
		}
	}
	fr.FirstRePostMs, fr.LastRePostMs = ms(first), ms(last)
	return n
}

// runReshard lets a 4th peer join 3 peers that carry the workload, 20 s into the window, and measures until
// fires use it, and whether any fire was missed or doubled across the change.
func (e *env) runReshard(w workload, rec *recorder) (Result, error) {
	r := w.result("ejserver")
	c, err := e.prepare(w, rec, &r)
	if err != nil {
		return r, err
	}
	defer c.stop()
	from, to := e.window(w, rec, &r)
	m := startMeasure(c)
	e.sleepUntil(from.Add(20*time.Second), rec, "before the join")
	t0 := time.Now()
	np, err := c.addPeer()
	if err != nil {
		return r, err
	}
	ready := time.Now()
	rr := &ReshardResult{JoinMs: float64(ready.Sub(t0).Milliseconds())}
	r.Reshard = rr
	nid := np.InstanceID()
	u4 := startUsage([]int{np.PID()}) // from its readiness on (its start-up, loading every job, is not in it)
	e.logf("peer 4 (%s) ready after %s", nid, ready.Sub(t0).Round(time.Millisecond))
	e.sleepUntil(to, rec, w.name)
	m.end(&r)
	x := u4.end()
	r.Usage = r.Usage.plus(x)
	r.Peers = len(c.peers)
	time.Sleep(e.o.grace)
	recs := rec.records()
	firstBy := map[string]int64{} // job -> first NORMAL delivery from the new peer
	var first int64
	for _, x := range recs {
		if x.src != srcNormal || x.instance() != nid {
			continue
		}
		if t, ok := firstBy[x.job()]; !ok || x.arrived < t {
			firstBy[x.job()] = x.arrived
		}
		if first == 0 || x.arrived < first {
			first = x.arrived
		}
	}
	rr.MovedJobs = len(firstBy)
	rr.ExpectedJobs = expectedShare(w, c)
	if first > 0 {
		rr.FirstFireMs = ms(first - ready.UnixNano())
		rr.AllMovedMs = ms(slices.Max(mapValues(firstBy)) - ready.UnixNano())
	}
	a := analyze(recs, w.sched, from, to)
	r.fill(a, w.duration)
	e.logf("the new peer fired %d jobs (ROUND_ROBIN gives it %d); first %.0f ms after it was ready, all %.0f ms", rr.MovedJobs, rr.ExpectedJobs, rr.FirstFireMs, rr.AllMovedMs)
	c.notes(&r)
	e.writeRecords(&r, rec)
	return r, nil
}

func mapValues(m map[string]int64) []int64 {
	out := make([]int64, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// expectedShare is the number of jobs ROUND_ROBIN gives the newest peer once every peer is in.
func expectedShare(w workload, c *benchCluster) int {
	var ins []sharding.Instance
	for _, p := range c.peers {
		ins = append(ins, sharding.Instance{ID: p.InstanceID(), ServerIP: p.Config.ServerIP})
	}
	sharding.Sort(ins)
	newest := c.peers[len(c.peers)-1].InstanceID()
	n := 0
	for k := range w.sched.jobs {
		if len(sharding.RoundRobin(ins, w.sched.jobName(k), w.sched.items)[newest]) > 0 {
			n++
		}
	}
	return n
}

// writeRecords writes the run's deliveries to -records DIR as workload-run.csv, if asked; a failure is a note.
func (e *env) writeRecords(r *Result, rec *recorder) {
	if e.o.records == "" {
		return
	}
	path := filepath.Join(e.o.records, r.Workload+"-"+r.Run+".csv")
	err := os.MkdirAll(e.o.records, 0o755)
	if err == nil {
		err = writeCSV(path, rec.records())
	}
	if err != nil {
		r.Notes = append(r.Notes, "records not written: "+err.Error())
		return
	}
	e.logf("deliveries written to %s", path)
}
