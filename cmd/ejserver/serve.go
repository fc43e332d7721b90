package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	_ "time/tzdata" // IANA zones for jobs even on machines without tzdata

	"github.com/ejserver/ejserver/api"
	"github.com/ejserver/ejserver/internal/async"
	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/backfill"
	"github.com/ejserver/ejserver/internal/calendarstore"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/cronexpr"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/failover"
	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/metrics"
	"github.com/ejserver/ejserver/internal/notify"
	"github.com/ejserver/ejserver/internal/replay"
	"github.com/ejserver/ejserver/internal/service"
	"github.com/ejserver/ejserver/internal/sharding"
	"github.com/ejserver/ejserver/internal/tracing"
	"github.com/ejserver/ejserver/internal/webhook"
	"github.com/ejserver/ejserver/internal/workflow/engine"
	"github.com/ejserver/ejserver/internal/workflow/wfalert"
	"github.com/ejserver/ejserver/web"
)

// serveConfig is everything `ejserver serve` is told.
type serveConfig struct {
	zk               string
	namespace        string
	sessionTimeout   time.Duration
	listen           string
	instanceID       string
	serverIP         string
	dataDir          string
	logLevel         string
	logFormat        string
	historyDSN       string
	historyRetention time.Duration
	// historyStatusTraces: the history writer records status traces (--history-status-traces)
	historyStatusTraces bool
	historyQueue        int // --history-queue: the history writer's bound on records held
	otlpEndpoint        string
	maxConcurrent       int
	webhookAllow        string
	shutdownTimeout     time.Duration
	serverGC            time.Duration
	fireLead            time.Duration
	gcBetweenBursts     bool
	gcHeadroom          uint64 // bytes
	zkDigest            string
	metricsPerJob       bool
	apiTokens           string // tokens file; EJ_API_TOKEN adds one admin token
	insecure            bool
	metricsAuth         bool
	jobsFile            string
	advertiseURL        string
	callbackSecret      string // file holding the cluster's callback token secret
	leaseRetention      time.Duration
	tls                 tlsFiles
	alertLostGrace      time.Duration
	backfillPacing      backfill.Pacing
	backfillRetain      time.Duration
}

func parseServe(args []string) (serveConfig, error) {
	var c serveConfig
	f := newEnvFlags("ejserver serve", "Run an ejserver peer: it shares jobs with every peer on the same ZooKeeper namespace.")
	zk := f.String("zk", "127.0.0.1:2181", "ZooKeeper connect string, host:port[,host:port...]")
	ns := f.String("namespace", "ejserver", "registry namespace: the ZooKeeper node holding the jobs (ElasticJob's namespace)")
	st := f.Duration("session-timeout", 10*time.Second, "ZooKeeper session timeout: a peer that dies is noticed after this; a cut-off peer stops dispatching before it")
	listen := f.String("listen", "127.0.0.1:8080", "HTTP address of the API")
	id := f.String("instance-id", "", "this peer's ElasticJob instance id (default {ip}@-@{pid})")
	ip := f.String("server-ip", "", "this peer's server IP for servers/{ip} (default: the first non-loopback IPv4)")
	dataDir := f.String("data-dir", "data", "directory for local state (the SQLite history)")
	level := f.String("log-level", "info", "debug, info, warn or error")
	format := f.String("log-format", "text", "text or json")
	dsn := f.String("history-dsn", "", "execution history store: a postgres:// DSN shared by every peer (default: SQLite in the data directory)")
	retention := f.Duration("history-retention", history.DefaultRetention, "how long execution history is kept")
	statusTraces := f.Bool("history-status-traces", true, "record each task's states in JOB_STATUS_TRACE_LOG (false: executions and stats only; with SQLite and thousands of jobs the traces are ~40% of the history writer's CPU)")
	historyQueue := f.Int("history-queue", history.DefaultQueueSize, "history records a peer holds while its store is behind or down (queued, being written, waiting for a retry); past it new records are dropped and counted (ejserver_history_dropped_total). ~0.5-0.7 KB each")
	maxConc := f.Int("max-concurrent-requests", webhook.DefaultMaxConcurrent, "bound on webhook requests in flight on this peer")
	allow := f.String("webhook-allow", "", "allow-list of webhook targets: host names, *.suffixes, IPs and CIDRs, comma-separated (default: anything but link-local and metadata addresses)")
	shutdown := f.Duration("shutdown-timeout", 15*time.Second, "on SIGTERM, how long in-flight webhooks may finish")
	gc := f.Duration("server-gc", time.Hour, "remove a job's servers/{ip} node after its IP has had no instance online this long (0: never); DISABLED nodes are kept")
	lead := f.Duration("fire-lead", time.Second, "prepare each fire (fence its items in ZooKeeper) up to this long before its scheduled time, and at most a tenth of the job's period before it, so the webhooks leave on time; from half a second up it is rounded down to whole seconds and a half, so preparing falls between the whole seconds fires leave on (0: prepare at the scheduled time)")
	gcBursts := f.Bool("gc-between-bursts", true, "run Go's garbage collector in the gaps between this peer's bursts of webhooks, before the next burst's allocation would start it in the middle of one (false: leave it to Go's pacer)")
	digest := f.String("zk-digest", "", "user:password: nodes ejserver creates are writable only with this ZooKeeper digest (readable by all)")
	perJob := f.Bool("metrics-per-job", false, "label per-job metrics with the job name (one series per job: mind the cardinality)")
	tokens := f.String("api-tokens", "", "file of API bearer tokens, one \"ROLE NAME TOKEN\" a line (roles admin, viewer; TOKEN or sha256:HEX); EJ_API_TOKEN adds one admin token")
	insecure := f.Bool("insecure", false, "allow an API without tokens to listen beyond loopback")
	metricsAuth := f.Bool("metrics-auth", false, "/metrics needs a bearer token too (any role)")
	jobsFile := f.String("jobs", "", "YAML file of jobs applied at start-up: missing jobs are created, existing ones replaced only with overwrite: true")
	advertise := f.String("advertise-url", "", "this peer's API base URL as receivers reach it, for the callbacks of accepted (202) items (default: http:// and --listen, a wildcard host replaced by --server-ip)")
	cbSecret := f.String("callback-secret-file", "", "file holding the cluster's callback token secret (at least 32 bytes, the same on every peer; default: kept in ZooKeeper, readable only with --zk-digest)")
	leaseRetention := f.Duration("lease-retention", 10*time.Minute, "how long an ended accepted item's lease record stays in ZooKeeper, so a repeated completion gets the same answer from any peer; after it the history store answers (PostgreSQL: any peer; SQLite: the peer that recorded the end)")
	otlp := f.String("otlp-endpoint", "", "OTLP/HTTP endpoint that gets OpenTelemetry spans of fires, items and attempts (http://collector:4318); default: the standard OTEL_EXPORTER_OTLP_ENDPOINT, else no spans (webhooks carry a W3C traceparent either way)")
	tlsOf := tlsFlags(f)
	lostGrace := alertFlags(f)
	pacingOf := backfillFlags(f)
	pprofFlag(f)
	headroom := gcHeadroomFlag(f)
	err := f.Parse(args)
	if err != nil {
		return c, err
	}
	c = serveConfig{zk: *zk, namespace: *ns, sessionTimeout: *st, listen: *listen, instanceID: *id, serverIP: *ip,
		dataDir: *dataDir, logLevel: *level, logFormat: *format, historyDSN: *dsn, historyRetention: *retention,
		historyStatusTraces: *statusTraces, historyQueue: *historyQueue, maxConcurrent: *maxConc, webhookAllow: *allow, shutdownTimeout: *shutdown, serverGC: *gc, fireLead: *lead, gcBetweenBursts: *gcBursts, zkDigest: *digest, metricsPerJob: *perJob,
		apiTokens: *tokens, insecure: *insecure, metricsAuth: *metricsAuth, jobsFile: *jobsFile,
		advertiseURL: *advertise, callbackSecret: *cbSecret, leaseRetention: *leaseRetention, tls: tlsOf(),
		alertLostGrace: *lostGrace, otlpEndpoint: *otlp}
	if err := c.tls.check(); err != nil {
		return c, err
	}
	if c.gcHeadroom, err = headroom(); err != nil {
		return c, err
	}
	if c.backfillPacing, c.backfillRetain, err = pacingOf(); err != nil {
		return c, err
	}
	switch {
	case c.sessionTimeout < time.Second || c.sessionTimeout > 60*time.Second:
		return c, fmt.Errorf("--session-timeout: must be between 1s and 60s, got %s", c.sessionTimeout)
	case c.logFormat != "text" && c.logFormat != "json":
		return c, fmt.Errorf("--log-format: must be text or json, got %q", c.logFormat)
	case c.maxConcurrent < 1:
		return c, fmt.Errorf("--max-concurrent-requests: must be at least 1")
	case c.historyQueue < minHistoryQueue || c.historyQueue > maxHistoryQueue:
		return c, fmt.Errorf("--history-queue: must be from %d to %d records, got %d", minHistoryQueue, maxHistoryQueue, c.historyQueue)
	case c.shutdownTimeout < 0:
		return c, fmt.Errorf("--shutdown-timeout: must not be negative")
	case c.leaseRetention < time.Second || c.leaseRetention > 7*24*time.Hour:
		return c, fmt.Errorf("--lease-retention: must be between 1s and 168h, got %s", c.leaseRetention)
	case c.fireLead < 0 || c.fireLead > time.Minute:
		return c, fmt.Errorf("--fire-lead: must be between 0 and 1m, got %s", c.fireLead)
	}
	if err := checkAlertFlags(c); err != nil {
		return c, err
	}
	if err := cluster.ValidNamespace(c.namespace); err != nil {
		return c, fmt.Errorf("--namespace: %v", err)
	}
	if _, err := parseLevel(c.logLevel); err != nil {
		return c, fmt.Errorf("--log-level: %v", err)
	}
	if c.serverIP == "" {
		c.serverIP = detectIP()
	} else if net.ParseIP(c.serverIP) == nil {
		return c, fmt.Errorf("--server-ip: %q is not an IP address", c.serverIP)
	}
	if c.advertiseURL, err = advertiseURL(c.advertiseURL, c.listen, c.serverIP, c.tls.api()); err != nil {
		return c, fmt.Errorf("--advertise-url: %v", err)
	}
	if c.instanceID == "" {
		c.instanceID = defaultInstanceID(c.serverIP)
	} else if strings.ContainsAny(c.instanceID, "/\n\r\t ") || len(c.instanceID) > 128 {
		return c, fmt.Errorf("--instance-id: %q must be at most 128 characters without '/' or spaces", c.instanceID)
	}
	return c, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

func newLogger(c serveConfig) *slog.Logger {
	level, _ := parseLevel(c.logLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

func serve(args []string) int {
	c, err := parseServe(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ejserver serve:", err)
		return 2
	}
	log := newLogger(c)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := runPeer(ctx, c, log); err != nil {
		log.Error("ejserver stopped", "err", err)
		return 1
	}
	log.Info("ejserver stopped")
	return 0
}

// runPeer runs one peer until ctx ends, then shuts down in order: no new fires, in-flight webhooks finish
// (bounded), the ZooKeeper session closes (its ephemeral nodes go at once, so the others reshard and fail
// over without waiting for the session timeout), history is flushed, the API stops.
func runPeer(ctx context.Context, c serveConfig, log *slog.Logger) error {
	clk := clock.Real{}
	host, _ := os.Hostname()
	me := cluster.Identity{InstanceID: c.instanceID, ServerIP: c.serverIP, Hostname: host, APIAddress: c.listen,
		Version: version, StartedAt: clk.Now().UTC()}
	log = log.With("instance", c.instanceID)

	allow, err := webhook.ParseAllowList(c.webhookAllow)
	if err != nil {
		return fmt.Errorf("--webhook-allow: %w", err)
	}
	store, err := openHistory(ctx, c, log)
	if err != nil {
		return err
	}
	defer store.Close()
	// the history writer keeps out of the way of this peer's bursts of webhooks: it writes between them
	activity := dispatch.NewActivity(clk)
	writer := history.NewWriter(store, history.WriterConfig{Logger: log, StartHold: historyStartHold,
		CommitWindow: historyCommitWindow, Yield: func() time.Duration { return activity.Busy(historyYieldGuard) },
		NoStatusTraces: !c.historyStatusTraces, QueueSize: c.historyQueue}) // the executor then builds no trace either (dispatch.StatusTracer)
	if err := writer.Start(context.Background()); err != nil {
		return err
	}
	defer writer.Stop()
	// the garbage collector runs between the bursts too, rather than in the middle of one
	collector := dispatch.NewCollector(dispatch.CollectorConfig{Activity: activity, Clock: clk, Logger: log})
	if c.gcBetweenBursts {
		collector.Start()
	}
	defer collector.Stop()
	// and less often where it would run every second or two: room for the heap as the peer allocates, up to
	// --gc-headroom
	pacer := newGCPacer(c.gcHeadroom, log)
	pacer.Start()
	defer pacer.Stop()
	pruner := history.NewPruner(store, history.PrunerConfig{Retention: c.historyRetention, Logger: log})
	if err := pruner.Start(context.Background()); err != nil {
		return err
	}
	defer pruner.Stop()

	tokens, err := loadTokens(c.apiTokens)
	if err != nil {
		return err
	}
	if err := checkExposure(c.listen, tokens, c.insecure, log); err != nil {
		return err
	}
	var decl jobsDoc
	if c.jobsFile != "" {
		if decl, err = readJobsDoc(c.jobsFile); err != nil {
			return fmt.Errorf("--jobs: %w", err)
		}
	}
	apiTLS, err := c.tls.apiTLS(log)
	if err != nil {
		return err
	}
	zkTLS, err := c.tls.zkTLS()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.listen, err)
	}
	// The port serves from now on: until the peer is ready, the gate answers 503 at once (a request left in
	// the backlog would run when the peer came up, after its client gave up).
	var apiGate gate
	srv := &http.Server{Handler: &apiGate, ReadHeaderTimeout: 10 * time.Second, TLSConfig: apiTLS,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)} // failed handshakes are a client's problem
	srvErr := make(chan error, 1)
	go func() {
		if apiTLS != nil {
			srvErr <- srv.ServeTLS(ln, "", "") // the certificate comes from apiTLS.GetCertificate
			return
		}
		srvErr <- srv.Serve(ln)
	}()
	if zkTLS != nil {
		if err := cluster.ProbeTLS(ctx, strings.Split(c.zk, ","), zkTLS); err != nil {
			srv.Close()
			return zkTLSError(err)
		}
	}
	log.Info("connecting to ZooKeeper", "zk", c.zk, "namespace", c.namespace, "tls", zkTLS != nil)
	sess, err := dialZK(ctx, c, zkTLS, log)
	if err != nil {
		srv.Close()
		return err
	}
	defer sess.Close()
	var sched *dispatch.Scheduler // made below, before the registry starts (its campaigns ask Due)
	due := func(job string) time.Time {
		if sched == nil {
			return time.Time{}
		}
		return sched.Due(job, dispatch.DefaultReshardWait)
	}
	reg, err := cluster.NewRegistry(sess, cluster.RegistryConfig{Namespace: c.namespace, Identity: me, Logger: log,
		Due: due})
	if err != nil {
		srv.Close()
		return err
	}

	tracer, stopTracing, err := tracing.New(ctx, tracing.Config{Endpoint: c.otlpEndpoint, Instance: c.instanceID, Version: version,
		FromEnv: os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""})
	if err != nil {
		srv.Close()
		return fmt.Errorf("--otlp-endpoint: %w", err)
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(flushCtx) // the spans still batched go out
	}()
	if tracer.On() {
		log.Info("tracing: spans exported over OTLP/HTTP", "endpoint", c.otlpEndpoint)
	}
	sender := webhook.New(webhook.Config{MaxConcurrent: c.maxConcurrent, Allow: allow, UserAgent: "ejserver/" + version, Logger: log,
		Tracer: tracer})
	defer sender.Close()
	secret, err := callbackSecret(c, reg, log)
	if err != nil {
		srv.Close()
		return err
	}
	build := currentBuild()
	mets := metrics.New(metrics.Config{PerJobLabels: c.metricsPerJob, Logger: log,
		Build: metrics.Build{Version: build.Version, Commit: build.Commit, GoVersion: build.Go}, Sources: metrics.Sources{
			InFlight: sender.InFlight, Waiting: sender.Waiting,
			HistoryStats: func() (int64, int64, int64, int64) {
				st := writer.Stats()
				return int64(st.Backlog), st.Written, st.Dropped, st.Failures
			},
			HistoryTracesShed:   func() int64 { return writer.Stats().TracesShed },
			HistoryDegraded:     func() bool { return writer.Health().State == history.HealthDegraded },
			HistoryRollupBehind: rollupBehind(store),
			SessionHealthy:      sess.Healthy, SessionLease: sess.Lease, Reconnects: sess.Reconnects, Expirations: sess.Expirations,
			Leaderships:       reg.Leaderships,
			ScheduledJobs:     func() int { return sched.Len() },
			GCBetweenBursts:   collector.Collections,
			RegistryBacklog:   reg.ReadsWaiting,
			ZooKeeperWrites:   func() metrics.ZooKeeperWrites { return metrics.ZooKeeperWrites(reg.WriteStats()) },
			ZooKeeperRequests: func() metrics.ZooKeeperRequests { return metrics.ZooKeeperRequests(sess.Requests()) },
		}})
	alerting := newAlerts(c, reg, urlChecker{allow}.CheckURL, clk, log)
	leases, err := async.New(async.Config{Registry: reg, Sender: sender, Recorder: writer, History: store, Observer: mets,
		Follower: alerting.svc,
		Secret:   secret, AdvertiseURL: c.advertiseURL, Retention: c.leaseRetention, Tracer: tracer, Clock: clk, Logger: log})
	if err != nil {
		srv.Close()
		return err
	}
	coord := sharding.NewCoordinator(sharding.CoordinatorConfig{Registry: reg, Logger: log, ServerGC: c.serverGC, Observer: mets,
		FireLead: c.fireLead,                                                                          // ReshardWait: the default, as the executor's
		Fires:    func(job string) (time.Time, func(time.Time) time.Time) { return sched.Fires(job) }, // sched: made below
		Firing:   func(job string) bool { return sched.Firing(job, fireGuard) }, Due: due,
		QuietAt: func(job string) (time.Time, bool) { return sched.QuietAt(job, fireGuard) }})
	// executions that vanished peers left running, and that nobody runs again, are recorded as lost
	lost := failover.NewLost(failover.LostConfig{History: store, Recorder: writer, Me: me, Clock: clk, Logger: log})
	// Calendars (issue 24): a watched cache of the cluster's calendars that the executor's steering reads;
	// deleting one is refused while the service's job cache shows jobs naming it.
	var svc *service.Service
	wfService := engine.NewService(reg, clk)
	calendars := calendarstore.New(calendarstore.Config{Registry: reg, Logger: log, Clock: clk,
		UsedBy: func(name string) []string { return svc.JobsUsingCalendar(name) }, UsedByWorkflows: wfService.UsingCalendar})
	wfService.UseCalendars(calendars)
	faults, err := killAt(log)
	if err != nil {
		srv.Close()
		return err
	}
	exec := dispatch.NewExecutor(dispatch.ExecutorConfig{
		FireLead: c.fireLead, TriggerRead: faults.triggerRead,
		Steering: calendars, Counters: reg,
		Registry: reg, Sender: sender, Recorder: writer, Resharder: coord, Observer: mets, Logger: log, Clock: clk,
		Activity: activity, Async: leases, Follower: alerting.svc, Lost: lost, Tracer: tracer,
		NextFire:   func(job string) time.Time { return sched.Next(job) },
		ScheduleOf: func(job string) dispatch.Schedule { return sched.Schedule(job) },
		// a suspension longer than the session timeout comes back, if at all, to an expired session
		SessionGrace: c.sessionTimeout,
	})
	sched = dispatch.NewScheduler(clk, log, exec.Fire)
	sched.SetMaxLead(c.fireLead)
	fo := failover.NewManager(failover.ManagerConfig{Registry: reg, Runner: exec, Logger: log, Observer: mets, Lost: lost})
	reg.OnEvent(scheduleOn(reg, sched, exec, log))
	reg.OnEvent(func(ev cluster.Event) {
		if ev.Kind == cluster.JobRemoved {
			mets.ForgetJob(ev.Job)
			alerting.svc.ForgetJob(ev.Job)
		}
	})
	if err := coord.Start(ctx); err != nil {
		return err
	}
	defer coord.Stop()
	if err := fo.Start(ctx); err != nil {
		return err
	}
	defer fo.Stop()
	sched.Start()
	// abort undoes the start-up when a later step fails (the deferred stops do the rest)
	abort := func(err error) error {
		sched.Stop()
		exec.Drain(0)
		reg.Stop()
		srv.Close()
		return err
	}
	if err := calendars.Start(ctx); err != nil { // before the jobs load: their first fires see the calendars
		return abort(err)
	}
	defer calendars.Stop()
	if err := reg.Start(ctx); err != nil {
		return abort(fmt.Errorf("load the registry: %w", err))
	}
	if err := leases.Start(ctx); err != nil {
		return abort(err)
	}
	defer leases.Stop()

	// Notification channels: a watched cache of the cluster's channels, and the dispatcher that delivers
	// to them off the dispatch path. The dispatcher is the notify.Deliverer alert rules hand their
	// notifications to.
	var dispatcher *notify.Dispatcher // set before the store's watch starts, which is what calls OnRemoved
	channels := notify.NewStore(notify.StoreConfig{Registry: reg, Logger: log, Clock: clk,
		OnRemoved: func(name string) { mets.ForgetChannel(name); dispatcher.Forget(name) }})
	dispatcher = notify.NewDispatcher(notify.DispatcherConfig{Channels: channels, Recorder: store, Observer: mets,
		Dial:     allow.DialContext(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}),
		Instance: c.instanceID, UserAgent: "ejserver/" + version, Clock: clk, Logger: log})
	if err := channels.Start(ctx); err != nil {
		return abort(err)
	}
	defer channels.Stop()
	if err := dispatcher.Start(ctx); err != nil {
		return abort(err)
	}
	defer dispatcher.Stop()
	alerting.start(dispatcher, channels, log)
	defer alerting.stop()
	// workflows: the peer holding the engine duty advances every run (a fire's end reaches it through the
	// fire ledger the alert service keeps)
	// and tells a run's trouble through the workflow's alert rules (links to the run's console page)
	wfAlerts := wfalert.New(wfalert.Config{Registry: reg, Deliverer: dispatcher, Namespace: c.namespace,
		ConsoleURL: c.advertiseURL, Clock: clk, Logger: log})
	wfAlerts.Start()
	defer wfAlerts.Stop()
	workflows := engine.NewEngine(engine.EngineConfig{Registry: reg, Recorder: workflowHistory{store}, Observer: mets,
		Listener: wfAlerts, Calendars: calendars, Clock: clk, Logger: log, Fault: faults.engine})
	if err := workflows.Start(); err != nil {
		return abort(err)
	}
	defer workflows.Stop()
	// a cancelled run's node items stop on every peer, as CANCEL_PREVIOUS stops an item
	stopper := engine.NewStopper(reg, exec, clk, log)
	stopper.Start()
	defer stopper.Stop()

	// The audit trail: changes through the API, the jobs file's applies, refused requests (folded) and
	// changes made in ZooKeeper outside the API (noticed by the registry's watches, recorded once).
	auditRec := audit.NewRecorder(audit.RecorderConfig{Store: store, Instance: c.instanceID, Logger: log, Clock: clk})
	if err := auditRec.Start(context.Background()); err != nil {
		return abort(err)
	}
	defer auditRec.Stop()
	external := cluster.NewExternalWatch(cluster.ExternalWatchConfig{Registry: reg, OnChange: recordExternal(auditRec), Logger: log})
	if err := external.Start(ctx); err != nil {
		return abort(err)
	}
	defer external.Stop()
	backfills, backfillRunner := newBackfills(reg, calendars, sender, writer, activity, c.backfillPacing, c.backfillRetain, clk, log)
	if err := backfillRunner.Start(ctx); err != nil {
		return abort(err)
	}
	defer backfillRunner.Stop()
	replays := replay.NewReplayer(reg, store, sender, writer, clk, log)
	defer replays.Stop()

	svc = service.New(service.Config{Registry: reg, Scheduler: sched, Runtime: exec, History: store,
		Targets: urlChecker{allow}, NewSecret: webhook.GenerateSecret, DescribeCron: cronexpr.Describe, Logger: log,
		Calendars: calendars, Counters: reg})
	if err := checkWorkflowJobs(decl, reg.JobExists); err != nil { // before anything of the file is stored
		return abort(err)
	}
	if err := applyJobs(ctx, svc, decl.Jobs, auditRec, log); err != nil {
		return abort(err)
	}
	if err := applyWorkflows(ctx, wfService, decl.Workflows, auditRec, log); err != nil {
		return abort(err)
	}
	handler := api.New(api.Config{Service: svc, Health: readiness{sess: sess, writer: writer, store: store}, Logger: log,
		Metrics: mets.Handler(), Tokens: tokens, MetricsAuth: c.metricsAuth, Console: web.Handler(), Callbacks: leases,
		Channels: notify.NewService(channels, dispatcher, c.namespace, clk), Notifications: store, Alerts: alerting.svc,
		Audit: auditRec, AuditLog: store, Workflows: wfService,
		Backfills: backfills, Replays: replays,
		Calendars: calendars, Steering: svc})
	apiGate.open(handler)
	log.Info("ejserver serving", "listen", ln.Addr().String(), "tls", apiTLS != nil, "client_certs", c.tls.clientCA != "",
		"jobs", len(reg.Jobs()), "server_ip", c.serverIP,
		"version", build.Version, "commit", build.Commit)

	select {
	case <-ctx.Done():
		log.Info("shutting down: no new fires; waiting for in-flight webhooks", "bound", c.shutdownTimeout)
	case err := <-srvErr:
		log.Error("API server failed", "err", err)
	}
	// the others hold the fires of this peer's items from now until their leaders reshard them away, once the
	// session closes; a fire they prepared before they saw this peer leave is not held, so this peer goes on
	// firing for one fire lead (the held fires skip the items it ran)
	leaveCtx, leaveCancel := context.WithTimeout(context.Background(), leaveWait)
	if err := reg.Leave(leaveCtx); err != nil {
		log.Warn("could not hand this peer's items over before stopping", "err", err)
	}
	leaveCancel()
	clock.Sleep(clk, c.fireLead, nil)
	sched.Stop()
	backfillRunner.Stop() // its backfills' owner nodes go: another peer continues them
	replays.Stop()
	exec.Drain(c.shutdownTimeout)
	leases.Stop()    // accepted items keep their leases: another peer takes the watcher duty
	workflows.Stop() // another peer takes the engine duty at once
	wfAlerts.Stop()  // after the engine: its last runs' notifications are handed to the dispatcher
	stopper.Stop()
	alerting.stop()   // after dispatch: the last items' ends are decided, then handed to the dispatcher
	dispatcher.Stop() // queued notifications get a few seconds to go out
	channels.Stop()
	calendars.Stop()
	fo.Stop()
	coord.Stop()
	reg.Stop()
	withdraw(reg, log)
	sess.Close() // removes this peer's other ephemeral nodes now (peer, duties, any job node left)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return nil
}

// fireGuard is how long before a fire's hand-off and after its scheduled time a resharding not made by a fire
// is put off (dispatch.Scheduler.Firing): it covers a fire's items being decided and begun on every peer, round
// trips to a loaded ZooKeeper included.
const fireGuard = 3 * time.Second

// the history writer tells the executor whether to build status traces at all
var _ dispatch.StatusTracer = (*history.Writer)(nil)

// historyYieldGuard is how far around a burst of webhooks the history writer holds off: about the time one
// batch of its writes takes on a small machine, so a batch begun just before a burst ends before it.
const historyYieldGuard = 100 * time.Millisecond

// historyStartHold is how long an item's start record waits in the history writer's queue for its end to take
// its place: an item that answers within it (after its burst's quiet, up to 250 ms) costs the history one row
// written instead of a row inserted and then updated, each with its indexes and the stats rollup's triggers
// (about half of a busy peer's history CPU in steady-10k, docs/benchmarks.md). A longer item shows as
// RUNNING in the history that much later.
const historyStartHold = time.Second

// minHistoryQueue and maxHistoryQueue bound --history-queue (default history.DefaultQueueSize): below two of
// the writer's batches (500 records each) a peer drops records while one write is in flight; past ~3 GB held
// a value is a typo more likely than a plan. A peer of three at 100,000 jobs firing once a minute runs ~830
// items a second, ~1,250 while one of the others restarts, and in such a restart on a shared 2-core host its
// PostgreSQL writes fell up to ~38,000 records behind (docs/benchmarks.md): such a peer wants 100,000 (~65 MB
// at most).
const (
	minHistoryQueue = 1_000
	maxHistoryQueue = 5_000_000
)

// historyCommitWindow is how long the history writer lets a wave of item ends gather into one transaction
// while more keep arriving (5 ms at a time): each transaction rewrites the pages every one touches (the
// B-trees' upper levels and last leaves, the stats rollup's cells), so a wave written as one is fewer pages
// than as several. An item's end is acknowledged in ZooKeeper after its record's commit, up to this much later.
const historyCommitWindow = 50 * time.Millisecond

// scheduleOn keeps the scheduler in step with the registry: a job is scheduled when it is loaded, re-scheduled
// when its config changes, and unscheduled at once when it is deleted or disabled.
func scheduleOn(reg *cluster.Registry, sched *dispatch.Scheduler, exec *dispatch.Executor, log *slog.Logger) func(cluster.Event) {
	return func(ev cluster.Event) {
		switch ev.Kind {
		case cluster.JobAdded, cluster.JobUpdated:
			snap := reg.Job(ev.Job)
			if snap == nil {
				return
			}
			if ev.Kind == cluster.JobUpdated && ev.PrevConfig != nil && snap.Config.Cron == ev.PrevConfig.Cron &&
				snap.Config.TimeZone == ev.PrevConfig.TimeZone && snap.Config.Disabled == ev.PrevConfig.Disabled &&
				sched.Next(ev.Job) != (time.Time{}) {
				return // the schedule did not change
			}
			if snap.Config.Disabled || snap.ConfigErr != nil || snap.Config.Cron == "" {
				sched.Remove(ev.Job)
				if snap.Config.Disabled {
					exec.CancelJob(ev.Job)
				}
				return
			}
			loc, err := cronexpr.LoadLocation(snap.Config.TimeZone)
			if err != nil {
				log.Error("job not scheduled: bad time zone", "job", ev.Job, "err", err)
				sched.Remove(ev.Job)
				return
			}
			s, err := cronexpr.ParseShared(snap.Config.Cron, loc)
			if err != nil {
				log.Error("job not scheduled: bad cron", "job", ev.Job, "err", err)
				sched.Remove(ev.Job)
				return
			}
			fresh := sched.Next(ev.Job).IsZero()
			sched.SetAt(ev.Job, s, snap.Ref()) // each fire reads the job through its entry
			if fresh {
				exec.Scheduled(snap, s) // a fire handed off before may still give it items to run
			}
		case cluster.JobRemoved:
			sched.Remove(ev.Job)
			exec.CancelJob(ev.Job)
		case cluster.TriggerRequested:
			exec.Trigger(ev.Job)
		case cluster.ItemsChanged:
			exec.ItemsChanged(ev.Job) // items gained after this peer decided a fire run for it
		}
	}
}

func dialZK(ctx context.Context, c serveConfig, zkTLS *tls.Config, log *slog.Logger) (*cluster.Session, error) {
	servers := strings.Split(c.zk, ",")
	for attempt := 1; ; attempt++ {
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		sess, err := cluster.Dial(dctx, cluster.SessionConfig{Servers: servers, SessionTimeout: c.sessionTimeout, Digest: c.zkDigest, Logger: log, TLS: zkTLS})
		cancel()
		if err == nil {
			return sess, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("stopped while connecting to ZooKeeper: %w", err)
		}
		log.Warn("ZooKeeper not reachable yet; retrying", "zk", c.zk, "attempt", attempt, "err", err)
	}
}

// openHistory opens the execution history: SQLite in the data directory (a local file that can't be opened
// is an error), or PostgreSQL, which may be down at start-up: the peer then fires anyway and connects when it
// can (history.Deferred).
func openHistory(ctx context.Context, c serveConfig, log *slog.Logger) (history.Store, error) {
	if c.historyDSN != "" {
		if !strings.HasPrefix(c.historyDSN, "postgres://") && !strings.HasPrefix(c.historyDSN, "postgresql://") {
			return nil, fmt.Errorf("--history-dsn: must be a postgres:// URL (SQLite is the default, in --data-dir)")
		}
		return history.OpenDeferred(ctx, c.historyDSN, log, nil), nil
	}
	if err := os.MkdirAll(c.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	store, err := history.Open(ctx, filepath.Join(c.dataDir, "history.db"), history.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("open the history store: %w", err)
	}
	return store, nil
}

// rollupBehind reads how far the store's stats rollup is behind, in seconds (NaN when it cannot be read), or
// is nil when the store does not say.
func rollupBehind(store history.Store) func() float64 {
	r, ok := store.(history.RollupReporter)
	if !ok {
		return nil
	}
	return func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		d, err := r.RollupBehind(ctx)
		if err != nil {
			return math.NaN()
		}
		return d.Seconds()
	}
}

// urlChecker adapts the webhook target policy to the service.
type urlChecker struct{ p *webhook.TargetPolicy }

func (u urlChecker) CheckURL(s string) error {
	parsed, err := url.Parse(s)
	if err != nil {
		return err
	}
	return u.p.CheckURL(parsed)
}

// readiness answers /readyz: ready while the ZooKeeper session is held; the history store's state is
// reported (degraded means dispatch goes on while records are held or dropped).
type readiness struct {
	sess   *cluster.Session
	writer *history.Writer
	store  history.Store
}

// Ready is true while the ZooKeeper session is held. The history store is pinged and its state reported:
// "degraded" means jobs keep firing while records queue up (and are dropped once the queue is full).
func (r readiness) Ready(ctx context.Context) (bool, map[string]any) {
	zkOK := r.sess.Healthy()
	zk := map[string]any{"status": "ok", "lease": r.sess.Lease()}
	if !zkOK {
		zk["status"] = "no session"
	}
	hist := map[string]any{"status": "ok"}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := r.store.Ping(pctx)
	h := r.writer.Health()
	st := r.writer.Stats()
	if err != nil || h.State == history.HealthDegraded {
		hist["status"] = "degraded"
		hist["detail"] = "jobs keep firing; execution records queue up and are dropped when the queue is full"
		if err != nil {
			hist["error"] = err.Error()
		} else {
			hist["error"] = h.LastError
		}
	}
	hist["backlog"], hist["dropped"] = st.Backlog, st.Dropped
	return zkOK, map[string]any{"zookeeper": zk, "history": hist}
}

// advertiseURL checks --advertise-url, or derives it from --listen: http(s)://{listen} (https when the API
// serves TLS), a wildcard host replaced by the server IP (receivers call back there).
func advertiseURL(given, listen, serverIP string, https bool) (string, error) {
	if given == "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return "", fmt.Errorf("cannot derive it from --listen %q: %v", listen, err)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = serverIP
		}
		scheme := "http://"
		if https {
			scheme = "https://"
		}
		return scheme + net.JoinHostPort(host, port), nil
	}
	u, err := url.Parse(given)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q must be an http(s) URL with a host, such as https://ejserver.example.com", given)
	}
	return strings.TrimRight(given, "/"), nil
}

// callbackSecret reads the cluster's callback token secret from --callback-secret-file, or from (or into)
// ZooKeeper. It never logs the secret.
func callbackSecret(c serveConfig, reg *cluster.Registry, log *slog.Logger) ([]byte, error) {
	if c.callbackSecret != "" {
		b, err := os.ReadFile(c.callbackSecret)
		if err != nil {
			return nil, fmt.Errorf("--callback-secret-file: %w", err)
		}
		b = []byte(strings.TrimSpace(string(b)))
		if len(b) < lease.MinSecretLen {
			return nil, fmt.Errorf("--callback-secret-file: the secret must be at least %d bytes, the file holds %d", lease.MinSecretLen, len(b))
		}
		return b, nil
	}
	b, err := reg.CallbackSecret()
	if err != nil {
		return nil, fmt.Errorf("read the callback secret from ZooKeeper: %w", err)
	}
	if !reg.Digested() {
		log.Warn("the callback token secret is in ZooKeeper without --zk-digest: anyone who can read ZooKeeper can mint callback tokens (as they can change jobs); set --zk-digest or --callback-secret-file in production")
	}
	return b, nil
}
