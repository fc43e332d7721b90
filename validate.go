package ejserver

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ejserver/ejserver/internal/cronexpr"
)

var jobNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ValidateJobName checks a job name: it becomes a ZooKeeper path segment and a URL path segment, so it is
// 1-128 letters, digits, '_', '.', '-', starting with a letter or digit (no '/', no "..", no control chars).
func ValidateJobName(name string) error {
	switch {
	case name == "":
		return Invalid("jobName", "is required")
	case len(name) > MaxJobNameLen:
		return Invalid("jobName", "is %d characters long; the limit is %d", len(name), MaxJobNameLen)
	case !jobNameRE.MatchString(name):
		return Invalid("jobName", "%q may only hold letters, digits, '_', '.' and '-', and must start with a letter or digit", name)
	}
	return nil
}

// ParseShardingItemParameters parses ElasticJob's "0=A,1=B" by its rules (split on ',', then on '=', keys are
// integers, both sides trimmed; Java's split drops trailing empty entries). Unlike ElasticJob, which
// silently ignores them, an item outside [0, total) or given twice is an error.
func ParseShardingItemParameters(s string, total int) (map[int]string, error) {
	out := map[int]string{}
	if s == "" {
		return out, nil
	}
	entries := strings.Split(s, ",")
	for len(entries) > 0 && entries[len(entries)-1] == "" { // Java's String.split drops trailing empties
		entries = entries[:len(entries)-1]
	}
	for _, entry := range entries {
		pair := strings.Split(javaTrim(entry), "=")
		for len(pair) > 0 && pair[len(pair)-1] == "" {
			pair = pair[:len(pair)-1]
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("entry %q: expected item=parameter, as in 0=Beijing,1=Shanghai", entry)
		}
		item, err := strconv.Atoi(javaTrim(pair[0]))
		if err != nil || item < 0 {
			return nil, fmt.Errorf("entry %q: item %q is not a non-negative whole number", entry, javaTrim(pair[0]))
		}
		if total > 0 && item >= total {
			return nil, fmt.Errorf("entry %q: item %d is outside 0..%d (shardingTotalCount is %d)", entry, item, total-1, total)
		}
		if _, dup := out[item]; dup {
			return nil, fmt.Errorf("item %d is given twice", item)
		}
		out[item] = javaTrim(pair[1])
	}
	return out, nil
}

// javaTrim is Java's String.trim: it removes every char <= ' ' from both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// ForbiddenHeader reports whether a job may not set this request header: it would break the webhook
// contract (the framing, the Standard Webhooks headers or ElasticJob's shardingContext).
func ForbiddenHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "host", "content-length", "content-type", "transfer-encoding", "connection", "te", "trailer",
		"upgrade", "keep-alive", "proxy-connection", "shardingcontext", "expect", "user-agent":
		return true
	}
	return strings.HasPrefix(n, "webhook-") || strings.HasPrefix(n, "proxy-") || strings.HasPrefix(n, "ejserver-")
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue follows RFC 9110's field-value: visible characters, spaces and tabs (and obs-text bytes),
// no control characters: HTTP clients refuse to send the rest.
func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// ValidSecret checks a webhook secret: "whsec_" and the base64 of 24 to 64 random bytes.
func ValidSecret(secret string) error {
	raw, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return fmt.Errorf(`must start with "whsec_" (Standard Webhooks format), or ask for "generateSecret": true`)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return fmt.Errorf(`the part after "whsec_" is not standard base64`)
	}
	if len(key) < 24 || len(key) > 64 {
		return fmt.Errorf("decodes to %d bytes; use 24 to 64", len(key))
	}
	return nil
}

// Normalize canonicalises the case of enumerated fields.
func (c *JobConfig) Normalize() {
	c.JobType = JobType(strings.ToUpper(string(c.JobType)))
	c.Webhook.Method = strings.ToUpper(c.Webhook.Method)
	if c.Webhook.TLS != nil && c.Webhook.TLS.Empty() {
		c.Webhook.TLS = nil // nothing set: the same as no tls
	}
	c.JobShardingStrategyType = strings.ToUpper(c.JobShardingStrategyType)
	c.JobExecutorThreadPoolSizeProviderType = strings.ToUpper(c.JobExecutorThreadPoolSizeProviderType)
	c.JobErrorHandlerType = strings.ToUpper(c.JobErrorHandlerType)
	c.normalizeSchedule()
}

// Validate checks every field and returns an EINVALID *Error listing each offending field (nil when valid).
func (c *JobConfig) Validate() error {
	var v validator
	if err := ValidateJobName(c.JobName); err != nil {
		v.add(err.(*Error).Fields[0].Field, "%s", err.(*Error).Fields[0].Message)
	}
	loc, err := cronexpr.LoadLocation(c.TimeZone)
	if err != nil {
		v.add("timeZone", "%v", err)
	}
	if c.Cron != "" && err == nil {
		if _, err := cronexpr.Parse(c.Cron, loc); err != nil {
			v.add("cron", "%v", err)
		}
	}
	if c.ShardingTotalCount < 1 || c.ShardingTotalCount > MaxShardingTotalCount {
		v.add("shardingTotalCount", "must be between 1 and %d, got %d", MaxShardingTotalCount, c.ShardingTotalCount)
	}
	if _, err := ParseShardingItemParameters(c.ShardingItemParameters, c.ShardingTotalCount); err != nil {
		v.add("shardingItemParameters", "%v", err)
	}
	v.text("jobParameter", c.JobParameter, MaxJobParameterLen)
	v.text("description", c.Description, MaxDescriptionLen)
	v.text("label", c.Label, MaxJobNameLen)
	switch c.JobType {
	case JobTypeSimple:
		if c.StreamingProcess {
			v.add("streamingProcess", "only DATAFLOW jobs stream; set jobType to DATAFLOW")
		}
	case JobTypeDataflow:
	default:
		v.add("jobType", "must be SIMPLE or DATAFLOW, got %q", c.JobType)
	}
	c.validateWebhook(&v)
	r := c.Retry
	v.between("retry.maxAttempts", r.MaxAttempts, 1, MaxRetryAttempts)
	v.between("retry.initialBackoffMs", r.InitialBackoffMs, 0, MaxBackoffMs)
	v.between("retry.maxBackoffMs", r.MaxBackoffMs, 0, MaxBackoffMs)
	if r.MaxBackoffMs < r.InitialBackoffMs {
		v.add("retry.maxBackoffMs", "must be at least initialBackoffMs (%d)", r.InitialBackoffMs)
	}
	v.between("maxConcurrentRequests", c.MaxConcurrentRequests, 0, 100000)
	v.between("async.leaseSeconds", c.Async.LeaseSeconds, MinLeaseSeconds, MaxLeaseSeconds)
	v.between("async.maxDurationSeconds", c.Async.MaxDurationSeconds, 1, MaxDurationSecs)
	if c.Async.MaxDurationSeconds < c.Async.LeaseSeconds && c.Async.MaxDurationSeconds >= 1 {
		v.add("async.maxDurationSeconds", "must be at least leaseSeconds (%d)", c.Async.LeaseSeconds)
	}
	if c.Failover && !c.MonitorExecution {
		v.add("failover", "needs monitorExecution: failover re-runs the items that were running, which only monitored jobs record")
	}
	if c.MaxTimeDiffSeconds < -1 {
		v.add("maxTimeDiffSeconds", "must be -1 (no check) or a number of seconds, got %d", c.MaxTimeDiffSeconds)
	}
	v.between("reconcileIntervalMinutes", c.ReconcileIntervalMinutes, -1, 7*24*60)
	v.oneOf("jobShardingStrategyType", c.JobShardingStrategyType, StrategyAverage, StrategyOdevity, StrategyRoundRobin)
	v.oneOf("jobExecutorThreadPoolSizeProviderType", c.JobExecutorThreadPoolSizeProviderType, "CPU", "SINGLE_THREAD")
	v.oneOf("jobErrorHandlerType", c.JobErrorHandlerType, errorHandlerTypes...)
	c.Alerts.validate(&v, "alerts")
	c.Hooks.validate(&v)
	c.validateSchedule(&v)
	c.validateSteering(&v)
	if len(c.Props) > MaxPropsLen {
		v.add("props", "has %d keys; the limit is %d", len(c.Props), MaxPropsLen)
	}
	for _, k := range sortedKeys(c.Props) {
		switch {
		case ReservedProp(k):
			v.add("props."+k, "keys starting with http., ejserver. or streaming. are reserved: use the webhook, retry and jobType fields")
		case k == "" || len(k) > 256 || strings.ContainsAny(k, "\n\r\x00"):
			v.add("props", "key %q must be 1-256 printable characters", k)
		case len(c.Props[k]) > MaxJobParameterLen:
			v.add("props."+k, "value is longer than %d bytes", MaxJobParameterLen)
		}
	}
	return v.err()
}

func (c *JobConfig) validateWebhook(v *validator) {
	w := c.Webhook
	if w.URL == "" {
		v.add("webhook.url", "is required")
	} else {
		v.url("webhook.url", w.URL)
	}
	v.oneOf("webhook.method", w.Method, "POST", "PUT", "PATCH")
	if len(w.Headers) > MaxHeaders {
		v.add("webhook.headers", "has %d headers; the limit is %d", len(w.Headers), MaxHeaders)
	}
	for _, name := range sortedKeys(w.Headers) {
		switch {
		case !validHeaderName(name):
			v.add("webhook.headers."+name, "is not a valid header name")
		case ForbiddenHeader(name):
			v.add("webhook.headers."+name, "is set by ejserver and can't be overridden (Host, Content-*, User-Agent, webhook-*, shardingContext and hop-by-hop headers)")
		case !validHeaderValue(w.Headers[name]) || len(w.Headers[name]) > 8192:
			v.add("webhook.headers."+name, "value must be one line of at most 8192 bytes without control characters")
		}
	}
	v.between("webhook.timeoutMs", w.TimeoutMs, 1, MaxTimeoutMs)
	v.between("webhook.connectTimeoutMs", w.ConnectTimeoutMs, 1, MaxConnectTimeoutMs)
	v.between("webhook.secretGracePeriodSeconds", w.SecretGracePeriodSeconds, 0, 30*24*3600)
	if w.Secret != "" {
		if w.GenerateSecret {
			v.add("webhook.generateSecret", "can't be combined with a given secret")
		} else if err := ValidSecret(w.Secret); err != nil {
			v.add("webhook.secret", "%v", err)
		}
	}
	v.validateTLS(w)
}

type validator struct{ fields []FieldError }

func (v *validator) add(field, format string, args ...any) {
	v.fields = append(v.fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// url checks an http(s) URL that ejserver POSTs to: a host, no credentials, no fragment.
func (v *validator) url(field, s string) {
	if len(s) > MaxURLLen {
		v.add(field, "is longer than %d characters", MaxURLLen)
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		v.add(field, "is not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		v.add(field, "scheme must be http or https, got %q", u.Scheme)
	case u.Hostname() == "":
		v.add(field, "has no host")
	case u.User != nil:
		v.add(field, "must not carry credentials; send them in webhook.headers (Authorization)")
	case u.Fragment != "":
		v.add(field, "must not have a #fragment")
	}
}

func (v *validator) between(field string, n, lo, hi int) {
	if n < lo || n > hi {
		v.add(field, "must be between %d and %d, got %d", lo, hi, n)
	}
}

func (v *validator) oneOf(field, val string, allowed ...string) {
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.add(field, "must be one of %s, got %q", strings.Join(allowed, ", "), val)
}

func (v *validator) text(field, s string, limit int) {
	switch {
	case len(s) > limit:
		v.add(field, "is %d bytes long; the limit is %d", len(s), limit)
	case !utf8.ValidString(s):
		v.add(field, "is not valid UTF-8")
	case strings.ContainsRune(s, 0):
		v.add(field, "must not contain NUL characters")
	}
}

func (v *validator) err() error {
	if len(v.fields) == 0 {
		return nil
	}
	first := v.fields[0]
	msg := first.Field + ": " + first.Message
	if len(v.fields) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(v.fields)-1)
	}
	return &Error{Code: EINVALID, Message: msg, Fields: v.fields}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
