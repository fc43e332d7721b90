package metrics

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ejserver/ejserver"
)

// gather returns the registry's families by name.
func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labelsOf(mt *dto.Metric) map[string]string {
	l := make(map[string]string, len(mt.GetLabel()))
	for _, p := range mt.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// sample returns the value of the series of name with exactly labels (a histogram's sample count), and
// whether it exists.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
	for _, mt := range mf.GetMetric() {
		if !maps.Equal(labelsOf(mt), labels) {
			continue
		}
		switch {
		case mt.Counter != nil:
			return mt.GetCounter().GetValue(), true
		case mt.Gauge != nil:
			return mt.GetGauge().GetValue(), true
		case mt.Histogram != nil:
			return float64(mt.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// want fails unless the series of name with labels exists and has value v.
func want(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string, v float64) {
	t.Helper()
	got, ok := sample(t, fams, name, labels)
	if !ok {
		t.Errorf("%s%v: no such series", name, labels)
		return
	}
	if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

func l(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// observe feeds m the same events in both label modes.
func observe(m *Metrics) {
	m.Fired("a", ejserver.SourceNormal)
	m.Fired("a", ejserver.SourceNormal)
	m.Fired("b", ejserver.SourceManual)
	m.ItemDone("a", ejserver.SourceNormal, true, 12*time.Millisecond, 80*time.Millisecond)
	m.ItemDone("a", ejserver.SourceNormal, false, 3*time.Millisecond, 2*time.Second)
	m.ItemDone("b", ejserver.SourceFailover, true, 40*time.Second, 10*time.Millisecond)
	m.Skipped("a", "job disabled")
	m.Skipped("b", "item still running (misfire off)")
	m.Skipped("b", "item still running (misfire off)")
	m.Misfired("a")
	m.FailedOver("b", 3)
	m.Resharded("a", 8, 25*time.Millisecond)
}

func TestObserverWithoutJobLabels(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	observe(m)
	fams := gather(t, m)

	want(t, fams, "ejserver_fires_total", l("source", "NORMAL_TRIGGER"), 2)
	want(t, fams, "ejserver_fires_total", l("source", "MANUAL"), 1)
	want(t, fams, "ejserver_fires_total", l("source", "MISFIRE"), 0) // pre-resolved: present at 0
	want(t, fams, "ejserver_item_executions_total", l("source", "NORMAL_TRIGGER", "outcome", "success"), 1)
	want(t, fams, "ejserver_item_executions_total", l("source", "NORMAL_TRIGGER", "outcome", "failure"), 1)
	want(t, fams, "ejserver_item_executions_total", l("source", "FAILOVER", "outcome", "success"), 1)
	want(t, fams, "ejserver_fires_skipped_total", l("reason", "disabled"), 1)
	want(t, fams, "ejserver_fires_skipped_total", l("reason", "still_running"), 2)
	want(t, fams, "ejserver_fires_skipped_total", l("reason", "clock"), 0)
	want(t, fams, "ejserver_misfires_total", l(), 1)
	want(t, fams, "ejserver_failovers_total", l(), 3)
	want(t, fams, "ejserver_reshardings_total", l(), 1)
	want(t, fams, "ejserver_resharding_duration_seconds", l(), 1)
	want(t, fams, "ejserver_webhook_duration_seconds", l("outcome", "success"), 2)
	want(t, fams, "ejserver_webhook_duration_seconds", l("outcome", "failure"), 1)
	want(t, fams, "ejserver_fire_lateness_seconds", l("source", "NORMAL_TRIGGER"), 2)
	want(t, fams, "ejserver_fire_lateness_seconds", l("source", "FAILOVER"), 1)

	for name, mf := range fams {
		for _, mt := range mf.GetMetric() {
			if _, ok := labelsOf(mt)["job"]; ok {
				t.Errorf("%s has a job label with PerJobLabels off", name)
			}
		}
	}
}

func TestObserverWithJobLabels(t *testing.T) {
	t.Parallel()
	m := New(Config{PerJobLabels: true})
	observe(m)
	fams := gather(t, m)

	want(t, fams, "ejserver_fires_total", l("job", "a", "source", "NORMAL_TRIGGER"), 2)
	want(t, fams, "ejserver_fires_total", l("job", "b", "source", "MANUAL"), 1)
	want(t, fams, "ejserver_item_executions_total", l("job", "a", "source", "NORMAL_TRIGGER", "outcome", "success"), 1)
	want(t, fams, "ejserver_item_executions_total", l("job", "a", "source", "NORMAL_TRIGGER", "outcome", "failure"), 1)
	want(t, fams, "ejserver_item_executions_total", l("job", "b", "source", "FAILOVER", "outcome", "success"), 1)
	want(t, fams, "ejserver_fires_skipped_total", l("job", "a", "reason", "disabled"), 1)
	want(t, fams, "ejserver_fires_skipped_total", l("job", "b", "reason", "still_running"), 2)
	want(t, fams, "ejserver_misfires_total", l("job", "a"), 1)
	want(t, fams, "ejserver_failovers_total", l("job", "b"), 3)
	want(t, fams, "ejserver_reshardings_total", l("job", "a"), 1)
	// the histograms never carry a job label
	want(t, fams, "ejserver_webhook_duration_seconds", l("outcome", "success"), 2)
	want(t, fams, "ejserver_fire_lateness_seconds", l("source", "NORMAL_TRIGGER"), 2)
	want(t, fams, "ejserver_resharding_duration_seconds", l(), 1)

	perJob := []string{"ejserver_fires_total", "ejserver_fires_skipped_total", "ejserver_item_executions_total",
		"ejserver_misfires_total", "ejserver_failovers_total", "ejserver_reshardings_total"}
	for _, name := range perJob {
		for _, mt := range fams[name].GetMetric() {
			if labelsOf(mt)["job"] == "" {
				t.Errorf("%s%v has no job label with PerJobLabels on", name, labelsOf(mt))
			}
		}
	}

	m.ForgetJob("a")
	fams = gather(t, m)
	for _, name := range perJob {
		for _, mt := range fams[name].GetMetric() {
			if labelsOf(mt)["job"] == "a" {
				t.Errorf("%s%v is still there after ForgetJob", name, labelsOf(mt))
			}
		}
	}
	want(t, fams, "ejserver_failovers_total", l("job", "b"), 3)
}

func TestOddInputs(t *testing.T) {
	t.Parallel()
	for _, perJob := range []bool{false, true} {
		t.Run(fmt.Sprintf("PerJobLabels=%v", perJob), func(t *testing.T) {
			t.Parallel()
			m := New(Config{PerJobLabels: perJob})
			jobOf := func(kv ...string) map[string]string {
				if perJob {
					kv = append(kv, "job", "j")
				}
				return l(kv...)
			}
			m.Fired("j", ejserver.Source("SOMETHING_NEW"))
			m.ItemDone("j", ejserver.Source(""), true, -5*time.Millisecond, time.Millisecond)
			m.FailedOver("j", 0)
			m.Skipped("j", "a reason nobody told the metrics about")
			// a name no validation let through must not panic: the event is dropped
			m.Fired("\xff", ejserver.SourceNormal)
			m.ItemDone("\xff", ejserver.SourceNormal, true, 0, 0)

			fams := gather(t, m)
			want(t, fams, "ejserver_fires_total", jobOf("source", "other"), 1)
			want(t, fams, "ejserver_item_executions_total", jobOf("source", "other", "outcome", "success"), 1)
			want(t, fams, "ejserver_fires_skipped_total", jobOf("reason", "other"), 1)
			// an early start counts as on time: the histogram's sum never falls
			want(t, fams, "ejserver_fire_lateness_seconds", l("source", "other"), 1)
			for _, mt := range fams["ejserver_fire_lateness_seconds"].GetMetric() {
				if s := mt.GetHistogram().GetSampleSum(); s < 0 {
					t.Errorf("lateness sum %v < 0", s)
				}
			}
			if v, ok := sample(t, fams, "ejserver_failovers_total", jobOf()); ok && v != 0 {
				t.Errorf("FailedOver(0) counted %v", v)
			}
		})
	}
}

func TestSkipReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason, want string
	}{
		{"config can't be parsed", "config"},
		{"job disabled", "disabled"},
		{"ZooKeeper session in doubt: starting nothing that another peer may take over", "session"},
		{"this peer's instance node is not registered on the job", "not_registered"},
		{"this peer's server is disabled for the job", "server_disabled"},
		{"clock check failed", "clock"},
		{"no sharding to fire with", "sharding"},
		{"item still running (misfire off)", "still_running"},
		{"calendar: cn-holidays excludes the day", "calendar"},
		{"job paused", "paused"},
		{"schedule ended: its 3 remainingFires are used up", "ended"},
		{"", "other"},
		{"job disabled by someone else entirely", "disabled"},
		{"Job disabled", "other"},
		{"something new", "other"},
	}
	for _, tt := range tests {
		if got := SkipReason(tt.reason); got != tt.want {
			t.Errorf("SkipReason(%q) = %q, want %q", tt.reason, got, tt.want)
		}
	}
}

// TestSkipReasonBounded: whatever the executor passes, the reason label takes one of a fixed set.
func TestSkipReasonBounded(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	for i := range 1000 {
		m.Skipped("j", "free text "+strconv.Itoa(i))
		m.Skipped("j", "clock check failed: off by "+strconv.Itoa(i)+"ms")
	}
	fams := gather(t, m)
	if n := len(fams["ejserver_fires_skipped_total"].GetMetric()); n != len(reasonLabels) {
		t.Errorf("%d reason series, want %d", n, len(reasonLabels))
	}
	want(t, fams, "ejserver_fires_skipped_total", l("reason", "other"), 1000)
	want(t, fams, "ejserver_fires_skipped_total", l("reason", "clock"), 1000)
}

// TestSkipReasonsOfExecutor reads the executor's source and checks that every literal reason it passes to
// skip or Observer.Skipped maps to a reason label other than "other", so that rewording one there fails
// here rather than quietly moving its count.
func TestSkipReasonsOfExecutor(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var reasons []string
	files, err := parseDir(fset, "../dispatch")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "skip" && sel.Sel.Name != "skipAt" && sel.Sel.Name != "Skipped") {
					return true
				}
				at := 1 // the reason's argument: skip(req, reason, ...), Skipped(job, reason), skipAt(level, req, reason, ...)
				if sel.Sel.Name == "skipAt" {
					at = 2
				}
				if len(call.Args) <= at {
					return true
				}
				if _, ok := call.Args[at].(*ast.Ident); ok && (fn.Name.Name == "skip" || fn.Name.Name == "skipAt" || fn.Name.Name == "plannedSkip") {
					return true // skip and skipAt forwarding their own reason; plannedSkip's come from internal/calendar
				}
				lit, ok := call.Args[at].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: a skip reason that is not a literal: map it here by hand", fset.Position(call.Pos()))
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Errorf("%s: %v", fset.Position(lit.Pos()), err)
					return true
				}
				reasons = append(reasons, s)
				return true
			})
		}
	}
	if len(reasons) < 8 {
		t.Fatalf("found %d skip reasons in ../dispatch, expected at least 8: has the executor changed shape?", len(reasons))
	}
	seen := map[string]bool{}
	for _, r := range reasons {
		label := SkipReason(r)
		if label == "other" {
			t.Errorf("the executor's skip reason %q maps to other: add its prefix to reasonPrefixes", r)
		}
		seen[label] = true
	}
	for _, label := range reasonLabels[:reasonOther] {
		if !seen[label] {
			t.Logf("reason label %q matches no reason of the executor today", label)
		}
	}
}

// parseDir parses the non-test Go files of dir.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func TestSources(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	healthy, inFlight := true, 3
	m := New(Config{Sources: Sources{
		InFlight: func() int { mu.Lock(); defer mu.Unlock(); return inFlight },
		Waiting:  func() int { return 7 },
		HistoryStats: func() (int64, int64, int64, int64) {
			return 11, 1200, 4, 2
		},
		HistoryDegraded:     func() bool { return true },
		HistoryRollupBehind: func() float64 { return 90 },
		SessionHealthy:      func() bool { mu.Lock(); defer mu.Unlock(); return healthy },
		SessionLease:        func() bool { return false },
		Reconnects:          func() int64 { return 5 },
		Expirations:         func() int64 { return 1 },
		Leaderships:         func() int { return 42 },
		ScheduledJobs:       func() int { return 10000 },
		GCBetweenBursts:     func() int64 { return 9 },
		RegistryBacklog:     func() (int, int, int) { return 12, 0, 30000 },
		ZooKeeperWrites: func() ZooKeeperWrites {
			return ZooKeeperWrites{Groups: 5000, Multis: 40, Refused: 3, Seconds: 2.5, Waiting: 17}
		},
		ZooKeeperRequests: func() ZooKeeperRequests {
			return ZooKeeperRequests{Get: 1, Exists: 2, Children: 3, MultiRead: 4, Create: 5, Set: 6, Delete: 7, Multi: 8, Events: 9}
		},
	}})
	fams := gather(t, m)
	for lane, v := range map[string]float64{"urgent": 12, "batched": 0, "other": 30000} {
		want(t, fams, "ejserver_registry_reads_waiting", l("lane", lane), v)
	}
	for op, v := range map[string]float64{"get": 1, "exists": 2, "children": 3, "multi_read": 4, "create": 5, "set": 6,
		"delete": 7, "multi": 8} {
		want(t, fams, "ejserver_zookeeper_requests_total", l("op", op), v)
	}
	want(t, fams, "ejserver_zookeeper_events_total", l(), 9)
	for _, tt := range []struct {
		name string
		typ  dto.MetricType
		v    float64
	}{
		{"ejserver_webhook_requests_in_flight", dto.MetricType_GAUGE, 3},
		{"ejserver_webhook_requests_waiting", dto.MetricType_GAUGE, 7},
		{"ejserver_history_backlog", dto.MetricType_GAUGE, 11},
		{"ejserver_zookeeper_write_groups_total", dto.MetricType_COUNTER, 5000},
		{"ejserver_zookeeper_write_multis_total", dto.MetricType_COUNTER, 40},
		{"ejserver_zookeeper_write_seconds_total", dto.MetricType_COUNTER, 2.5},
		{"ejserver_zookeeper_write_groups_refused_total", dto.MetricType_COUNTER, 3},
		{"ejserver_zookeeper_write_groups_waiting", dto.MetricType_GAUGE, 17},
		{"ejserver_history_written_total", dto.MetricType_COUNTER, 1200},
		{"ejserver_history_dropped_total", dto.MetricType_COUNTER, 4},
		{"ejserver_history_write_failures_total", dto.MetricType_COUNTER, 2},
		{"ejserver_history_degraded", dto.MetricType_GAUGE, 1},
		{"ejserver_history_rollup_behind_seconds", dto.MetricType_GAUGE, 90},
		{"ejserver_zookeeper_session_up", dto.MetricType_GAUGE, 1},
		{"ejserver_zookeeper_lease_valid", dto.MetricType_GAUGE, 0},
		{"ejserver_zookeeper_reconnects_total", dto.MetricType_COUNTER, 5},
		{"ejserver_zookeeper_session_expirations_total", dto.MetricType_COUNTER, 1},
		{"ejserver_leaderships", dto.MetricType_GAUGE, 42},
		{"ejserver_scheduled_jobs", dto.MetricType_GAUGE, 10000},
		{"ejserver_gc_between_bursts_total", dto.MetricType_COUNTER, 9},
	} {
		want(t, fams, tt.name, l(), tt.v)
		if mf := fams[tt.name]; mf != nil && mf.GetType() != tt.typ {
			t.Errorf("%s is a %v, want %v", tt.name, mf.GetType(), tt.typ)
		}
	}

	// read at every scrape, not at New
	mu.Lock()
	healthy, inFlight = false, 0
	mu.Unlock()
	fams = gather(t, m)
	want(t, fams, "ejserver_zookeeper_session_up", l(), 0)
	want(t, fams, "ejserver_webhook_requests_in_flight", l(), 0)
}

func TestNilSourcesSkipped(t *testing.T) {
	t.Parallel()
	sourced := []string{
		"ejserver_webhook_requests_in_flight", "ejserver_webhook_requests_waiting",
		"ejserver_history_backlog", "ejserver_history_written_total", "ejserver_history_dropped_total",
		"ejserver_history_write_failures_total", "ejserver_history_degraded",
		"ejserver_zookeeper_session_up", "ejserver_zookeeper_lease_valid",
		"ejserver_zookeeper_reconnects_total", "ejserver_zookeeper_session_expirations_total",
		"ejserver_leaderships", "ejserver_scheduled_jobs", "ejserver_gc_between_bursts_total",
		"ejserver_registry_reads_waiting", "ejserver_zookeeper_write_groups_total",
		"ejserver_zookeeper_write_multis_total", "ejserver_zookeeper_write_seconds_total",
		"ejserver_zookeeper_write_groups_refused_total", "ejserver_zookeeper_write_groups_waiting",
		"ejserver_zookeeper_requests_total", "ejserver_zookeeper_events_total",
	}
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		fams := gather(t, New(Config{}))
		for _, name := range sourced {
			if fams[name] != nil {
				t.Errorf("%s is exposed with no source", name)
			}
		}
		if fams["ejserver_fires_total"] == nil {
			t.Error("the observer's series are missing with no sources")
		}
	})
	t.Run("some", func(t *testing.T) {
		t.Parallel()
		fams := gather(t, New(Config{Sources: Sources{
			Leaderships:  func() int { return 2 },
			HistoryStats: func() (int64, int64, int64, int64) { return 0, 1, 0, 0 },
		}}))
		present := map[string]bool{
			"ejserver_leaderships": true, "ejserver_history_backlog": true, "ejserver_history_written_total": true,
			"ejserver_history_dropped_total": true, "ejserver_history_write_failures_total": true,
		}
		for _, name := range sourced {
			if got := fams[name] != nil; got != present[name] {
				t.Errorf("%s exposed: %v, want %v", name, got, present[name])
			}
		}
	})
}

func TestHandler(t *testing.T) {
	t.Parallel()
	m := New(Config{Sources: Sources{ScheduledJobs: func() int { return 3 }}})
	m.ItemDone("a", ejserver.SourceNormal, true, 15*time.Millisecond, 120*time.Millisecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, line := range []string{
		"# TYPE ejserver_fire_lateness_seconds histogram",
		`ejserver_fire_lateness_seconds_bucket{source="NORMAL_TRIGGER",le="0.01"} 0`,
		`ejserver_fire_lateness_seconds_bucket{source="NORMAL_TRIGGER",le="0.02"} 1`,
		`ejserver_fire_lateness_seconds_bucket{source="NORMAL_TRIGGER",le="0.0005"} 0`,
		`ejserver_fire_lateness_seconds_bucket{source="NORMAL_TRIGGER",le="30"} 1`,
		`ejserver_webhook_duration_seconds_bucket{outcome="success",le="0.001"} 0`,
		`ejserver_webhook_duration_seconds_bucket{outcome="success",le="0.25"} 1`,
		`ejserver_webhook_duration_seconds_bucket{outcome="success",le="60"} 1`,
		`ejserver_item_executions_total{outcome="success",source="NORMAL_TRIGGER"} 1`,
		"ejserver_scheduled_jobs 3",
		"# TYPE go_goroutines gauge",
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("exposition lacks %q", line)
		}
	}
}

// TestConcurrentUse is for the race detector: observers and scrapes at once.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	for _, perJob := range []bool{false, true} {
		m := New(Config{PerJobLabels: perJob, Sources: Sources{InFlight: func() int { return 1 }}})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				job := "job-" + strconv.Itoa(g%3)
				for range 200 {
					m.Fired(job, ejserver.SourceNormal)
					m.ItemDone(job, ejserver.SourceNormal, g%2 == 0, time.Millisecond, time.Millisecond)
					m.Skipped(job, "clock check failed")
					m.Misfired(job)
					m.FailedOver(job, 1)
					m.Resharded(job, 4, time.Millisecond)
				}
			})
		}
		wg.Go(func() {
			for range 20 {
				rec := httptest.NewRecorder()
				m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			}
		})
		wg.Wait()
		fams := gather(t, m)
		var fires float64
		for _, mt := range fams["ejserver_fires_total"].GetMetric() {
			fires += mt.GetCounter().GetValue()
		}
		if fires != 8*200 {
			t.Errorf("PerJobLabels=%v: %v fires counted, want %d", perJob, fires, 8*200)
		}
	}
}

func BenchmarkItemDone(b *testing.B) {
	jobs := make([]string, 1000)
	for i := range jobs {
		jobs[i] = "job-" + strconv.Itoa(i)
	}
	for _, perJob := range []bool{false, true} {
		m := New(Config{PerJobLabels: perJob})
		for _, j := range jobs { // the series exist: measure the steady state, not their creation
			m.ItemDone(j, ejserver.SourceNormal, true, 0, 0)
			m.ItemDone(j, ejserver.SourceNormal, false, 0, 0)
		}
		b.Run(fmt.Sprintf("job_labels=%v", perJob), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m.ItemDone(jobs[i%len(jobs)], ejserver.SourceNormal, i%8 != 0, 12*time.Millisecond, 80*time.Millisecond)
				i++
			}
		})
		b.Run(fmt.Sprintf("job_labels=%v/parallel", perJob), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					m.ItemDone(jobs[i%len(jobs)], ejserver.SourceNormal, i%8 != 0, 12*time.Millisecond, 80*time.Millisecond)
					i++
				}
			})
		})
	}
}

func TestBuildInfo(t *testing.T) {
	t.Parallel()
	if fams := gather(t, New(Config{})); fams["ejserver_build_info"] != nil {
		t.Error("ejserver_build_info is exposed without a build")
	}
	fams := gather(t, New(Config{Build: Build{Version: "v1.2.3", Commit: "abc", GoVersion: "go1.26.8"}}))
	want(t, fams, "ejserver_build_info", map[string]string{"version": "v1.2.3", "commit": "abc", "goversion": "go1.26.8"}, 1)
}

// The GC percent in effect (the pacer of --gc-headroom sets it) is on /metrics, from Go's collector.
func TestGoCollectorShowsTheGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(345)
	defer debug.SetGCPercent(prev)
	want(t, gather(t, New(Config{})), "go_gc_gogc_percent", l(), 345)
}
