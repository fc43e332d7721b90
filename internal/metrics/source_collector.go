package metrics

import "github.com/prometheus/client_golang/prometheus"

// sourceCollector reads Sources at scrape time. It describes and collects only the series whose source
// is set.
type sourceCollector struct {
	metrics []scrapeMetric
	history func() (backlog, written, dropped, failures int64)
	// history's four series, in the order of its results
	historyDescs [4]*prometheus.Desc
	backlog      func() (urgent, batched, other int)
	backlogDesc  *prometheus.Desc // its lane label: urgent, batched, other
	requests     func() ZooKeeperRequests
	requestDescs [2]*prometheus.Desc // requests by op, events
}

// scrapeMetric is one series read from one func.
type scrapeMetric struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func() float64
}

// newSourceCollector returns nil when no source is set.
func newSourceCollector(s Sources) *sourceCollector {
	c := &sourceCollector{history: s.HistoryStats, backlog: s.RegistryBacklog, requests: s.ZooKeeperRequests}
	gauge := func(name, help string, f func() float64) {
		c.metrics = append(c.metrics, scrapeMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, f})
	}
	counter := func(name, help string, f func() float64) {
		c.metrics = append(c.metrics, scrapeMetric{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, f})
	}
	if f := s.InFlight; f != nil {
		gauge("ejserver_webhook_requests_in_flight", "Webhook requests being sent now.", intf(f))
	}
	if f := s.Waiting; f != nil {
		gauge("ejserver_webhook_requests_waiting", "Deliveries waiting for a free request slot.", intf(f))
	}
	if f := s.Leaderships; f != nil {
		gauge("ejserver_leaderships", "Jobs this peer is the leader of.", intf(f))
	}
	if f := s.ScheduledJobs; f != nil {
		gauge("ejserver_scheduled_jobs", "Jobs in this peer's scheduler.", intf(f))
	}
	if f := s.SessionHealthy; f != nil {
		gauge("ejserver_zookeeper_session_up", "1 while the ZooKeeper session is connected and healthy, else 0.", boolf(f))
	}
	if f := s.SessionLease; f != nil {
		gauge("ejserver_zookeeper_lease_valid", "1 while this peer may start work (its session lease holds), else 0.", boolf(f))
	}
	if f := s.Reconnects; f != nil {
		counter("ejserver_zookeeper_reconnects_total", "ZooKeeper reconnections.", int64f(f))
	}
	if f := s.Expirations; f != nil {
		counter("ejserver_zookeeper_session_expirations_total", "ZooKeeper session expirations.", int64f(f))
	}
	if f := s.GCBetweenBursts; f != nil {
		counter("ejserver_gc_between_bursts_total", "Garbage collections this peer started in a gap between its bursts of webhooks.", int64f(f))
	}
	if f := s.ZooKeeperWrites; f != nil {
		counter("ejserver_zookeeper_write_groups_total", "Atomic groups of ZooKeeper writes submitted (an item's begin "+
			"or end, a resharding's commit, a registration...), batched into multi requests.",
			func() float64 { return float64(f().Groups) })
		counter("ejserver_zookeeper_write_multis_total", "Multi requests that carried the groups of writes.",
			func() float64 { return float64(f().Multis) })
		counter("ejserver_zookeeper_write_seconds_total", "Time the multi requests took, summed (divided by the "+
			"multis: their mean latency).", func() float64 { return f().Seconds })
		counter("ejserver_zookeeper_write_groups_refused_total", "Groups of writes refused by one of their own ops "+
			"(a version check, a node that exists); each sent the groups batched with it again.",
			func() float64 { return float64(f().Refused) })
		gauge("ejserver_zookeeper_write_groups_waiting", "Groups of writes waiting for a multi request.",
			func() float64 { return float64(f().Waiting) })
	}
	if f := s.HistoryTracesShed; f != nil {
		counter("ejserver_history_status_traces_shed_total", "Tasks left without status traces because the history "+
			"writer was behind (its backlog past half its queue): executions are kept first.", int64f(f))
	}
	if f := s.HistoryRollupBehind; f != nil {
		gauge("ejserver_history_rollup_behind_seconds", "How long ago the oldest execution the stats rollup has not "+
			"counted was due to be counted (SQLite counts a minute's executions 30 s after it ends); 0 when caught "+
			"up. While it grows, the stats read those executions one by one.", f)
	}
	if f := s.HistoryDegraded; f != nil {
		gauge("ejserver_history_degraded", "1 while the last history write failed, else 0.", boolf(f))
	}
	if c.history != nil {
		c.historyDescs = [4]*prometheus.Desc{
			prometheus.NewDesc("ejserver_history_backlog", "History records queued, being written or waiting for a retry.", nil, nil),
			prometheus.NewDesc("ejserver_history_written_total", "History records written.", nil, nil),
			prometheus.NewDesc("ejserver_history_dropped_total", "History records lost: queue full, rejected by the store, or left at stop.", nil, nil),
			prometheus.NewDesc("ejserver_history_write_failures_total", "Failed history writes.", nil, nil),
		}
	}
	if c.backlog != nil {
		c.backlogDesc = prometheus.NewDesc("ejserver_registry_reads_waiting",
			"ZooKeeper reads (and re-watches) of the job registry waiting for a worker, by lane: urgent (nodes that "+
				"decide a job's items, peers, leaders), batched (whole jobs loaded together), other.", []string{"lane"}, nil)
	}
	if c.requests != nil {
		c.requestDescs = [2]*prometheus.Desc{
			prometheus.NewDesc("ejserver_zookeeper_requests_total", "ZooKeeper requests this peer sent, by operation "+
				"(a multi carries many writes, a multi_read many reads).", []string{"op"}, nil),
			prometheus.NewDesc("ejserver_zookeeper_events_total", "ZooKeeper watch events this peer received.", nil, nil),
		}
	}
	if len(c.metrics) == 0 && c.history == nil && c.backlog == nil && c.requests == nil {
		return nil
	}
	return c
}

func intf(f func() int) func() float64     { return func() float64 { return float64(f()) } }
func int64f(f func() int64) func() float64 { return func() float64 { return float64(f()) } }
func boolf(f func() bool) func() float64 {
	return func() float64 {
		if f() {
			return 1
		}
		return 0
	}
}

// Describe implements prometheus.Collector.
func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	if c.history != nil {
		for _, d := range c.historyDescs {
			ch <- d
		}
	}
	if c.backlog != nil {
		ch <- c.backlogDesc
	}
	if c.requests != nil {
		for _, d := range c.requestDescs {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value())
	}
	if c.history != nil {
		backlog, written, dropped, failures := c.history() // once: the four come from one snapshot
		ch <- prometheus.MustNewConstMetric(c.historyDescs[0], prometheus.GaugeValue, float64(backlog))
		ch <- prometheus.MustNewConstMetric(c.historyDescs[1], prometheus.CounterValue, float64(written))
		ch <- prometheus.MustNewConstMetric(c.historyDescs[2], prometheus.CounterValue, float64(dropped))
		ch <- prometheus.MustNewConstMetric(c.historyDescs[3], prometheus.CounterValue, float64(failures))
	}
	if c.backlog != nil {
		urgent, batched, other := c.backlog()
		ch <- prometheus.MustNewConstMetric(c.backlogDesc, prometheus.GaugeValue, float64(urgent), "urgent")
		ch <- prometheus.MustNewConstMetric(c.backlogDesc, prometheus.GaugeValue, float64(batched), "batched")
		ch <- prometheus.MustNewConstMetric(c.backlogDesc, prometheus.GaugeValue, float64(other), "other")
	}
	if c.requests != nil {
		r := c.requests()
		for _, o := range r.byOp() {
			ch <- prometheus.MustNewConstMetric(c.requestDescs[0], prometheus.CounterValue, float64(o.n), o.op)
		}
		ch <- prometheus.MustNewConstMetric(c.requestDescs[1], prometheus.CounterValue, float64(r.Events))
	}
}
