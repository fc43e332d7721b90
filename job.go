package ejserver

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// JobType is SIMPLE (one POST per item per fire) or DATAFLOW (re-POST while the receiver has more).
type JobType string

// The job types.
const (
	JobTypeSimple   JobType = "SIMPLE"
	JobTypeDataflow JobType = "DATAFLOW"
)

// The sharding strategies, by ElasticJob's names.
const (
	StrategyAverage    = "AVG_ALLOCATION"
	StrategyOdevity    = "ODEVITY"
	StrategyRoundRobin = "ROUND_ROBIN"
)

// Bounds of a job configuration, documented in the README.
const (
	MaxJobNameLen          = 128
	MaxShardingTotalCount  = 10000
	MaxJobParameterLen     = 8192
	MaxDescriptionLen      = 4096
	MaxURLLen              = 2048
	MaxHeaders             = 32
	MaxTimeoutMs           = 10 * 60 * 1000
	MaxConnectTimeoutMs    = 60 * 1000
	MaxRetryAttempts       = 20
	MaxBackoffMs           = 60 * 60 * 1000
	MaxPropsLen            = 64
	DefaultTimeoutMs       = 5000 // ElasticJob's http.read.timeout.milliseconds
	DefaultConnectTimeout  = 3000 // ElasticJob's http.connect.timeout.milliseconds
	DefaultRetryAttempts   = 3
	DefaultInitialBackoff  = 1000
	DefaultMaxBackoff      = 30000
	DefaultSecretGraceSecs = 24 * 60 * 60
	MinLeaseSeconds        = 2
	MaxLeaseSeconds        = 24 * 60 * 60
	DefaultLeaseSeconds    = 60
	MaxDurationSecs        = 7 * 24 * 60 * 60
	DefaultMaxDurationSecs = 24 * 60 * 60
)

// JobConfig is a job as users write it (REST JSON, jobs.yaml) and as ejserver stores it (ElasticJob YAML in the
// job's config node). Field names are ElasticJob's where ElasticJob has the field.
type JobConfig struct {
	JobName                string  `json:"jobName"`
	Cron                   string  `json:"cron"`
	TimeZone               string  `json:"timeZone,omitempty"`
	ShardingTotalCount     int     `json:"shardingTotalCount"`
	ShardingItemParameters string  `json:"shardingItemParameters,omitempty"`
	JobParameter           string  `json:"jobParameter,omitempty"`
	Description            string  `json:"description,omitempty"`
	Disabled               bool    `json:"disabled"`
	JobType                JobType `json:"jobType"`
	// StreamingProcess (DATAFLOW only): re-POST an item while the receiver answers 2xx with {"hasMore": true}.
	StreamingProcess bool        `json:"streamingProcess"`
	Webhook          Webhook     `json:"webhook"`
	Retry            RetryPolicy `json:"retry"`
	// MaxConcurrentRequests bounds this job's in-flight webhook requests on one peer; 0 means only the peer's
	// global bound applies.
	MaxConcurrentRequests int `json:"maxConcurrentRequests,omitempty"`
	// ReplayMissedFires: when the job's first fire after the whole cluster was down finds scheduled fires that
	// nobody ran, run one MISFIRE catch-up. Off by default (like ElasticJob, missed fires are not replayed).
	ReplayMissedFires bool `json:"replayMissedFires,omitempty"`
	// Schedule steering (issue 24, README "Overlap, catch-up and jitter"): each empty or zero keeps
	// ElasticJob's behaviour. OverlapPolicy (BUFFER_ONE, SKIP, ALLOW, CANCEL_PREVIOUS) is what a fire does
	// when the previous fire's item still runs; empty derives from misfire. CatchUp (none, last, all) is how
	// many fires missed while nobody could run them run afterwards; empty derives from replayMissedFires.
	// CatchUpWindowSeconds bounds catchUp all (0: MaxCatchUpFires only). JitterMs delays each fire by a
	// deterministic 0..jitterMs offset of its job and scheduled time.
	OverlapPolicy        string `json:"overlapPolicy,omitempty" enums:"BUFFER_ONE,SKIP,ALLOW,CANCEL_PREVIOUS"`
	CatchUp              string `json:"catchUp,omitempty" enums:"none,last,all"`
	CatchUpWindowSeconds int    `json:"catchUpWindowSeconds,omitempty"`
	JitterMs             int    `json:"jitterMs,omitempty"`
	// misfireSet records, after decoding a request, whether "misfire" was present (absent: it follows
	// overlapPolicy).
	misfireSet bool
	// Async bounds long-running items: a receiver that answers 202 Accepted keeps the item RUNNING under a
	// lease it renews with heartbeats until it reports the end (docs/long-running.md).
	Async AsyncPolicy `json:"async"`
	// Alerts: which events of this job are told to whom (README "Alerts").
	Alerts Alerts `json:"alerts"`
	// Hooks: URLs POSTed once per fire for the whole cluster, before and after it.
	Hooks Hooks `json:"hooks"`

	MonitorExecution                      bool   `json:"monitorExecution"`
	Failover                              bool   `json:"failover"`
	Misfire                               bool   `json:"misfire"`
	MaxTimeDiffSeconds                    int    `json:"maxTimeDiffSeconds"`
	ReconcileIntervalMinutes              int    `json:"reconcileIntervalMinutes"`
	JobShardingStrategyType               string `json:"jobShardingStrategyType"`
	JobExecutorThreadPoolSizeProviderType string `json:"jobExecutorThreadPoolSizeProviderType"`
	JobErrorHandlerType                   string `json:"jobErrorHandlerType"`
	Label                                 string `json:"label,omitempty"`
	StaticSharding                        bool   `json:"staticSharding"`
	// Overwrite: a declarative jobs file replaces the stored config of this job at start-up (ElasticJob's
	// overwrite); without it an existing job is left as it is.
	Overwrite bool `json:"overwrite"`
	// Calendars, pause and end of the schedule (issue 24; steering.go): excludeCalendars skips fires on the
	// days of any of those calendars, includeCalendars restricts fires to the days of any of them; endAt
	// (RFC 3339) ends the schedule after that time; remainingFires (0: no limit) ends it after that many
	// scheduled fires, counted once per fire cluster-wide; pause is read-only here (POST /pause, /resume).
	ExcludeCalendars []string `json:"excludeCalendars,omitempty"`
	IncludeCalendars []string `json:"includeCalendars,omitempty"`
	EndAt            string   `json:"endAt,omitempty"`
	RemainingFires   int      `json:"remainingFires,omitempty"`
	Pause            *Pause   `json:"pause,omitempty"`

	// Props are user properties, stored with ElasticJob's config; keys starting "http.", "ejserver." or
	// "streaming." are reserved for the fields above.
	Props map[string]string `json:"props,omitempty"`
}

// Webhook says where and how an item is delivered.
type Webhook struct {
	URL              string            `json:"url"`
	Method           string            `json:"method"`
	Headers          map[string]string `json:"headers,omitempty"`
	TimeoutMs        int               `json:"timeoutMs"`
	ConnectTimeoutMs int               `json:"connectTimeoutMs"`
	// SecretGracePeriodSeconds: after a rotation the previous secret still signs requests this long.
	SecretGracePeriodSeconds int `json:"secretGracePeriodSeconds"`

	// Secret is write-only: "whsec_" + base64. On replace, an absent secret keeps the stored one, "" removes
	// it, a new value rotates to it. It never appears in JSON output (see MarshalJSON).
	Secret string `json:"secret,omitempty"`
	// GenerateSecret asks ejserver to generate a secret (returned once, in the create or replace response).
	GenerateSecret bool `json:"generateSecret,omitempty"`

	// PreviousSecret signs too until PreviousSecretExpiresAt (secret rotation). Never serialised to JSON.
	PreviousSecret          string    `json:"-"`
	PreviousSecretExpiresAt time.Time `json:"-"`
	// TLS, when set, is how requests speak TLS to a private receiver (its CA, a client certificate for mTLS).
	TLS *WebhookTLS `json:"tls,omitempty"`
	// secretSet records, after decoding a request, whether "secret" was present at all (absent = keep).
	secretSet bool
	// tlsSet records whether "tls" was present (absent = keep).
	tlsSet bool
}

// webhookJSON is Webhook as it is written to clients: no secret material, only whether one is set.
type webhookJSON struct {
	URL                      string            `json:"url"`
	Method                   string            `json:"method"`
	Headers                  map[string]string `json:"headers,omitempty"`
	TimeoutMs                int               `json:"timeoutMs"`
	ConnectTimeoutMs         int               `json:"connectTimeoutMs"`
	SecretGracePeriodSeconds int               `json:"secretGracePeriodSeconds"`
	HasSecret                bool              `json:"hasSecret"`
	SecretRotating           bool              `json:"secretRotating,omitempty"`
	TLS                      *WebhookTLS       `json:"tls,omitempty"`
}

// MarshalJSON never writes a secret: a job's JSON can be logged or returned without leaking one.
func (w Webhook) MarshalJSON() ([]byte, error) {
	return json.Marshal(webhookJSON{
		URL: w.URL, Method: w.Method, Headers: w.Headers, TimeoutMs: w.TimeoutMs,
		ConnectTimeoutMs: w.ConnectTimeoutMs, SecretGracePeriodSeconds: w.SecretGracePeriodSeconds,
		HasSecret: w.Secret != "", SecretRotating: w.PreviousSecret != "", TLS: w.TLS,
	})
}

// UnmarshalJSON reads the writable fields and records whether "secret" was given. Read-only fields a client
// copied from a GET (hasSecret, secretRotating) are accepted and ignored so a GET body can be PUT back.
func (w *Webhook) UnmarshalJSON(b []byte) error {
	type in struct {
		URL                      *string           `json:"url"`
		Method                   *string           `json:"method"`
		Headers                  map[string]string `json:"headers"`
		TimeoutMs                *int              `json:"timeoutMs"`
		ConnectTimeoutMs         *int              `json:"connectTimeoutMs"`
		SecretGracePeriodSeconds *int              `json:"secretGracePeriodSeconds"`
		Secret                   *string           `json:"secret"`
		GenerateSecret           bool              `json:"generateSecret"`
		HasSecret                bool              `json:"hasSecret"`
		SecretRotating           bool              `json:"secretRotating"`
		TLS                      json.RawMessage   `json:"tls"`
	}
	var v in
	if err := decodeStrict(b, &v); err != nil {
		return nestedError("webhook", err)
	}
	setIf(&w.URL, v.URL)
	setIf(&w.Method, v.Method)
	if v.Headers != nil {
		w.Headers = v.Headers
	}
	setIf(&w.TimeoutMs, v.TimeoutMs)
	setIf(&w.ConnectTimeoutMs, v.ConnectTimeoutMs)
	setIf(&w.SecretGracePeriodSeconds, v.SecretGracePeriodSeconds)
	if v.Secret != nil {
		w.Secret, w.secretSet = *v.Secret, true
	}
	w.GenerateSecret = v.GenerateSecret
	if v.TLS != nil {
		w.tlsSet, w.TLS = true, nil
		if string(v.TLS) != "null" {
			var t WebhookTLS
			if err := json.Unmarshal(v.TLS, &t); err != nil {
				return nestedError("webhook", err)
			}
			w.TLS = &t
		}
	}
	return nil
}

// TLSGiven reports whether the decoded request carried "tls" (null included): absent on replace keeps the
// stored settings, null removes them, an object replaces them (its absent clientKeyPem keeping the stored key).
func (w Webhook) TLSGiven() bool { return w.tlsSet }

// SecretGiven reports whether the decoded request carried a "secret" field (even an empty one).
func (w Webhook) SecretGiven() bool { return w.secretSet || w.Secret != "" }

// Secrets returns the secrets that sign a request sent at now: the current one, then the previous one while
// its grace period lasts.
func (w Webhook) Secrets(now time.Time) []string {
	var out []string
	if w.Secret != "" {
		out = append(out, w.Secret)
	}
	if w.PreviousSecret != "" && now.Before(w.PreviousSecretExpiresAt) {
		out = append(out, w.PreviousSecret)
	}
	return out
}

// RetryPolicy bounds the attempts of one item of one fire. Retries back off exponentially with jitter and
// never overlap the item's next fire.
type RetryPolicy struct {
	MaxAttempts      int `json:"maxAttempts"`
	InitialBackoffMs int `json:"initialBackoffMs"`
	MaxBackoffMs     int `json:"maxBackoffMs"`
}

// UnmarshalJSON decodes strictly, naming a bad field as retry.<field>.
func (r *RetryPolicy) UnmarshalJSON(b []byte) error {
	type plain RetryPolicy
	v := plain(*r)
	if err := decodeStrict(b, &v); err != nil {
		return nestedError("retry", err)
	}
	*r = RetryPolicy(v)
	return nil
}

// AsyncPolicy is the lease of an item whose receiver answered 202 Accepted.
type AsyncPolicy struct {
	// LeaseSeconds: how long an accepted item lives without a heartbeat (each heartbeat renews it).
	LeaseSeconds int `json:"leaseSeconds"`
	// MaxDurationSeconds: how long an item may run from its first request's start, whatever the heartbeats.
	MaxDurationSeconds int `json:"maxDurationSeconds"`
}

// Lease is LeaseSeconds as a duration.
func (a AsyncPolicy) Lease() time.Duration { return time.Duration(a.LeaseSeconds) * time.Second }

// MaxDuration is MaxDurationSeconds as a duration.
func (a AsyncPolicy) MaxDuration() time.Duration {
	return time.Duration(a.MaxDurationSeconds) * time.Second
}

// UnmarshalJSON decodes strictly, naming a bad field as async.<field>.
func (a *AsyncPolicy) UnmarshalJSON(b []byte) error {
	type plain AsyncPolicy
	v := plain(*a)
	if err := decodeStrict(b, &v); err != nil {
		return nestedError("async", err)
	}
	*a = AsyncPolicy(v)
	return nil
}

// DefaultJobConfig returns a config holding ElasticJob's builder defaults and ejserver's webhook defaults.
// Decoding a request into it leaves absent fields at their defaults.
func DefaultJobConfig() JobConfig {
	return JobConfig{
		JobType:                               JobTypeSimple,
		MonitorExecution:                      true,
		Misfire:                               true,
		MaxTimeDiffSeconds:                    -1,
		ReconcileIntervalMinutes:              10,
		JobShardingStrategyType:               StrategyAverage,
		JobExecutorThreadPoolSizeProviderType: "CPU",
		JobErrorHandlerType:                   "LOG",
		Webhook: Webhook{
			Method:                   "POST",
			TimeoutMs:                DefaultTimeoutMs,
			ConnectTimeoutMs:         DefaultConnectTimeout,
			SecretGracePeriodSeconds: DefaultSecretGraceSecs,
		},
		Retry: RetryPolicy{
			MaxAttempts:      DefaultRetryAttempts,
			InitialBackoffMs: DefaultInitialBackoff,
			MaxBackoffMs:     DefaultMaxBackoff,
		},
		Async: AsyncPolicy{LeaseSeconds: DefaultLeaseSeconds, MaxDurationSeconds: DefaultMaxDurationSecs},
	}
}

// Clone returns a deep copy (maps included).
func (c JobConfig) Clone() JobConfig {
	c.Props = maps.Clone(c.Props)
	c.Webhook.Headers = maps.Clone(c.Webhook.Headers)
	c.Alerts = c.Alerts.Clone()
	c.ExcludeCalendars, c.IncludeCalendars = slices.Clone(c.ExcludeCalendars), slices.Clone(c.IncludeCalendars)
	if c.Pause != nil {
		p := *c.Pause
		c.Pause = &p
	}
	return c
}

// Timeout is the per-attempt response timeout.
func (w Webhook) Timeout() time.Duration { return time.Duration(w.TimeoutMs) * time.Millisecond }

// ConnectTimeout is the per-attempt connect timeout.
func (w Webhook) ConnectTimeout() time.Duration {
	return time.Duration(w.ConnectTimeoutMs) * time.Millisecond
}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
