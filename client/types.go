package client

import "time"

// JobSpec is a job as you send it (create, replace). Fields left at their zero value take ejserver's
// defaults, which are ElasticJob's; the pointer fields are the ones whose default is not the zero value.
type JobSpec struct {
	JobName string `json:"jobName"`
	// Cron is 5-field Unix cron, 6/7-field Quartz, or a descriptor (@hourly, @every 30s); "" runs the job
	// only when triggered.
	Cron     string `json:"cron,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	// ShardingTotalCount is the number of items, 1-10000.
	ShardingTotalCount     int         `json:"shardingTotalCount"`
	ShardingItemParameters string      `json:"shardingItemParameters,omitempty"`
	JobParameter           string      `json:"jobParameter,omitempty"`
	Description            string      `json:"description,omitempty"`
	Disabled               bool        `json:"disabled,omitempty"`
	JobType                string      `json:"jobType,omitempty"` // SIMPLE (default) or DATAFLOW
	StreamingProcess       bool        `json:"streamingProcess,omitempty"`
	Webhook                WebhookSpec `json:"webhook"`
	// Retry is the retry policy; nil keeps the defaults (3 attempts, 1 s initial back-off, 30 s at most).
	Retry                 *RetryPolicy `json:"retry,omitempty"`
	MaxConcurrentRequests int          `json:"maxConcurrentRequests,omitempty"`
	ReplayMissedFires     bool         `json:"replayMissedFires,omitempty"`
	// OverlapPolicy (BUFFER_ONE, SKIP, ALLOW, CANCEL_PREVIOUS; "" follows Misfire), CatchUp (none, last, all;
	// "" follows ReplayMissedFires), CatchUpWindowSeconds and JitterMs: README "Overlap, catch-up and jitter".
	OverlapPolicy        string `json:"overlapPolicy,omitempty"`
	CatchUp              string `json:"catchUp,omitempty"`
	CatchUpWindowSeconds int    `json:"catchUpWindowSeconds,omitempty"`
	JitterMs             int    `json:"jitterMs,omitempty"`
	// Async is the lease of items whose receiver answers 202 Accepted; nil keeps the defaults (60 s, 24 h).
	Async *AsyncPolicy `json:"async,omitempty"`
	// Alerts are the job's alert rules (nil: none; the cluster's default rules apply); Hooks its
	// once-per-fire hooks.
	Alerts                                *Alerts           `json:"alerts,omitempty"`
	Hooks                                 *Hooks            `json:"hooks,omitempty"`
	MonitorExecution                      *bool             `json:"monitorExecution,omitempty"` // default true
	Failover                              bool              `json:"failover,omitempty"`
	Misfire                               *bool             `json:"misfire,omitempty"`                  // default true
	MaxTimeDiffSeconds                    *int              `json:"maxTimeDiffSeconds,omitempty"`       // default -1 (no check)
	ReconcileIntervalMinutes              *int              `json:"reconcileIntervalMinutes,omitempty"` // default 10
	JobShardingStrategyType               string            `json:"jobShardingStrategyType,omitempty"`
	JobExecutorThreadPoolSizeProviderType string            `json:"jobExecutorThreadPoolSizeProviderType,omitempty"`
	JobErrorHandlerType                   string            `json:"jobErrorHandlerType,omitempty"`
	Label                                 string            `json:"label,omitempty"`
	StaticSharding                        bool              `json:"staticSharding,omitempty"`
	Overwrite                             bool              `json:"overwrite,omitempty"`
	Props                                 map[string]string `json:"props,omitempty"`
}

// WebhookSpec says where and how items are delivered.
type WebhookSpec struct {
	URL              string            `json:"url"`
	Method           string            `json:"method,omitempty"` // POST (default), PUT or PATCH
	Headers          map[string]string `json:"headers,omitempty"`
	TimeoutMs        int               `json:"timeoutMs,omitempty"`
	ConnectTimeoutMs int               `json:"connectTimeoutMs,omitempty"`
	// SecretGracePeriodSeconds: after a rotation the previous secret still signs this long (default 86400).
	SecretGracePeriodSeconds *int `json:"secretGracePeriodSeconds,omitempty"`
	// Secret ("whsec_..."): nil keeps the stored one on replace, "" removes it, a value sets or rotates it.
	Secret *string `json:"secret,omitempty"`
	// GenerateSecret has ejserver generate a secret, returned once in JobResult.GeneratedSecret.
	GenerateSecret bool `json:"generateSecret,omitempty"`
	// TLS is how requests speak TLS to a private receiver; nil keeps the stored settings on replace.
	TLS *WebhookTLSSpec `json:"tls,omitempty"`
}

// WebhookTLSSpec sets a webhook's TLS: a CA for a private receiver, a client certificate for one that
// demands it (mTLS), a server name override.
type WebhookTLSSpec struct {
	// CAPem is a PEM CA bundle that verifies the receiver instead of the system's roots.
	CAPem string `json:"caPem,omitempty"`
	// ClientCertPem and ClientKeyPem are a PEM client certificate and its key. The key is write-only: nil
	// keeps the stored one on replace (with the same certificate), "" removes it.
	ClientCertPem string  `json:"clientCertPem,omitempty"`
	ClientKeyPem  *string `json:"clientKeyPem,omitempty"`
	// ServerName is the name the receiver's certificate must hold (default: the URL's host).
	ServerName string `json:"serverName,omitempty"`
}

// RetryPolicy bounds the attempts of one item of one fire; a zero field keeps its default.
type RetryPolicy struct {
	MaxAttempts      int `json:"maxAttempts,omitempty"`
	InitialBackoffMs int `json:"initialBackoffMs,omitempty"`
	MaxBackoffMs     int `json:"maxBackoffMs,omitempty"`
}

// AsyncPolicy is the lease of an item whose receiver answered 202 Accepted (see docs/long-running.md); a zero
// field keeps its default.
type AsyncPolicy struct {
	// LeaseSeconds: how long an accepted item lives without a heartbeat (2-86400, default 60).
	LeaseSeconds int `json:"leaseSeconds,omitempty"`
	// MaxDurationSeconds: how long it may run from its first request's start (up to 7 days, default 86400).
	MaxDurationSeconds int `json:"maxDurationSeconds,omitempty"`
}

// Job is a job as ejserver returns it: its config (the webhook without secrets) and its state.
type Job struct {
	JobName                               string            `json:"jobName"`
	Cron                                  string            `json:"cron"`
	TimeZone                              string            `json:"timeZone,omitempty"`
	ShardingTotalCount                    int               `json:"shardingTotalCount"`
	ShardingItemParameters                string            `json:"shardingItemParameters,omitempty"`
	JobParameter                          string            `json:"jobParameter,omitempty"`
	Description                           string            `json:"description,omitempty"`
	Disabled                              bool              `json:"disabled"`
	JobType                               string            `json:"jobType"`
	StreamingProcess                      bool              `json:"streamingProcess"`
	Webhook                               Webhook           `json:"webhook"`
	Retry                                 RetryPolicy       `json:"retry"`
	MaxConcurrentRequests                 int               `json:"maxConcurrentRequests,omitempty"`
	ReplayMissedFires                     bool              `json:"replayMissedFires,omitempty"`
	OverlapPolicy                         string            `json:"overlapPolicy,omitempty"`
	CatchUp                               string            `json:"catchUp,omitempty"`
	CatchUpWindowSeconds                  int               `json:"catchUpWindowSeconds,omitempty"`
	JitterMs                              int               `json:"jitterMs,omitempty"`
	Async                                 AsyncPolicy       `json:"async"`
	Alerts                                Alerts            `json:"alerts"`
	Hooks                                 Hooks             `json:"hooks"`
	MonitorExecution                      bool              `json:"monitorExecution"`
	Failover                              bool              `json:"failover"`
	Misfire                               bool              `json:"misfire"`
	MaxTimeDiffSeconds                    int               `json:"maxTimeDiffSeconds"`
	ReconcileIntervalMinutes              int               `json:"reconcileIntervalMinutes"`
	JobShardingStrategyType               string            `json:"jobShardingStrategyType"`
	JobExecutorThreadPoolSizeProviderType string            `json:"jobExecutorThreadPoolSizeProviderType"`
	JobErrorHandlerType                   string            `json:"jobErrorHandlerType"`
	Label                                 string            `json:"label,omitempty"`
	StaticSharding                        bool              `json:"staticSharding"`
	Overwrite                             bool              `json:"overwrite"`
	Props                                 map[string]string `json:"props,omitempty"`

	// Status is OK, CRASHED (no instance online), DISABLED or SHARDING_FLAG (resharding pending).
	Status          string     `json:"status"`
	InstanceCount   int        `json:"instanceCount"`
	Leader          string     `json:"leader,omitempty"`
	CronDescription string     `json:"cronDescription,omitempty"`
	NextFireTime    *time.Time `json:"nextFireTime,omitempty"`
	LastFireTime    *time.Time `json:"lastFireTime,omitempty"`
	// Version is the config's version; ETag() is what If-Match takes.
	Version    int32      `json:"version"`
	Stats      *JobStats  `json:"stats,omitempty"`
	LastResult *Execution `json:"lastResult,omitempty"`
	Problems   []string   `json:"problems,omitempty"`
}

// ETag is the job's entity tag, for ReplaceJob's If-Match.
func (j *Job) ETag() string { return `"` + itoa(int(j.Version)) + `"` }

// Spec returns the job's config as a JobSpec, to change and send back with ReplaceJob: its secret and its
// webhook.tls client key are left out, which keeps the stored ones.
func (j *Job) Spec() JobSpec {
	retry, async, alerts, hooks := j.Retry, j.Async, j.Alerts, j.Hooks
	monitor, misfire := j.MonitorExecution, j.Misfire
	diff, reconcile, grace := j.MaxTimeDiffSeconds, j.ReconcileIntervalMinutes, j.Webhook.SecretGracePeriodSeconds
	var tlsSpec *WebhookTLSSpec
	if t := j.Webhook.TLS; t != nil {
		tlsSpec = &WebhookTLSSpec{CAPem: t.CAPem, ClientCertPem: t.ClientCertPem, ServerName: t.ServerName} // the key: kept
	}
	return JobSpec{JobName: j.JobName, Cron: j.Cron, TimeZone: j.TimeZone, ShardingTotalCount: j.ShardingTotalCount,
		ShardingItemParameters: j.ShardingItemParameters, JobParameter: j.JobParameter, Description: j.Description,
		Disabled: j.Disabled, JobType: j.JobType, StreamingProcess: j.StreamingProcess,
		Webhook: WebhookSpec{URL: j.Webhook.URL, Method: j.Webhook.Method, Headers: j.Webhook.Headers,
			TimeoutMs: j.Webhook.TimeoutMs, ConnectTimeoutMs: j.Webhook.ConnectTimeoutMs, SecretGracePeriodSeconds: &grace, TLS: tlsSpec},
		Retry: &retry, Async: &async, Alerts: &alerts, Hooks: &hooks, MaxConcurrentRequests: j.MaxConcurrentRequests, ReplayMissedFires: j.ReplayMissedFires,
		OverlapPolicy: j.OverlapPolicy, CatchUp: j.CatchUp, CatchUpWindowSeconds: j.CatchUpWindowSeconds, JitterMs: j.JitterMs,
		MonitorExecution: &monitor, Failover: j.Failover, Misfire: &misfire, MaxTimeDiffSeconds: &diff,
		ReconcileIntervalMinutes: &reconcile, JobShardingStrategyType: j.JobShardingStrategyType,
		JobExecutorThreadPoolSizeProviderType: j.JobExecutorThreadPoolSizeProviderType,
		JobErrorHandlerType:                   j.JobErrorHandlerType, Label: j.Label, StaticSharding: j.StaticSharding,
		Overwrite: j.Overwrite, Props: j.Props}
}

// Webhook is a job's webhook as ejserver returns it: secrets are write-only.
type Webhook struct {
	URL                      string            `json:"url"`
	Method                   string            `json:"method"`
	Headers                  map[string]string `json:"headers,omitempty"`
	TimeoutMs                int               `json:"timeoutMs"`
	ConnectTimeoutMs         int               `json:"connectTimeoutMs"`
	SecretGracePeriodSeconds int               `json:"secretGracePeriodSeconds"`
	HasSecret                bool              `json:"hasSecret"`
	// SecretRotating: a previous secret still signs too, until its grace period ends.
	SecretRotating bool `json:"secretRotating,omitempty"`
	// TLS is the webhook's TLS settings; the client key only as HasClientKey.
	TLS *WebhookTLS `json:"tls,omitempty"`
}

// WebhookTLS is a webhook's TLS settings as ejserver returns them.
type WebhookTLS struct {
	CAPem         string `json:"caPem,omitempty"`
	ClientCertPem string `json:"clientCertPem,omitempty"`
	ServerName    string `json:"serverName,omitempty"`
	HasClientKey  bool   `json:"hasClientKey"`
}

// JobStats are the execution counts of the last hour and day.
type JobStats struct {
	LastHourSuccess int64 `json:"lastHourSuccess"`
	LastHourFailure int64 `json:"lastHourFailure"`
	LastDaySuccess  int64 `json:"lastDaySuccess"`
	LastDayFailure  int64 `json:"lastDayFailure"`
}

// JobResult is the answer to a create or replace: the job, its ETag, and a secret ejserver generated on
// request (shown this once).
type JobResult struct {
	Job
	GeneratedSecret string `json:"generatedSecret,omitempty"`
}

// JobList is a page of jobs, by name.
type JobList struct {
	Items      []Job  `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
	Total      int    `json:"total"`
}

// ListJobsOptions filters and pages ListJobs.
type ListJobsOptions struct {
	// Query matches a substring of the name, description or label.
	Query string
	// Status is OK, CRASHED, DISABLED or SHARDING_FLAG.
	Status string
	Cursor string
	// Limit is the page size, 1-1000 (0: 100).
	Limit int
}

// TriggerRequest is a manual trigger: optionally another jobParameter and only some items.
type TriggerRequest struct {
	JobParameter *string `json:"jobParameter,omitempty"`
	Items        []int   `json:"items,omitempty"`
}

// TriggerResult says which instances and items a trigger reached.
type TriggerResult struct {
	TriggerID    string              `json:"triggerId"`
	JobName      string              `json:"jobName"`
	JobParameter string              `json:"jobParameter"`
	Instances    []TriggeredInstance `json:"instances"`
	Items        []int               `json:"items"`
	Message      string              `json:"message"`
}

// TriggeredInstance is one instance a trigger reached and the items it owns.
type TriggeredInstance struct {
	InstanceID string `json:"instanceId"`
	Items      []int  `json:"items"`
	Running    []int  `json:"running,omitempty"`
}

// ItemList is a job's sharding view.
type ItemList struct {
	JobName string `json:"jobName"`
	Items   []Item `json:"items"`
}

// Item is one item of a job: its owner and state.
type Item struct {
	Item      int    `json:"item"`
	Parameter string `json:"parameter"`
	Instance  string `json:"instance,omitempty"`
	ServerIP  string `json:"serverIp,omitempty"`
	// Status is DISABLED, RUNNING, SHARDING_FLAG, MISFIRE, COMPLETED or PENDING.
	Status      string       `json:"status"`
	Disabled    bool         `json:"disabled"`
	Misfire     bool         `json:"misfire"`
	Failover    string       `json:"failover,omitempty"`
	Running     *RunningItem `json:"running,omitempty"`
	LastOutcome *Outcome     `json:"lastOutcome,omitempty"`
	OwnerOnline bool         `json:"ownerOnline"`
}

// RunningItem is an item's execution in flight.
type RunningItem struct {
	InstanceID  string    `json:"instanceId"`
	ExecutionID string    `json:"executionId"`
	Source      string    `json:"source"`
	ScheduledAt time.Time `json:"scheduledAt"`
}

// Outcome is how an item's last run ended.
type Outcome struct {
	ExecutionID string    `json:"executionId"`
	InstanceID  string    `json:"instanceId"`
	Source      string    `json:"source"`
	Success     bool      `json:"success"`
	StatusCode  int       `json:"statusCode,omitempty"`
	ScheduledAt time.Time `json:"scheduledAt"`
	FinishedAt  time.Time `json:"finishedAt"`
	Permanent   bool      `json:"permanent,omitempty"`
}

// Execution is one item of one fire on one instance.
type Execution struct {
	ID                 string    `json:"id"`
	JobName            string    `json:"jobName"`
	TaskID             string    `json:"taskId"`
	ShardingItem       int       `json:"shardingItem"`
	ShardingTotalCount int       `json:"shardingTotalCount"`
	Source             string    `json:"source"`
	InstanceID         string    `json:"instanceId"`
	IP                 string    `json:"ip"`
	Hostname           string    `json:"hostname"`
	ScheduledAt        time.Time `json:"scheduledAt"`
	StartedAt          time.Time `json:"startedAt"`
	// CompletedAt is zero while the item runs.
	CompletedAt     time.Time `json:"completedAt,omitzero"`
	Success         bool      `json:"success"`
	StatusCode      int       `json:"statusCode,omitempty"`
	Attempts        int       `json:"attempts"`
	DurationMs      int64     `json:"durationMs"`
	FailureCause    string    `json:"failureCause,omitempty"`
	ResponseExcerpt string    `json:"responseExcerpt,omitempty"`
	Permanent       bool      `json:"permanent,omitempty"`

	// The fields below are set for an item whose receiver answered 202 Accepted (docs/long-running.md).

	// Async: the receiver accepted the item and reports its end through callbacks.
	Async bool `json:"async,omitempty"`
	// State is an accepted item's state: StateRunning, StateRetrying, StateSucceeded, StateFailed,
	// StateExpired or StateCancelled; "" for a synchronous item and for records older than long-running items.
	State string `json:"state,omitempty"`
	// Progress (0-100) and Message are the last heartbeat's (Message: or the completion's).
	Progress *int   `json:"progress,omitempty"`
	Message  string `json:"message,omitempty"`
	// HeartbeatAt is the last heartbeat's time; LeaseExpiresAt is when the lease runs out without another.
	HeartbeatAt    time.Time `json:"heartbeatAt,omitzero"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt,omitzero"`
	// Output is the excerpt of its output the receiver reported with its completion.
	Output string `json:"output,omitempty"`
	// TraceID is the W3C trace id the item's webhooks carried: the caller's for a traced trigger.
	TraceID string `json:"traceId,omitempty"`
	// ReplayOf is the execution this one re-runs, if it is a replay.
	ReplayOf string `json:"replayOf,omitempty"`
}

// The states of an accepted (async) item.
const (
	StateRunning   = "RUNNING"
	StateRetrying  = "RETRYING" // the lease ran out; the item is being POSTed again
	StateSucceeded = "SUCCEEDED"
	StateFailed    = "FAILED"
	StateExpired   = "EXPIRED" // the lease ran out and no attempt was left: a failure
	StateCancelled = "CANCELLED"
)

// Running reports whether the execution has not ended: an accepted item RUNNING or RETRYING, or any other
// item without CompletedAt.
func (e *Execution) Running() bool {
	switch e.State {
	case "":
		return e.CompletedAt.IsZero()
	case StateRunning, StateRetrying:
		return true
	}
	return false
}

// HeartbeatRequest is a heartbeat's body: both fields are optional.
type HeartbeatRequest struct {
	// Progress is 0-100; nil leaves the recorded progress as it is.
	Progress *int `json:"progress,omitempty"`
	// Message is up to 1024 characters ("" leaves the recorded one).
	Message string `json:"message,omitempty"`
}

// CompleteRequest ends an accepted item's attempt.
type CompleteRequest struct {
	// Status is "success" or "failure".
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// Output is an excerpt of the work's output, up to 4096 characters.
	Output string `json:"output,omitempty"`
	// HasMore (DATAFLOW jobs with streamingProcess) asks for the item to be POSTed again with the next iteration.
	HasMore bool `json:"hasMore,omitempty"`
}

// LeaseView is an accepted execution as a callback's answer shows it.
type LeaseView struct {
	ExecutionID  string `json:"executionId"`
	JobName      string `json:"jobName"`
	ShardingItem int    `json:"shardingItem"`
	// Attempt is the current attempt, from 1.
	Attempt int `json:"attempt"`
	// State is one of the State* constants. A receiver that sees anything but StateRunning in a heartbeat's
	// answer should stop working on the item.
	State    string `json:"state"`
	Progress *int   `json:"progress,omitempty"`
	Message  string `json:"message,omitempty"`
	// StartedAt is the first request's start; MaxDurationAt is when the item ends whatever the heartbeats.
	StartedAt      time.Time `json:"startedAt"`
	AcceptedAt     time.Time `json:"acceptedAt,omitzero"`
	HeartbeatAt    time.Time `json:"heartbeatAt,omitzero"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt,omitzero"`
	MaxDurationAt  time.Time `json:"maxDurationAt,omitzero"`
	// EndedAt is zero while the item runs.
	EndedAt time.Time `json:"endedAt,omitzero"`
}

// Running reports whether the item is still RUNNING, i.e. whether its receiver should go on working.
func (l *LeaseView) Running() bool { return l.State == StateRunning }

// ExecutionList is a page of executions, newest first.
type ExecutionList struct {
	Items      []Execution `json:"items"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// ExecutionFilter selects and pages executions.
type ExecutionFilter struct {
	Job  string
	Item *int
	// Success selects ended executions that succeeded (true) or failed (false).
	Success *bool
	// Source is NORMAL_TRIGGER, MISFIRE, FAILOVER or MANUAL.
	Source     string
	InstanceID string
	// From and To bound the start time: From <= startedAt < To.
	From, To time.Time
	// ScheduledAt selects one fire's items: those scheduled at that time.
	ScheduledAt time.Time
	Cursor      string
	// Limit is the page size, 1-500 (0: 50).
	Limit int
}

// Trace is one state change of a task (ElasticJob's JOB_STATUS_TRACE_LOG).
type Trace struct {
	ID             string    `json:"id"`
	JobName        string    `json:"jobName"`
	OriginalTaskID string    `json:"originalTaskId"`
	TaskID         string    `json:"taskId"`
	InstanceID     string    `json:"instanceId"`
	ExecutionType  string    `json:"executionType"`
	ShardingItems  string    `json:"shardingItems"`
	Source         string    `json:"source"`
	State          string    `json:"state"`
	Message        string    `json:"message,omitempty"`
	CreationTime   time.Time `json:"creationTime"`
}

// TraceList lists status traces.
type TraceList struct {
	Items []Trace `json:"items"`
}

// Server is one server IP across the namespace.
type Server struct {
	IP           string   `json:"ip"`
	Instances    []string `json:"instances"`
	JobCount     int      `json:"jobCount"`
	DisabledJobs []string `json:"disabledJobs"`
	Online       bool     `json:"online"`
}

// ServerList is a page of servers, in address order.
type ServerList struct {
	Items      []Server `json:"items"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

// ServerChange reports a server disabled or enabled across jobs.
type ServerChange struct {
	IP       string `json:"ip"`
	Disabled bool   `json:"disabled"`
	// Jobs counts the jobs whose servers/{ip} node was written.
	Jobs int `json:"jobs"`
}

// Instance is one ejserver peer.
type Instance struct {
	InstanceID string    `json:"instanceId"`
	ServerIP   string    `json:"serverIp"`
	Hostname   string    `json:"hostname"`
	APIAddress string    `json:"apiAddress,omitempty"`
	Version    string    `json:"version,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	JobCount   int       `json:"jobCount"`
	LeaderOf   int       `json:"leaderOf"`
	// ItemsOwned counts the shard items (of every job) this instance owns.
	ItemsOwned int `json:"itemsOwned"`
	// Self marks the peer that answered.
	Self bool `json:"self"`
}

// InstanceList is a page of instances, by id.
type InstanceList struct {
	Items      []Instance `json:"items"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

// PageOptions pages the server and instance lists.
type PageOptions struct {
	Cursor string
	// Limit is the page size, 1-1000 (0: 100).
	Limit int
}

// CronQuery asks for the next fire times of an expression.
type CronQuery struct {
	Cron string
	// TimeZone is an IANA name or GMT+8 form ("": UTC).
	TimeZone string
	// From is the start (zero: now).
	From time.Time
	// Count is how many, 1-100 (0: 5).
	Count int
	// ExcludeCalendars and IncludeCalendars apply the cluster's calendars as a job naming them would
	// (an unknown one is a 400 whose Field says which list).
	ExcludeCalendars, IncludeCalendars []string
}

// CronPreview is the next fire times of an expression.
type CronPreview struct {
	Cron        string `json:"cron"`
	TimeZone    string `json:"timeZone"`
	Description string `json:"description,omitempty"`
	// ExcludeCalendars and IncludeCalendars are the calendars applied, as asked.
	ExcludeCalendars []string    `json:"excludeCalendars,omitempty"`
	IncludeCalendars []string    `json:"includeCalendars,omitempty"`
	Next             []time.Time `json:"next"`
}

// HealthReport is /readyz's answer.
type HealthReport struct {
	Ready  bool           `json:"ready"`
	Checks map[string]any `json:"checks"`
}

// Bool returns a pointer to b, for JobSpec's optional fields.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to n, for JobSpec's optional fields.
func Int(n int) *int { return &n }

// String returns a pointer to s, for WebhookSpec.Secret.
func String(s string) *string { return &s }

// Caller is who the server takes the caller for.
type Caller struct {
	// Authenticated is false when the server runs without tokens (then every caller is an admin).
	Authenticated bool   `json:"authenticated"`
	Name          string `json:"name,omitempty"`
	// Role is admin, operator or viewer.
	Role string `json:"role"`
	// Scope is the jobs the token sees ("prefix:team-a-|label:payments"); "" for every job.
	Scope string `json:"scope,omitempty"`
	// CanWrite: the token may use some writes (admin or operator).
	CanWrite bool `json:"canWrite"`
	// Can says which kinds of action the token may take.
	Can Abilities `json:"can"`
}

// Abilities are what a caller may do, by kind of action.
type Abilities struct {
	// Operate: trigger, enable and disable jobs, items and a job's servers.
	Operate bool `json:"operate"`
	// Manage: create, replace and delete jobs (within the scope).
	Manage bool `json:"manage"`
	// Cluster: see servers and instances (unscoped tokens).
	Cluster bool `json:"cluster"`
	// Administer: change a server for every job, and other cluster-wide changes (unscoped admins).
	Administer bool `json:"administer"`
}
