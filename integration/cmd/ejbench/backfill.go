package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The backfill-10k workload (issue 24): steady-10k's jobs, plus one 10-item job on a 10 s schedule of its own
// whose 10,000 past fires are backfilled. One window without the backfill, then one while it runs: the steady
// jobs' lateness in both (and the backfilled job's own scheduled fires'), and the backfill's throughput from
// its start to its end.

const (
	backfillJob   = "backfilled"
	backfillItems = 10
	backfillFires = 10000
)

// BackfillResult is the backfill's own figures.
type BackfillResult struct {
	Fires      int     `json:"fires"`
	Items      int     `json:"itemsPerFire"`
	State      string  `json:"state"`
	Done       int     `json:"done"`
	Seconds    float64 `json:"seconds"` // from the API's answer to the backfill's end (or the give-up)
	FiresPS    float64 `json:"firesPerSecond"`
	ItemsPS    float64 `json:"itemsPerSecond"`
	Delivered  int     `json:"delivered"`  // BACKFILL requests received
	Distinct   int     `json:"distinct"`   // distinct item fires among them
	ExtraIDs   int     `json:"extraIds"`   // item fires received under more than one webhook-id (must be 0)
	OwnBefore  Latency `json:"ownBefore"`  // the backfilled job's own scheduled fires, window without
	OwnDuring  Latency `json:"ownDuring"`  // and with the backfill
	SteadyP99  float64 `json:"steadyP99"`  // the steady jobs' lateness p99 without the backfill (ms)
	SteadyP99B float64 `json:"steadyP99B"` // and with it
	// LoadBefore, LoadDuring and LoadAfter are the host's load averages (1, 5, 15 min) at the end of each
	// window and at the backfill's end: the machine may be shared, and the two windows are comparable only
	// under the same load.
	LoadBefore string `json:"loadBefore"`
	LoadDuring string `json:"loadDuring"`
	LoadAfter  string `json:"loadAfter"`
}

// p99Change is the steady jobs' lateness p99 with the backfill relative to without it, in percent (the issue's
// target: at most +10%).
func (b *BackfillResult) p99Change() float64 {
	if b.SteadyP99 <= 0 {
		return 0
	}
	return round1((b.SteadyP99B/b.SteadyP99 - 1) * 100)
}

// runBackfill runs the steady jobs and the backfilled job, measures a window, starts the backfill, measures a
// second window of the same length, then waits for the backfill to end.
func (e *env) runBackfill(w workload, rec *recorder) ([]Result, error) {
	before := w.result("ejserver")
	c, err := e.prepare(w, rec, &before)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	own := map[string]any{"jobName": backfillJob, "cron": "0/10 * * * * ?", "shardingTotalCount": backfillItems,
		"jobShardingStrategyType": w.strategy, "webhook": map[string]any{"url": rec.URL}}
	if err := c.post(c.peers[0], "/api/v1/jobs", own); err != nil {
		return nil, fmt.Errorf("register the backfilled job: %w", err)
	}
	from, to := e.window(w, rec, &before)
	m := startMeasure(c)
	e.sleepUntil(to, rec, w.name+" without the backfill")
	m.end(&before)
	loadBefore := loadAvg()
	time.Sleep(e.o.grace)
	recs := rec.records()
	before.fill(analyze(steadyOnly(recs, w.sched.prefix), w.sched, from, to), w.duration)
	ownBefore := ownLateness(recs, from, to)

	// the backfill: the 10,000 fires of the 10 s schedule ending a minute ago
	end := time.Now().Add(-time.Minute).Truncate(10 * time.Second)
	start := end.Add(-(backfillFires - 1) * 10 * time.Second)
	started := time.Now()
	id, err := c.startBackfill(start, end)
	if err != nil {
		return []Result{before}, err
	}
	e.logf("backfill %s of %d fires x %d items started (%s - %s)", id, backfillFires, backfillItems,
		start.Format(time.DateTime), end.Format(time.DateTime))
	during := w.result("ejserver+backfill")
	from = ceilSecond(time.Now().Add(time.Second))
	to = from.Add(w.duration)
	e.sleepUntil(from, rec, "backfill start")
	m = startMeasure(c)
	e.sleepUntil(to, rec, w.name+" with the backfill")
	m.end(&during)
	loadDuring := loadAvg()
	time.Sleep(e.o.grace)
	recs = rec.records()
	during.fill(analyze(steadyOnly(recs, w.sched.prefix), w.sched, from, to), w.duration)
	br := &BackfillResult{Fires: backfillFires, Items: backfillItems, OwnBefore: ownBefore,
		OwnDuring: ownLateness(recs, from, to), SteadyP99: before.Lateness.P99, SteadyP99B: during.Lateness.P99,
		LoadBefore: loadBefore, LoadDuring: loadDuring}

	// the throughput: until the backfill ends (bounded: on a loaded machine the figure is then done/elapsed)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		st, done, err := c.backfillState(id)
		if err == nil {
			br.State, br.Done = st, done
		}
		if err == nil && st != "RUNNING" || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
		if int(time.Since(started).Seconds())%30 < 2 {
			e.logf("backfill: %d of %d fires done (load average %s)", br.Done, backfillFires, loadAvg())
		}
	}
	br.Seconds = round1(time.Since(started).Seconds())
	br.LoadAfter = loadAvg()
	br.FiresPS = round1(float64(br.Done) / br.Seconds)
	br.ItemsPS = round1(float64(br.Done*backfillItems) / br.Seconds)
	time.Sleep(e.o.grace)
	ids := map[fireKey]map[string]bool{}
	for _, x := range rec.records() {
		if x.job() != backfillJob || x.src != srcBackfill {
			continue
		}
		br.Delivered++
		k := x.key()
		if ids[k] == nil {
			ids[k] = map[string]bool{}
		}
		ids[k][x.execID()] = true
	}
	br.Distinct = len(ids)
	for _, s := range ids {
		br.ExtraIDs += len(s) - 1
	}
	during.Backfill = br
	c.notes(&during)
	e.writeRecords(&during, rec)
	return []Result{before, during}, nil
}

// steadyOnly keeps the steady jobs' records.
func steadyOnly(recs []record, prefix string) []record {
	out := make([]record, 0, len(recs))
	for _, r := range recs {
		if strings.HasPrefix(r.job(), prefix+"-") {
			out = append(out, r)
		}
	}
	return out
}

// ownLateness is the lateness of the backfilled job's own scheduled fires in [from, to).
func ownLateness(recs []record, from, to time.Time) Latency {
	var ls []int64
	for _, r := range recs {
		if r.job() == backfillJob && r.src == srcNormal && r.scheduled >= from.UnixNano() && r.scheduled < to.UnixNano() {
			ls = append(ls, r.arrived-r.scheduled)
		}
	}
	return latencyOf(ls)
}

func (c *benchCluster) startBackfill(from, to time.Time) (string, error) {
	b, _ := json.Marshal(map[string]any{"from": from.UTC().Format(time.RFC3339), "to": to.UTC().Format(time.RFC3339),
		"overlapPolicy": "BUFFER_ONE"})
	resp, err := c.client.Post(c.peers[0].URL("/api/v1/jobs/"+backfillJob+"/backfill"), "application/json", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("start the backfill: %d %s", resp.StatusCode, raw)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

func (c *benchCluster) backfillState(id string) (string, int, error) {
	resp, err := c.client.Get(c.peers[1].URL("/api/v1/jobs/" + backfillJob + "/backfill/" + id))
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	var out struct {
		State string `json:"state"`
		Done  int    `json:"done"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", 0, err
	}
	return out.State, out.Done, nil
}

// printBackfillTable prints the backfill workloads' own figures.
func printBackfillTable(w io.Writer, results []Result) {
	for _, r := range results {
		b := r.Backfill
		if b == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s: backfill of %d fires x %d items: %s, %d done in %.0f s (%.1f fires/s, %.0f items/s); %d BACKFILL requests, %d distinct item fires, %d under a second webhook-id\n",
			r.Workload, b.Fires, b.Items, b.State, b.Done, b.Seconds, b.FiresPS, b.ItemsPS, b.Delivered, b.Distinct, b.ExtraIDs)
		fmt.Fprintf(w, "  steady jobs' lateness p99: %.0f ms without, %.0f ms with the backfill (%+.1f%%; target at most +10%%); the backfilled job's own fires p99: %.0f ms without (n=%d), %.0f ms with (n=%d)\n",
			b.SteadyP99, b.SteadyP99B, b.p99Change(), b.OwnBefore.P99, b.OwnBefore.N, b.OwnDuring.P99, b.OwnDuring.N)
		fmt.Fprintf(w, "  load average: %s at the end of the window without, %s with the backfill, %s at its end\n",
			b.LoadBefore, b.LoadDuring, b.LoadAfter)
	}
}
