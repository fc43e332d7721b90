package metrics

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ejserver/ejserver"
)

// Config configures a Metrics.
type Config struct {
	// PerJobLabels adds a job label to the per-job series (fires, skipped fires, item executions,
	// misfires, failovers, reshardings). Off by default: every job then adds series of its own.
	PerJobLabels bool
	// Sources are read when Prometheus scrapes; a nil field leaves its series out.
	Sources Sources
	// Logger gets the errors of serving a scrape; nil: slog.Default().
	Logger *slog.Logger
	// Build labels ejserver_build_info, so that dashboards show which build each peer runs (a rolling
	// upgrade's progress); an empty Version leaves the series out.
	Build Build
}

// Build is the running binary's build facts.
type Build struct {
	Version, Commit, GoVersion string
}

// Sources are the values kept elsewhere that a scrape reads. Each must be cheap and safe for concurrent
// use; a nil field leaves its series out.
type Sources struct {
	// InFlight and Waiting: webhook.Sender's InFlight and Waiting.
	InFlight, Waiting func() int
	// HistoryStats: history.Writer's Stats; HistoryDegraded: whether its Health is degraded.
	HistoryStats func() (backlog, written, dropped, failures int64)
	// HistoryTracesShed: the tasks history.Writer left without status traces because it was behind.
	HistoryTracesShed func() int64
	HistoryDegraded   func() bool
	// HistoryRollupBehind: how long ago the oldest execution the store's stats rollup has not counted was due
	// to be counted (history.RollupReporter), NaN when the store cannot tell.
	HistoryRollupBehind func() float64
	// SessionHealthy, SessionLease, Reconnects, Expirations: cluster.Session's methods of those names.
	SessionHealthy, SessionLease func() bool
	Reconnects, Expirations      func() int64
	// Leaderships: jobs this peer leads; ScheduledJobs: jobs in this peer's scheduler.
	Leaderships, ScheduledJobs func() int
	// GCBetweenBursts: dispatch.Collector's Collections.
	GCBetweenBursts func() int64
	// RegistryBacklog: cluster.Registry's ReadsWaiting, by lane.
	RegistryBacklog func() (urgent, batched, other int)
	// ZooKeeperWrites: cluster.Registry's WriteStats.
	ZooKeeperWrites func() ZooKeeperWrites
	// ZooKeeperRequests: cluster.Session's Requests.
	ZooKeeperRequests func() ZooKeeperRequests
}

// ZooKeeperRequests are a peer's ZooKeeper requests by operation, and the watch events it received
// (cluster.Requests).
type ZooKeeperRequests struct {
	Get, Exists, Children, MultiRead, Create, Set, Delete, Multi, Events int64
}

// byOp lists the requests with their op label.
func (r ZooKeeperRequests) byOp() [8]struct {
	op string
	n  int64
} {
	return [8]struct {
		op string
		n  int64
	}{{"get", r.Get}, {"exists", r.Exists}, {"children", r.Children}, {"multi_read", r.MultiRead},
		{"create", r.Create}, {"set", r.Set}, {"delete", r.Delete}, {"multi", r.Multi}}
}

// ZooKeeperWrites are a peer's batched ZooKeeper writes (cluster.WriteStats): groups submitted, the multi
// requests that carried them and their time summed, the groups refused by one of their own ops, and the
// groups waiting for a multi now.
type ZooKeeperWrites struct {
	Groups, Multis, Refused int64
	Seconds                 float64
	Waiting                 int
}

// Label values of outcome.
const (
	outcomeSuccess = "success"
	outcomeFailure = "failure"
)

// The source label's values, indexed by sourceIndex.
var sourceLabels = [...]string{
	string(ejserver.SourceNormal),
	string(ejserver.SourceMisfire),
	string(ejserver.SourceFailover),
	string(ejserver.SourceManual),
	string(ejserver.SourceWorkflow),
	string(ejserver.SourceBackfill),
	"other",
}

// srcOther is the index of "other", and the number of sources that are not other.
const srcOther = len(sourceLabels) - 1

func sourceIndex(s ejserver.Source) int {
	switch s {
	case ejserver.SourceNormal:
		return 0
	case ejserver.SourceMisfire:
		return 1
	case ejserver.SourceFailover:
		return 2
	case ejserver.SourceManual:
		return 3
	case ejserver.SourceWorkflow:
		return 4
	case ejserver.SourceBackfill:
		return 5
	}
	return srcOther
}

// Bucket bounds, in seconds.
var (
	// webhookBuckets: 1 ms to 60 s.
	webhookBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// latenessBuckets: 0.5 ms to 30 s, finest in the tens of milliseconds where lateness matters.
	latenessBuckets = []float64{.0005, .001, .0025, .005, .01, .02, .03, .05, .075, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// reshardBuckets: 5 ms to 60 s (a resharding is a few ZooKeeper round trips, or a wait for running items).
	reshardBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
)

// Metrics holds ejserver's metrics in a registry of its own. Its observer methods are safe for
// concurrent use and take no lock beyond client_golang's own.
type Metrics struct {
	perJob  bool
	reg     *prometheus.Registry
	handler http.Handler

	// The per-job vectors: their first label is job with PerJobLabels, else absent.
	fires       *prometheus.CounterVec // [job,] source
	skipped     *prometheus.CounterVec // [job,] reason
	items       *prometheus.CounterVec // [job,] source, outcome
	misfires    *prometheus.CounterVec // [job]
	failovers   *prometheus.CounterVec // [job]
	reshardings *prometheus.CounterVec // [job]

	// Their series resolved at New; nil with PerJobLabels, where the job is only known per call.
	firesBy    [srcOther]prometheus.Counter
	skippedBy  [len(reasonLabels)]prometheus.Counter
	itemsBy    [srcOther][2]prometheus.Counter // [source][0 success, 1 failure]
	misfire    prometheus.Counter
	failover   prometheus.Counter
	resharding prometheus.Counter

	// The histograms' series, resolved at New in both modes (they never carry a job label).
	webhookBy     [2]prometheus.Observer                 // [0 success, 1 failure]
	latenessBy    [len(sourceLabels)]prometheus.Observer // by sourceIndex
	reshardTiming prometheus.Observer

	async    asyncMetrics
	notify   notifyMetrics
	workflow workflowMetrics
	session  sessionMetrics
}

// New returns a Metrics with its own registry, holding the Go and process collectors too.
func New(cfg Config) *Metrics {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Metrics{perJob: cfg.PerJobLabels, reg: prometheus.NewRegistry()}
	jobLabels := func(labels ...string) []string {
		if m.perJob {
			return append([]string{"job"}, labels...)
		}
		return labels
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, jobLabels(labels...))
		m.reg.MustRegister(v)
		return v
	}
	m.fires = counter("ejserver_fires_total",
		"Fires that started at least one item on this peer.", "source")
	m.skipped = counter("ejserver_fires_skipped_total",
		"Fires, or an item of a fire, that this peer skipped, by reason.", "reason")
	m.items = counter("ejserver_item_executions_total",
		"Items delivered to their webhook, by source and outcome.", "source", "outcome")
	m.misfires = counter("ejserver_misfires_total",
		"Items a fire found still running, so that a catch-up follows.")
	m.failovers = counter("ejserver_failovers_total",
		"Items of a vanished instance that this peer took over.")
	m.reshardings = counter("ejserver_reshardings_total",
		"Reshardings this peer ran as the job's leader.")

	webhook := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ejserver_webhook_duration_seconds",
		Help:    "Time to deliver one item to its webhook: every attempt and back-off included.",
		Buckets: webhookBuckets,
	}, []string{"outcome"})
	lateness := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ejserver_fire_lateness_seconds",
		Help:    "An item's actual start minus its scheduled time, by source.",
		Buckets: latenessBuckets,
	}, []string{"source"})
	reshard := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ejserver_resharding_duration_seconds",
		Help:    "Time one resharding took.",
		Buckets: reshardBuckets,
	})
	m.reg.MustRegister(webhook, lateness, reshard,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if cfg.Build.Version != "" {
		info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ejserver_build_info",
			Help: "Always 1; its labels name the running build.",
			ConstLabels: prometheus.Labels{"version": cfg.Build.Version, "commit": cfg.Build.Commit,
				"goversion": cfg.Build.GoVersion}})
		info.Set(1)
		m.reg.MustRegister(info)
	}
	if c := newSourceCollector(cfg.Sources); c != nil {
		m.reg.MustRegister(c)
	}

	m.webhookBy = [2]prometheus.Observer{webhook.WithLabelValues(outcomeSuccess), webhook.WithLabelValues(outcomeFailure)}
	for i, src := range sourceLabels {
		m.latenessBy[i] = lateness.WithLabelValues(src)
	}
	m.reshardTiming = reshard
	m.async = newAsyncMetrics(m.reg)
	m.notify = newNotifyMetrics(m.reg)
	m.workflow = newWorkflowMetrics(m.reg)
	m.session = newSessionMetrics(m.reg)
	if !m.perJob {
		for i, src := range sourceLabels[:srcOther] {
			m.firesBy[i] = m.fires.WithLabelValues(src)
			m.itemsBy[i] = [2]prometheus.Counter{
				m.items.WithLabelValues(src, outcomeSuccess),
				m.items.WithLabelValues(src, outcomeFailure),
			}
		}
		for i, r := range reasonLabels {
			m.skippedBy[i] = m.skipped.WithLabelValues(r)
		}
		m.misfire = m.misfires.WithLabelValues()
		m.failover = m.failovers.WithLabelValues()
		m.resharding = m.reshardings.WithLabelValues()
	}

	m.handler = promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      newScrapeErrorLog(cfg.Logger), // one line for an abandoned scrape, not one a family
		ErrorHandling: promhttp.ContinueOnError,      // serve what could be gathered
		Registry:      m.reg,                         // counts its errors in promhttp_metric_handler_errors_total
	}))
	return m
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Fired counts a fire that started at least one item on this peer (dispatch.Observer).
func (m *Metrics) Fired(job string, source ejserver.Source) {
	i := sourceIndex(source)
	if !m.perJob && i != srcOther {
		m.firesBy[i].Inc()
		return
	}
	inc(m.fires, job, m.perJob, sourceLabels[i])
}

// Skipped counts a skipped fire, by the bounded reason SkipReason maps reason to (dispatch.Observer).
func (m *Metrics) Skipped(job string, reason string) {
	r := reasonIndex(reason)
	if m.perJob {
		inc(m.skipped, job, true, reasonLabels[r])
		return
	}
	m.skippedBy[r].Inc()
}

// ItemDone counts an item's execution and records its delivery time and its lateness (dispatch.Observer).
func (m *Metrics) ItemDone(job string, source ejserver.Source, success bool, lateness, duration time.Duration) {
	i, o := sourceIndex(source), 0
	if !success {
		o = 1
	}
	if !m.perJob && i != srcOther {
		m.itemsBy[i][o].Inc()
	} else {
		outcome := outcomeSuccess
		if !success {
			outcome = outcomeFailure
		}
		inc(m.items, job, m.perJob, sourceLabels[i], outcome)
	}
	m.webhookBy[o].Observe(duration.Seconds())
	m.latenessBy[i].Observe(max(lateness, 0).Seconds())
}

// Misfired counts an item a fire found still running, so that a catch-up follows (dispatch.Observer).
func (m *Metrics) Misfired(job string) {
	if m.perJob {
		inc(m.misfires, job, true)
		return
	}
	m.misfire.Inc()
}

// FailedOver counts items taken over from a vanished instance (failover.Observer).
func (m *Metrics) FailedOver(job string, items int) {
	if items <= 0 {
		return
	}
	if m.perJob {
		add(m.failovers, float64(items), job)
		return
	}
	m.failover.Add(float64(items))
}

// Resharded counts a resharding and records how long it took (sharding.Observer). The number of items
// is not recorded.
func (m *Metrics) Resharded(job string, _ int, took time.Duration) {
	if m.perJob {
		inc(m.reshardings, job, true)
	} else {
		m.resharding.Inc()
	}
	m.reshardTiming.Observe(max(took, 0).Seconds())
}

// ForgetJob removes a job's series, so that a deleted job's do not stay until the process exits. It
// does nothing without per-job labels. Call it when a job is removed, not while it still fires: a
// concurrent observation can bring a series back.
func (m *Metrics) ForgetJob(job string) {
	if !m.perJob {
		return
	}
	l := prometheus.Labels{"job": job}
	for _, v := range []*prometheus.CounterVec{m.fires, m.skipped, m.items, m.misfires, m.failovers, m.reshardings} {
		v.DeletePartialMatch(l)
	}
}

// inc increments the series of labels, prefixed by job when perJob.
func inc(v *prometheus.CounterVec, job string, perJob bool, labels ...string) {
	if perJob {
		add(v, 1, job, labels...)
		return
	}
	if c, err := v.GetMetricWithLabelValues(labels...); err == nil {
		c.Inc()
	}
}

// add adds n to the series of job and labels. A job name that cannot be a label value (invalid UTF-8,
// from a job written to ZooKeeper by another client) is not counted rather than panicking on the hot path.
func add(v *prometheus.CounterVec, n float64, job string, labels ...string) {
	var buf [3]string
	lvs := append(append(buf[:0], job), labels...)
	if c, err := v.GetMetricWithLabelValues(lvs...); err == nil {
		c.Add(n)
	}
}
