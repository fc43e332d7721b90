// Package api is ejserver's REST API on echo: routes, request and response types, error mapping (RFC 9457
// problem+json) and the swag annotations the OpenAPI spec is generated from. Echo's types stay inside this
// package so a move to echo v5 touches one folder.
//
//	@title						ejserver API
//	@version					1
//	@description				Distributed, HTTP-first scheduled jobs: register a job with a cron schedule and a webhook; at each fire every shard item is POSTed to the webhook by one live peer.
//	@BasePath					/
//	@accept						json
//	@produce					json,application/problem+json
//	@securityDefinitions.apikey	BearerAuth
//	@in							header
//	@name						Authorization
//	@description				"Bearer <token>": an admin token may do everything, an operator token reads, triggers, enables and disables, a viewer token only reads; a token with a scope sees only its jobs (404 for the others). Not needed when the server runs without tokens (then it listens on loopback only).
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	echoSwagger "github.com/swaggo/echo-swagger"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/loadahead"
	"github.com/ejserver/ejserver/internal/service"
	"github.com/ejserver/ejserver/openapi"
)

// Service is what the API needs (service.Service satisfies it).
type Service interface {
	CreateJob(ctx context.Context, cfg ejserver.JobConfig) (service.JobView, string, error)
	GetJob(ctx context.Context, name string) (service.JobView, error)
	JobConfig(ctx context.Context, name string) (ejserver.JobConfig, error)
	ListJobs(ctx context.Context, f service.JobFilter) (service.JobPage, error)
	ReplaceJob(ctx context.Context, name string, cfg ejserver.JobConfig, check service.VersionCheck, guard service.Guard) (service.JobView, string, error)
	DeleteJob(ctx context.Context, name string) error
	SetJobDisabled(ctx context.Context, name string, disabled bool) (service.JobView, error)
	TriggerJob(ctx context.Context, name string, req service.TriggerRequest) (service.TriggerResult, error)
	Sharding(ctx context.Context, name string) ([]service.ItemView, error)
	SetItemDisabled(ctx context.Context, name string, item int, disabled bool) error
	SetJobServerDisabled(ctx context.Context, job, ip string, disabled bool) error
	Dump(ctx context.Context, name string) (string, error)
	Servers(ctx context.Context) ([]service.ServerView, error)
	SetServerDisabled(ctx context.Context, ip string, disabled bool) (int, error)
	Instances(ctx context.Context) ([]service.InstanceView, error)
	CronNext(ctx context.Context, q service.CronQuery) ([]time.Time, string, error)
	Executions(ctx context.Context, f history.ExecutionFilter) (history.ExecutionPage, error)
	Execution(ctx context.Context, id string) (ejserver.Execution, error)
	Traces(ctx context.Context, f history.TraceFilter) ([]ejserver.StatusTrace, error)
	JobLabel(ctx context.Context, name string) (string, error)
	JobsLabeled(labels []string) []string
	JobStats(ctx context.Context, q history.StatsQuery, window time.Duration) (history.JobStats, bool, error)
	JobPoints(ctx context.Context, q history.StatsQuery, window time.Duration) (history.PointList, bool, error)
	ClusterStats(ctx context.Context, q history.StatsQuery, window time.Duration) (history.ClusterStats, bool, error)
	LoadAhead(horizon time.Duration, visible func(name, label string) bool) (loadahead.Load, error)
}

// Health reports readiness for /readyz.
type Health interface {
	// Ready returns whether this peer can serve and fire, and a report of each dependency.
	Ready(ctx context.Context) (bool, map[string]any)
}

// Config configures the API.
type Config struct {
	Service Service
	Health  Health
	Logger  *slog.Logger
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// Metrics serves /metrics when set.
	Metrics http.Handler
	// Tokens are the credentials /api/v1 accepts (bearer tokens, and client certificates mapped to a line
	// by name); with none, the API is open (cmd then listens on loopback only unless told --insecure).
	// /healthz, /readyz, the spec and the docs page are always open. What each token may do on each route
	// is routeRules'.
	Tokens []Token
	// MetricsAuth makes /metrics need an unscoped token too (any role; a scoped token gets 404).
	MetricsAuth bool
	// Console serves the web console at / when set.
	Console http.Handler
	// Middleware runs on /api/v1 routes, after the token check and the body limit.
	Middleware []echo.MiddlewareFunc
	// Callbacks, when set, serves the callbacks of accepted items (authorised by their callback tokens).
	Callbacks Callbacks
	// Channels, when set, serves /api/v1/channels; Notifications, /api/v1/notifications.
	Channels      Channels
	Notifications Notifications
	// Audit, when set, records every change made through /api/v1 and every refused request (folded);
	// AuditLog serves /api/v1/audit (503 without it).
	Audit    AuditRecorder
	AuditLog AuditLog
	// Alerts, when set, serves the cluster's default alert rules.
	Alerts AlertDefaults
	// Workflows, when set, serves /api/v1/workflows.
	Workflows Workflows
	// Backfills, when set, serves /api/v1/jobs/{jobName}/backfill (issue 24).
	Backfills Backfills
	// Replays, when set, serves POST /api/v1/executions/{id}/replay (issue 24).
	Replays Replays
	// Calendars, when set, serves /api/v1/calendars; Steering, a job's pause, resume and next fires.
	Calendars CalendarStore
	Steering  Steering
}

// New returns the HTTP handler of the API.
func New(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = echo.ExtractIPDirect()
	e.HTTPErrorHandler = errorHandler(cfg.Logger)
	e.Use(middleware.Recover())
	e.Use(middleware.RequestID())
	e.Use(requestLogger(cfg.Logger))
	e.Use(clientCertName()) // before the token check of /api/v1, which maps the name to a tokens-file line

	h := &handlers{svc: cfg.Service, health: cfg.Health, maxBody: cfg.MaxBodyBytes}
	e.GET("/healthz", h.healthz)
	e.GET("/readyz", h.readyz)

	e.GET("/openapi/swagger.json", blob("application/json", openapi.SwaggerJSON))
	e.GET("/openapi/swagger.yaml", blob("application/yaml", openapi.SwaggerYAML))
	e.GET("/openapi/openapi3.json", blob("application/json", openapi.OpenAPI3JSON))
	docs := echoSwagger.EchoWrapHandler(func(c *echoSwagger.Config) {
		c.URLs = []string{"/openapi/openapi3.json", "/openapi/swagger.json"} // not its default doc.json: swag's registry is unused
	}, echoSwagger.PersistAuthorization(true))
	e.GET("/swagger/*", docs)
	e.GET("/docs", func(c echo.Context) error { return c.Redirect(http.StatusFound, "/swagger/index.html") })

	if cfg.Callbacks != nil {
		callbackRoutes(e, cfg.Callbacks) // before the token group: its routes match first
	}
	v1 := e.Group("/api/v1")
	if cfg.Audit != nil {
		v1.Use(auditDenials(cfg.Audit)) // first: it sees the token check's 401s
	}
	if len(cfg.Tokens) > 0 {
		v1.Use(authenticate(cfg.Tokens)) // first: a stranger gets 401 whatever it sends
	}
	v1.Use(h.authorize) // without tokens every caller is an unscoped admin
	v1.Use(middleware.BodyLimit(bodyLimit(cfg.MaxBodyBytes)))
	if cfg.Audit != nil {
		v1.Use((&auditor{rec: cfg.Audit, svc: cfg.Service, channels: cfg.Channels}).middleware)
	}
	for _, mw := range cfg.Middleware {
		v1.Use(mw)
	}
	v1.POST("/jobs", h.createJob)
	v1.GET("/jobs", h.listJobs)
	v1.GET("/jobs/:jobName", h.getJob)
	v1.PUT("/jobs/:jobName", h.replaceJob)
	v1.DELETE("/jobs/:jobName", h.deleteJob)
	v1.POST("/jobs/:jobName/trigger", h.triggerJob)
	v1.POST("/jobs/:jobName/disable", h.disableJob)
	v1.POST("/jobs/:jobName/enable", h.enableJob)
	v1.GET("/jobs/:jobName/sharding", h.sharding)
	v1.POST("/jobs/:jobName/sharding/:item/disable", h.disableItem)
	v1.POST("/jobs/:jobName/sharding/:item/enable", h.enableItem)
	v1.POST("/jobs/:jobName/servers/:ip/disable", h.disableJobServer)
	v1.POST("/jobs/:jobName/servers/:ip/enable", h.enableJobServer)
	v1.GET("/jobs/:jobName/executions", h.jobExecutions)
	v1.GET("/jobs/:jobName/traces", h.jobTraces)
	v1.GET("/jobs/:jobName/dump", h.dump)
	v1.GET("/jobs/:jobName/stats", h.jobStats)
	v1.GET("/jobs/:jobName/points", h.jobPoints)
	v1.GET("/stats", h.clusterStats)
	v1.GET("/schedule/load", h.loadAhead)
	v1.GET("/executions", h.executions)
	v1.GET("/executions/:id", h.execution)
	v1.GET("/servers", h.servers)
	v1.POST("/servers/:ip/disable", h.disableServer)
	v1.POST("/servers/:ip/enable", h.enableServer)
	v1.GET("/instances", h.instances)
	v1.GET("/cron/next", h.cronNext)
	v1.GET("/auth/whoami", whoami)
	v1.GET("/audit", h.listAudit(cfg.AuditLog))
	channelRoutes(v1, cfg.Channels, cfg.Notifications, h.jobSet)
	workflowRoutes(v1, cfg.Workflows)
	backfillRoutes(v1, cfg.Backfills)
	if cfg.Replays != nil {
		v1.POST("/executions/:id/replay", h.replay(cfg.Replays))
	}
	steerRoutes(v1, cfg.Calendars, cfg.Steering)
	if cfg.Alerts != nil {
		alertRoutes(v1, cfg.Alerts)
	}
	if cfg.Metrics != nil {
		var mws []echo.MiddlewareFunc
		if cfg.MetricsAuth && len(cfg.Tokens) > 0 {
			mws = append(mws, authenticate(cfg.Tokens), h.authorize)
		}
		e.GET("/metrics", echo.WrapHandler(cfg.Metrics), mws...)
	}
	if cfg.Console != nil {
		e.GET("/*", echo.WrapHandler(cfg.Console))
	}
	return e
}

func bodyLimit(n int64) string {
	return formatBytes(n)
}

func blob(contentType string, b []byte) echo.HandlerFunc {
	return func(c echo.Context) error { return c.Blob(http.StatusOK, contentType, b) }
}

// requestLogger logs one line per API request (never the Authorization header or bodies). Writes are the
// audit log: "api write" at info with the name of the token that made them (user), never the token.
func requestLogger(log *slog.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogMethod: true, LogURIPath: true, LogStatus: true, LogLatency: true, LogRequestID: true, LogRemoteIP: true,
		HandleError: true, // log the status the error handler sends, not 200
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level, msg := slog.LevelInfo, "api request"
			switch {
			case v.URIPath == "/healthz" || v.URIPath == "/readyz" || v.URIPath == "/metrics" ||
				strings.HasPrefix(v.URIPath, "/swagger") || strings.HasPrefix(v.URIPath, "/openapi/"):
				level = slog.LevelDebug
			case v.Method != http.MethodGet && v.Method != http.MethodHead:
				msg = "api write"
			}
			user, _ := c.Get(userKey).(string)
			log.Log(context.Background(), level, msg, "method", v.Method, "path", v.URIPath, "status", v.Status,
				"user", user, "duration_ms", v.Latency.Milliseconds(), "request_id", v.RequestID, "remote", v.RemoteIP)
			return nil
		},
	})
}
