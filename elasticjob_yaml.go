package ejserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The props keys under which a job's webhook and ejserver's own fields are stored, so that ElasticJob's
// tools can still parse the config: ElasticJob's HTTP job keys first, then "ejserver."-prefixed ones.
const (
	PropHTTPURI            = "http.uri"
	PropHTTPMethod         = "http.method"
	PropHTTPConnectTimeout = "http.connect.timeout.milliseconds"
	PropHTTPReadTimeout    = "http.read.timeout.milliseconds"
	PropHTTPContentType    = "http.content.type"
	PropStreamingProcess   = "streaming.process" // ElasticJob's DATAFLOW key
	PropJobType            = "ejserver.jobType"
	PropHeaders            = "ejserver.webhook.headers"
	PropSecret             = "ejserver.webhook.secret"
	PropPreviousSecret     = "ejserver.webhook.previousSecret"
	PropPreviousSecretExp  = "ejserver.webhook.previousSecretExpiresAt"
	PropSecretGrace        = "ejserver.webhook.secretGracePeriodSeconds"
	PropTLSCA              = "ejserver.webhook.tls.caPem"
	PropTLSClientCert      = "ejserver.webhook.tls.clientCertPem"
	PropTLSClientKey       = "ejserver.webhook.tls.clientKeyPem" // a secret, like PropSecret
	PropTLSServerName      = "ejserver.webhook.tls.serverName"
	PropRetryMaxAttempts   = "ejserver.retry.maxAttempts"
	PropRetryInitial       = "ejserver.retry.initialBackoffMs"
	PropRetryMax           = "ejserver.retry.maxBackoffMs"
	PropMaxConcurrent      = "ejserver.maxConcurrentRequests"
	PropReplayMissed       = "ejserver.replayMissedFires"
	PropLeaseSeconds       = "ejserver.async.leaseSeconds"
	PropMaxDuration        = "ejserver.async.maxDurationSeconds"
	PropAlerts             = "ejserver.alerts"
	PropHookBefore         = "ejserver.hooks.beforeFire"
	PropHookAfter          = "ejserver.hooks.afterFire"
)

// ReservedProp reports whether a props key belongs to ejserver (users can't set it through props).
func ReservedProp(key string) bool {
	return strings.HasPrefix(key, "http.") || strings.HasPrefix(key, "ejserver.") || strings.HasPrefix(key, "streaming.")
}

// elasticJobYAML is the config node's YAML: ElasticJob's keys, alphabetical, empty strings omitted.
type elasticJobYAML struct {
	Cron                                  string   `yaml:"cron,omitempty"`
	Description                           string   `yaml:"description,omitempty"`
	Disabled                              bool     `yaml:"disabled"`
	Failover                              bool     `yaml:"failover"`
	JobErrorHandlerType                   string   `yaml:"jobErrorHandlerType,omitempty"`
	JobExecutorThreadPoolSizeProviderType string   `yaml:"jobExecutorThreadPoolSizeProviderType,omitempty"`
	JobName                               string   `yaml:"jobName"`
	JobParameter                          string   `yaml:"jobParameter,omitempty"`
	JobShardingStrategyType               string   `yaml:"jobShardingStrategyType,omitempty"`
	Label                                 string   `yaml:"label,omitempty"`
	MaxTimeDiffSeconds                    int      `yaml:"maxTimeDiffSeconds"`
	Misfire                               bool     `yaml:"misfire"`
	MonitorExecution                      bool     `yaml:"monitorExecution"`
	Overwrite                             bool     `yaml:"overwrite"`
	Props                                 propsMap `yaml:"props,omitempty"`
	ReconcileIntervalMinutes              int      `yaml:"reconcileIntervalMinutes"`
	ShardingItemParameters                string   `yaml:"shardingItemParameters,omitempty"`
	ShardingTotalCount                    int      `yaml:"shardingTotalCount"`
	StaticSharding                        bool     `yaml:"staticSharding"`
	TimeZone                              string   `yaml:"timeZone,omitempty"`
}

// MarshalElasticJobYAML renders cfg as ElasticJob stores it in the config node, the webhook in props.
func MarshalElasticJobYAML(cfg JobConfig) ([]byte, error) {
	props := make(map[string]string, len(cfg.Props)+12)
	for k, v := range cfg.Props {
		props[k] = v
	}
	w := cfg.Webhook
	props[PropHTTPURI] = w.URL
	props[PropHTTPMethod] = w.Method
	props[PropHTTPConnectTimeout] = strconv.Itoa(w.ConnectTimeoutMs)
	props[PropHTTPReadTimeout] = strconv.Itoa(w.TimeoutMs)
	props[PropHTTPContentType] = "application/json"
	if len(w.Headers) > 0 {
		h, err := json.Marshal(w.Headers)
		if err != nil {
			return nil, err
		}
		props[PropHeaders] = string(h)
	}
	if w.Secret != "" {
		props[PropSecret] = w.Secret
	}
	if w.PreviousSecret != "" {
		props[PropPreviousSecret] = w.PreviousSecret
		props[PropPreviousSecretExp] = w.PreviousSecretExpiresAt.UTC().Format(time.RFC3339)
	}
	props[PropSecretGrace] = strconv.Itoa(w.SecretGracePeriodSeconds)
	if t := w.TLS; t != nil {
		for k, v := range map[string]string{PropTLSCA: t.CAPem, PropTLSClientCert: t.ClientCertPem,
			PropTLSClientKey: t.ClientKeyPem, PropTLSServerName: t.ServerName} {
			if v != "" {
				props[k] = v
			}
		}
	}
	if cfg.JobType == JobTypeDataflow {
		props[PropJobType] = string(JobTypeDataflow)
		props[PropStreamingProcess] = strconv.FormatBool(cfg.StreamingProcess)
	}
	props[PropRetryMaxAttempts] = strconv.Itoa(cfg.Retry.MaxAttempts)
	props[PropRetryInitial] = strconv.Itoa(cfg.Retry.InitialBackoffMs)
	props[PropRetryMax] = strconv.Itoa(cfg.Retry.MaxBackoffMs)
	if cfg.MaxConcurrentRequests > 0 {
		props[PropMaxConcurrent] = strconv.Itoa(cfg.MaxConcurrentRequests)
	}
	if cfg.ReplayMissedFires {
		props[PropReplayMissed] = "true"
	}
	cfg.scheduleProps(props)
	props[PropLeaseSeconds] = strconv.Itoa(cfg.Async.LeaseSeconds)
	props[PropMaxDuration] = strconv.Itoa(cfg.Async.MaxDurationSeconds)
	if err := marshalAlertProps(cfg, props); err != nil {
		return nil, fmt.Errorf("encode alerts of job %q: %w", cfg.JobName, err)
	}
	if err := marshalSteeringProps(cfg, props); err != nil {
		return nil, fmt.Errorf("encode steering of job %q: %w", cfg.JobName, err)
	}
	doc := elasticJobYAML{
		Cron: cfg.Cron, Description: cfg.Description, Disabled: cfg.Disabled, Failover: cfg.Failover,
		JobErrorHandlerType:                   cfg.JobErrorHandlerType,
		JobExecutorThreadPoolSizeProviderType: cfg.JobExecutorThreadPoolSizeProviderType,
		JobName:                               cfg.JobName, JobParameter: cfg.JobParameter,
		JobShardingStrategyType: cfg.JobShardingStrategyType, Label: cfg.Label,
		MaxTimeDiffSeconds: cfg.MaxTimeDiffSeconds, Misfire: cfg.Misfire, MonitorExecution: cfg.MonitorExecution,
		Overwrite: cfg.Overwrite, Props: props, ReconcileIntervalMinutes: cfg.ReconcileIntervalMinutes,
		ShardingItemParameters: cfg.ShardingItemParameters, ShardingTotalCount: cfg.ShardingTotalCount,
		StaticSharding: cfg.StaticSharding, TimeZone: cfg.TimeZone,
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode config of job %q: %w", cfg.JobName, err)
	}
	return buf.Bytes(), enc.Close()
}

// ParseElasticJobYAML reads a config node written by ejserver or by ElasticJob itself (whose props may hold
// numbers, and whose absent fields take ElasticJob's defaults).
func ParseElasticJobYAML(b []byte) (JobConfig, error) {
	def := DefaultJobConfig()
	y := elasticJobYAML{
		MaxTimeDiffSeconds: def.MaxTimeDiffSeconds, Misfire: def.Misfire, MonitorExecution: def.MonitorExecution,
		ReconcileIntervalMinutes: def.ReconcileIntervalMinutes,
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		return JobConfig{}, fmt.Errorf("parse ElasticJob config: %w", err)
	}
	cfg := def
	cfg.JobName, cfg.Cron, cfg.TimeZone = y.JobName, y.Cron, y.TimeZone
	cfg.ShardingTotalCount, cfg.ShardingItemParameters, cfg.JobParameter = y.ShardingTotalCount, y.ShardingItemParameters, y.JobParameter
	cfg.Description, cfg.Disabled, cfg.Failover, cfg.Misfire = y.Description, y.Disabled, y.Failover, y.Misfire
	cfg.MonitorExecution, cfg.MaxTimeDiffSeconds, cfg.ReconcileIntervalMinutes = y.MonitorExecution, y.MaxTimeDiffSeconds, y.ReconcileIntervalMinutes
	cfg.Label, cfg.StaticSharding, cfg.Overwrite = y.Label, y.StaticSharding, y.Overwrite
	if y.JobShardingStrategyType != "" {
		cfg.JobShardingStrategyType = y.JobShardingStrategyType
	}
	if y.JobErrorHandlerType != "" {
		cfg.JobErrorHandlerType = y.JobErrorHandlerType
	}
	if y.JobExecutorThreadPoolSizeProviderType != "" {
		cfg.JobExecutorThreadPoolSizeProviderType = y.JobExecutorThreadPoolSizeProviderType
	}

	props := map[string]string(y.Props)
	if props == nil {
		props = map[string]string{}
	}
	var perr error
	take := func(key string) (string, bool) {
		v, ok := props[key]
		delete(props, key)
		return v, ok
	}
	takeInt := func(key string, dst *int) {
		if v, ok := take(key); ok && v != "" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil && perr == nil {
				perr = fmt.Errorf("props %s: %q is not a whole number", key, v)
			}
			if err == nil {
				*dst = n
			}
		}
	}
	w := &cfg.Webhook
	if v, ok := take(PropHTTPURI); ok {
		w.URL = v
	}
	if v, ok := take(PropHTTPMethod); ok && v != "" {
		w.Method = strings.ToUpper(v)
	}
	takeInt(PropHTTPConnectTimeout, &w.ConnectTimeoutMs)
	takeInt(PropHTTPReadTimeout, &w.TimeoutMs)
	take(PropHTTPContentType)
	if v, ok := take(PropHeaders); ok && v != "" {
		if err := json.Unmarshal([]byte(v), &w.Headers); err != nil && perr == nil {
			perr = fmt.Errorf("props %s: %w", PropHeaders, err)
		}
	}
	w.Secret, _ = take(PropSecret)
	w.PreviousSecret, _ = take(PropPreviousSecret)
	if v, ok := take(PropPreviousSecretExp); ok && v != "" {
		w.PreviousSecretExpiresAt, _ = time.Parse(time.RFC3339, v)
	}
	takeInt(PropSecretGrace, &w.SecretGracePeriodSeconds)
	var t WebhookTLS
	t.CAPem, _ = take(PropTLSCA)
	t.ClientCertPem, _ = take(PropTLSClientCert)
	t.ClientKeyPem, _ = take(PropTLSClientKey)
	t.ServerName, _ = take(PropTLSServerName)
	if !t.Empty() {
		w.TLS = &t
	}
	if v, _ := take(PropJobType); v != "" {
		cfg.JobType = JobType(strings.ToUpper(v))
	}
	if v, ok := take(PropStreamingProcess); ok {
		cfg.StreamingProcess = strings.EqualFold(strings.TrimSpace(v), "true")
		if cfg.StreamingProcess {
			cfg.JobType = JobTypeDataflow
		}
	}
	takeInt(PropRetryMaxAttempts, &cfg.Retry.MaxAttempts)
	takeInt(PropRetryInitial, &cfg.Retry.InitialBackoffMs)
	takeInt(PropRetryMax, &cfg.Retry.MaxBackoffMs)
	takeInt(PropMaxConcurrent, &cfg.MaxConcurrentRequests)
	if v, ok := take(PropReplayMissed); ok {
		cfg.ReplayMissedFires = strings.EqualFold(v, "true")
	}
	cfg.takeScheduleProps(take, takeInt)
	takeInt(PropLeaseSeconds, &cfg.Async.LeaseSeconds)
	takeInt(PropMaxDuration, &cfg.Async.MaxDurationSeconds)
	if err := parseAlertProps(&cfg, take); err != nil && perr == nil {
		perr = err
	}
	if err := parseSteeringProps(&cfg, take); err != nil && perr == nil {
		perr = err
	}
	for k := range props {
		if ReservedProp(k) {
			delete(props, k) // ElasticJob's http.data and the like: not ejserver's to interpret
		}
	}
	if len(props) > 0 {
		cfg.Props = props
	}
	return cfg, perr
}

// propsMap reads props whose values ElasticJob may have written as numbers or booleans.
type propsMap map[string]string

func (m *propsMap) UnmarshalYAML(n *yaml.Node) error {
	var raw map[string]any
	if err := n.Decode(&raw); err != nil {
		return err
	}
	out := make(propsMap, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case nil:
			out[k] = ""
		case string:
			out[k] = v
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	*m = out
	return nil
}
