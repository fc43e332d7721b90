package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history"
)

// chartPeers are the two peers the seeded history says ran the items (besides the real one, which ran none).
var chartPeers = [2]string{"10.0.0.1@-@101", "10.0.0.2@-@102"}

// seedCharts returns 200 executions of job over the last day: 50 fires of 4 items, fire k scheduled
// (49-k)*25 min + 2 min before now (whole seconds), item i of it (k*4+i+1)*10 ms long and (k%5)*100 + i*5 ms
// late; items 0-1 on the first peer, 2-3 on the second. Fires k%10 == 3 have item 0 failed, k%10 == 5 are
// misfires, k%10 == 7 have item 2 failed over to the first peer, fire 49 is a manual trigger.
func seedCharts(job string, now time.Time) []ejserver.Execution {
	var out []ejserver.Execution
	for k := range 50 {
		sched := now.Add(-time.Duration(49-k)*25*time.Minute - 2*time.Minute).Truncate(time.Second)
		for i := range 4 {
			start := sched.Add(time.Duration((k%5)*100+i*5) * time.Millisecond)
			dur := time.Duration((k*4+i+1)*10) * time.Millisecond
			e := ejserver.Execution{ID: ejserver.NewExecutionID(), JobName: job, ShardingItem: i, ShardingTotalCount: 4,
				Source: ejserver.SourceNormal, InstanceID: chartPeers[i/2], IP: strings.Split(chartPeers[i/2], "@")[0],
				Hostname: fmt.Sprintf("peer-%d", i/2+1), ScheduledAt: sched, StartedAt: start, CompletedAt: start.Add(dur),
				Success: true, StatusCode: 200, Attempts: 1, DurationMs: dur.Milliseconds()}
			switch {
			case k%10 == 3 && i == 0:
				e.Success, e.StatusCode, e.Attempts, e.FailureCause = false, 500, 3, "HTTP 500"
			case k%10 == 5:
				e.Source = ejserver.SourceMisfire
			case k%10 == 7 && i == 2:
				e.Source, e.InstanceID, e.IP, e.Hostname = ejserver.SourceFailover, chartPeers[0], "10.0.0.1", "peer-1"
			case k == 49:
				e.Source = ejserver.SourceManual
			}
			e.TaskID = ejserver.TaskID(job, []int{i}, e.Source == ejserver.SourceFailover, e.InstanceID)
			out = append(out, e)
		}
	}
	return out
}

// chartPoint is one point of a chart as (x, y, series): what the test reads back from a uPlot instance.
type chartPoint struct {
	X      float64
	Y      float64
	Series int
}

// chartPoints reads the uPlot instance of the element sel: every non-null value of every series, with its x.
func chartPoints(b *browser, sel string) []chartPoint {
	b.t.Helper()
	raw := eval[string](b, `JSON.stringify(document.querySelector(`+js(sel)+`).uplot.data)`)
	var data [][]*float64
	if err := json.Unmarshal([]byte(raw), &data); err != nil {
		b.t.Fatalf("%s: %v", sel, err)
	}
	var out []chartPoint
	for s := 1; s < len(data); s++ {
		for i, v := range data[s] {
			if v != nil {
				out = append(out, chartPoint{X: *data[0][i], Y: *v, Series: s})
			}
		}
	}
	sortPoints(out)
	return out
}

func sortPoints(ps []chartPoint) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.X != b.X {
			return a.X < b.X
		}
		if a.Series != b.Series {
			return a.Series < b.Series
		}
		return a.Y < b.Y
	})
}

// chartOutcomes are the job charts' series, in order (charts.js OUTCOMES).
var chartOutcomes = []string{"success", "failure", "misfire", "failover", "manual", "backfill", "running"}

func outcomeSeries(e ejserver.Execution) int {
	p := history.Point{Done: e.Done(), Success: e.Success, Source: e.Source}
	return slices.Index(chartOutcomes, p.Outcome()) + 1
}

func secsOf(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// nearestRank is the p-th percentile (nearest rank) of vs.
func nearestRank(vs []float64, p int) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[(p*len(s)+99)/100-1]
}

// TestConsoleCharts seeds a known history (200 executions over a day, straight into the PostgreSQL store the
// peer reads), opens the job page, a fire, the overview and the servers page, and checks that each chart
// holds exactly the seeded points, read back from the charts' uPlot instances.
func TestConsoleCharts(t *testing.T) {
	t.Parallel()
	_, dsn := newPostgres(t, "ejcharts")
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--history-dsn", dsn))
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", job("settle", "@yearly", 4, recv.URL), 201, nil)
	// the load ahead: two jobs of 10 items on one second half an hour from now (never during the test)
	herdAt := time.Now().UTC().Add(30 * time.Minute).Truncate(time.Minute)
	for _, name := range []string{"herd-a", "herd-b"} {
		mustDo(t, p, "POST", "/api/v1/jobs", job(name, fmt.Sprintf("0 %d %d * * ?", herdAt.Minute(), herdAt.Hour()), 10, recv.URL), 201, nil)
	}

	// bad windows and buckets are field errors
	for _, bad := range []struct{ path, field string }{
		{"/api/v1/jobs/settle/stats?bucket=10ms", "bucket"},
		{"/api/v1/jobs/settle/stats?window=7d&bucket=10s", "bucket"},
		{"/api/v1/jobs/settle/stats?window=40d&bucket=1h", "window"},
		{"/api/v1/jobs/settle/points?window=soon", "window"},
		{"/api/v1/stats?window=1h&bucket=0s", "bucket"},
		{"/api/v1/schedule/load?horizon=25h", "horizon"},
	} {
		var problem struct {
			Errors []struct{ Field string } `json:"errors"`
		}
		mustDo(t, p, "GET", bad.path, nil, 400, &problem)
		if len(problem.Errors) != 1 || problem.Errors[0].Field != bad.field {
			t.Errorf("%s: %+v, want a field error on %s", bad.path, problem, bad.field)
		}
	}

	now := time.Now()
	seeded := seedCharts("settle", now)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := history.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.WriteExecutions(ctx, seeded); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, p.URL("/"))
	b.do("open the job", 20*time.Second, chromedp.Navigate(p.URL("/#/jobs/settle")))
	b.waitText("main h1", "settle", 10*time.Second)
	b.waitFor("the charts", `!!document.querySelector("#chart-lateness") && !!document.querySelector("#chart-lateness").uplot`, 15*time.Second)

	// duration per item: 200 points at their start times, in their outcome's series
	var want []chartPoint
	for _, e := range seeded {
		want = append(want, chartPoint{X: secsOf(e.StartedAt), Y: float64(e.DurationMs), Series: outcomeSeries(e)})
	}
	sortPoints(want)
	if got := chartPoints(b, "#chart-duration"); !slices.Equal(got, want) {
		t.Errorf("duration chart: %d points, want %d\n got %v\nwant %v", len(got), len(want), head(got), head(want))
	}
	// lateness per fire: 50 points, each its first item's lateness, in the fire's worst outcome's series
	want = nil
	for k := range 50 {
		items := seeded[k*4 : k*4+4]
		o := "success"
		switch {
		case k%10 == 3:
			o = "failure"
		case k%10 == 7:
			o = "failover"
		case k%10 == 5:
			o = "misfire"
		case k == 49:
			o = "manual"
		}
		want = append(want, chartPoint{X: secsOf(items[0].ScheduledAt), Y: float64((k % 5) * 100), Series: slices.Index(chartOutcomes, o) + 1})
	}
	sortPoints(want)
	if got := chartPoints(b, "#chart-lateness"); !slices.Equal(got, want) {
		t.Errorf("lateness chart: %d points, want %d\n got %v\nwant %v", len(got), len(want), head(got), head(want))
	}
	// the window's figures: 195 of 200 succeeded; durations 10..2000 ms; lateness 0..415 ms
	var durs, lates []float64
	for _, e := range seeded {
		durs = append(durs, float64(e.DurationMs))
		lates = append(lates, float64(e.StartedAt.Sub(e.ScheduledAt).Milliseconds()))
	}
	summary := eval[string](b, `document.querySelector("#charts-summary").innerText`)
	for _, s := range []string{"97.5 %", fmt.Sprintf("%.1f s", nearestRank(durs, 50)/1000), fmt.Sprintf("%.1f s", nearestRank(durs, 99)/1000),
		fmt.Sprintf("%.0f ms", nearestRank(lates, 50)), fmt.Sprintf("%.0f ms", nearestRank(lates, 99))} {
		if !strings.Contains(summary, s) {
			t.Errorf("the summary %q lacks %q", summary, s)
		}
	}
	b.waitText("#charts-note", "whole cluster", 5*time.Second)
	b.screenshot("job-charts.png", true)

	// clicking the failed fire 43 opens it: 4 items on a timeline, one bar each
	fire := seeded[43*4]
	xy := eval[[]float64](b, fmt.Sprintf(`(() => { const u = document.querySelector("#chart-lateness").uplot; u.over.scrollIntoView({block: "center"});
		const r = u.over.getBoundingClientRect();
		return [r.left + u.valToPos(%v, "x"), r.top + u.valToPos(%v, "y")]; })()`, secsOf(fire.ScheduledAt), 300))
	b.do("click the fire", 10*time.Second, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, xy[0], xy[1]), chromedp.MouseClickXY(xy[0], xy[1]))
	b.waitText("main h1", "Fire of settle", 10*time.Second)
	if h := eval[string](b, `decodeURIComponent(location.hash)`); !strings.Contains(h, fire.ScheduledAt.UTC().Format("2006-01-02T15:04:05")) {
		t.Errorf("the click opened %s, not the fire at %s", h, fire.ScheduledAt.UTC())
	}
	b.waitFor("the timeline", `!!document.querySelector("#chart-timeline").uplot`, 10*time.Second)
	var bars []chartPoint // (start, row) and (end, row) of each item: series 1 the rows, series 2 the ends
	raw := eval[string](b, `JSON.stringify(document.querySelector("#chart-timeline").uplot.data)`)
	var tl [][]float64
	if err := json.Unmarshal([]byte(raw), &tl); err != nil || len(tl) != 3 || len(tl[0]) != 4 {
		t.Fatalf("timeline data %s (%v)", raw, err)
	}
	for i := range 4 {
		e := seeded[43*4+i]
		bars = append(bars, chartPoint{X: tl[0][i], Y: tl[2][i], Series: int(tl[1][i])})
		if tl[0][i] != secsOf(e.StartedAt) || tl[2][i] != secsOf(e.CompletedAt) || int(tl[1][i]) != i {
			t.Errorf("timeline row %d: %v, want item %d from %v to %v", i, bars[i], i, secsOf(e.StartedAt), secsOf(e.CompletedAt))
		}
	}
	if n := b.count("#fire-table tbody tr"); n != 4 {
		t.Errorf("the fire's table has %d rows", n)
	}
	b.screenshot("fire-timeline.png", false)

	// the overview: fires and failed items per minute; the load ahead's herd
	b.route("#/overview", "Overview")
	b.waitFor("the overview charts", `["#chart-hour", "#chart-day", "#chart-load"].every((s) => !!document.querySelector(s).uplot)`, 15*time.Second)
	sum := func(sel string, series int) float64 {
		return eval[float64](b, fmt.Sprintf(`document.querySelector(%s).uplot.data[%d].reduce((a, v) => a + (v || 0), 0)`, js(sel), series))
	}
	if f, x := sum("#chart-hour", 1), sum("#chart-hour", 2); f != 3 || x != 0 {
		t.Errorf("last hour: %v fires, %v failed items; want 3 and 0", f, x)
	}
	if f, x := sum("#chart-day", 1), sum("#chart-day", 2); f != 50 || x != 5 {
		t.Errorf("last day: %v fires, %v failed items; want 50 and 5", f, x)
	}
	load := eval[[]float64](b, `(() => { const d = document.querySelector("#chart-load").uplot.data;
		return d[1].flatMap((v, i) => (v ? [d[0][i], v] : [])).concat([d[1].length]); })()`)
	if len(load) != 3 || load[0] != float64(herdAt.Unix()) || load[1] != 20 || load[2] != 3600 {
		t.Errorf("load ahead: %v, want 20 items at %v over 3600 s", load, herdAt.Unix())
	}
	b.screenshot("overview.png", true)

	// the servers page: items executed and lateness per peer in the last hour (fires 47-49)
	b.route("#/servers", "Servers and instances")
	b.waitFor("the peer charts", `!!document.querySelector("#chart-peer-items").uplot && !!document.querySelector("#chart-peer-lateness").uplot`, 15*time.Second)
	names := eval[[]string](b, `Array.from(document.querySelectorAll("#peers-table tbody tr")).map((tr) => tr.dataset.key)`)
	executed := map[string]float64{}
	lateBy := map[string][]float64{}
	for _, e := range seeded[47*4:] {
		executed[e.InstanceID]++
		lateBy[e.InstanceID] = append(lateBy[e.InstanceID], float64(e.StartedAt.Sub(e.ScheduledAt).Milliseconds()))
	}
	items := eval[[][]*float64](b, `document.querySelector("#chart-peer-items").uplot.data`)
	lateData := eval[[][]*float64](b, `document.querySelector("#chart-peer-lateness").uplot.data`)
	for i, id := range names {
		got := func(d [][]*float64, s int) float64 {
			if d[s][i] == nil {
				return math.NaN()
			}
			return *d[s][i]
		}
		wantP50, wantP99 := math.NaN(), math.NaN()
		if ls := lateBy[id]; len(ls) > 0 {
			wantP50, wantP99 = nearestRank(ls, 50), nearestRank(ls, 99)
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if got(items, 2) != executed[id] || !same(got(lateData, 1), wantP99) || !same(got(lateData, 2), wantP50) {
			t.Errorf("peer %s: executed %v, lateness p99 %v p50 %v; want %v, %v, %v", id, got(items, 2), got(lateData, 1), got(lateData, 2),
				executed[id], wantP99, wantP50)
		}
	}
	if !slices.Contains(names, chartPeers[0]) || !slices.Contains(names, chartPeers[1]) || !slices.Contains(names, p.InstanceID()) {
		t.Errorf("peers %v", names)
	}
	b.screenshot("servers-charts.png", true)
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
}

func head(ps []chartPoint) []chartPoint { return ps[:min(len(ps), 6)] }

// BenchmarkConsoleJobPage10k opens a job page whose 24-hour window holds 10,000 executions (2,500 fires of 4
// items, in PostgreSQL) in headless Chromium, b.N times, and reports what the page measured itself: from
// asking the API for the stats and points to both charts drawn (render-ms), and the drawing alone (draw-ms).
//
//	go test ./integration -run '^$' -bench BenchmarkConsoleJobPage10k -benchtime 5x
func BenchmarkConsoleJobPage10k(b *testing.B) {
	_, dsn := newPostgres(b, "ejbench")
	c := newCluster(b, 1, withArgs("--history-dsn", dsn))
	p := c.peers[0]
	mustDo(b, p, "POST", "/api/v1/jobs", job("big", "@yearly", 4, "http://127.0.0.1:9/hook"), 201, nil)
	now := time.Now()
	var seeded []ejserver.Execution
	for k := range 2500 {
		seeded = append(seeded, seedCharts("big", now.Add(-time.Duration(k)*30*time.Second))[192:196]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := history.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(seeded); i += 1000 {
		if err := store.WriteExecutions(ctx, seeded[i:min(i+1000, len(seeded))]); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	br := newBrowser(b, p.URL("/"))
	br.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/#/jobs")))
	br.waitText("main h1", "Jobs", 10*time.Second)
	var render, draw float64
	for b.Loop() {
		eval[chromedp.Void](br, `location.hash = "#/jobs"`)
		br.waitText("main h1", "Jobs", 10*time.Second)
		eval[chromedp.Void](br, `location.hash = "#/jobs/big"`)
		br.waitFor("the charts", `(() => { const el = document.querySelector("#job-charts"); return !!el && !!el.dataset.renderMs; })()`, 30*time.Second)
		if n := eval[string](br, `document.querySelector("#job-charts").dataset.points`); n != "10000" {
			b.Fatalf("%s points drawn", n)
		}
		render += eval[float64](br, `Number(document.querySelector("#job-charts").dataset.renderMs)`)
		draw += eval[float64](br, `Number(document.querySelector("#job-charts").dataset.drawMs)`)
	}
	b.ReportMetric(render/float64(b.N), "render-ms")
	b.ReportMetric(draw/float64(b.N), "draw-ms")
}
