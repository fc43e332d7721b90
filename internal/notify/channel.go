package notify

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ChannelKind is a channel's service.
type ChannelKind string

// The channel kinds.
const (
	ChannelWebhook   ChannelKind = "webhook"
	ChannelSlack     ChannelKind = "slack"
	ChannelDingTalk  ChannelKind = "dingtalk"
	ChannelWeCom     ChannelKind = "wecom"
	ChannelPagerDuty ChannelKind = "pagerduty"
	ChannelEmail     ChannelKind = "email"
)

// ChannelKinds lists the kinds in documentation order.
var ChannelKinds = []ChannelKind{ChannelWebhook, ChannelSlack, ChannelDingTalk, ChannelWeCom, ChannelPagerDuty, ChannelEmail}

// Delivery defaults and bounds of a channel.
const (
	DefaultTimeoutMs   = 10_000
	MaxTimeoutMs       = 60_000
	DefaultMaxAttempts = 5
	MaxMaxAttempts     = 10
	MaxChannelNameLen  = 64
	// DefaultPagerDutyURL is the Events API v2 endpoint (events.eu.pagerduty.com for EU accounts).
	DefaultPagerDutyURL = "https://events.pagerduty.com/v2/enqueue"
)

// Channel is a named, cluster-wide notification channel: where a rule's notifications go. Exactly the
// settings of its kind are set. Secret fields are pointers and write-only: on replace an absent (nil) one
// keeps the stored value, "" removes it; API output never carries them, only hasXxx.
type Channel struct {
	// Name identifies the channel in rules; 1-64 letters, digits, '_', '.', '-' (it names a ZooKeeper node).
	Name string      `json:"name"`
	Kind ChannelKind `json:"kind" enums:"webhook,slack,dingtalk,wecom,pagerduty,email"`
	// Default marks the cluster's default channel of its kind (at most one per kind): ElasticJob's
	// jobErrorHandlerType EMAIL, DINGTALK and WECHAT notify the default email, dingtalk and wecom channel.
	Default     bool   `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
	// TimeoutMs bounds one attempt (default 10000); MaxAttempts bounds the attempts (default 5).
	TimeoutMs   int `json:"timeoutMs,omitempty"`
	MaxAttempts int `json:"maxAttempts,omitempty"`

	Webhook   *WebhookSettings   `json:"webhook,omitempty"`
	Slack     *SlackSettings     `json:"slack,omitempty"`
	DingTalk  *DingTalkSettings  `json:"dingtalk,omitempty"`
	WeCom     *WeComSettings     `json:"wecom,omitempty"`
	PagerDuty *PagerDutySettings `json:"pagerduty,omitempty"`
	Email     *EmailSettings     `json:"email,omitempty"`
}

// WebhookSettings: a POST of the Event JSON, signed with Standard Webhooks headers like item webhooks.
type WebhookSettings struct {
	URL string `json:"url"`
	// Secret ("whsec_" + base64) signs each request's webhook-signature header. Write-only.
	Secret    *string `json:"secret,omitempty"`
	HasSecret bool    `json:"hasSecret,omitempty"`
}

// SlackSettings: an incoming webhook. Its URL holds the token, so it is write-only.
type SlackSettings struct {
	URL    *string `json:"url,omitempty"`
	HasURL bool    `json:"hasUrl,omitempty"`
}

// DingTalkSettings: a custom robot. URL (https://oapi.dingtalk.com/robot/send?access_token=...) holds the
// token and Secret ("SEC...") is the optional signing secret: both write-only.
type DingTalkSettings struct {
	URL       *string  `json:"url,omitempty"`
	HasURL    bool     `json:"hasUrl,omitempty"`
	Secret    *string  `json:"secret,omitempty"`
	HasSecret bool     `json:"hasSecret,omitempty"`
	AtMobiles []string `json:"atMobiles,omitempty"`
	AtAll     bool     `json:"atAll,omitempty"`
}

// WeComSettings: a group robot. URL (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=...) holds the
// key: write-only.
type WeComSettings struct {
	URL              *string  `json:"url,omitempty"`
	HasURL           bool     `json:"hasUrl,omitempty"`
	MentionedMobiles []string `json:"mentionedMobiles,omitempty"`
}

// PagerDutySettings: Events API v2. RoutingKey (the integration key) is write-only.
type PagerDutySettings struct {
	RoutingKey    *string `json:"routingKey,omitempty"`
	HasRoutingKey bool    `json:"hasRoutingKey,omitempty"`
	// URL is the events endpoint (default https://events.pagerduty.com/v2/enqueue).
	URL string `json:"url,omitempty"`
}

// The email transport security modes.
const (
	TLSStartTLS = "starttls" // plain connection upgraded with STARTTLS (required), port 587 by default
	TLSImplicit = "tls"      // TLS from the first byte (SMTPS), port 465 by default
	TLSNone     = "none"     // no TLS: only to a loopback relay (auth is refused without TLS otherwise)
)

// EmailSettings: SMTP submission. Password is write-only.
type EmailSettings struct {
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	// TLS is starttls (default), tls or none.
	TLS      string `json:"tls,omitempty" enums:"starttls,tls,none"`
	Username string `json:"username,omitempty"`
	// Auth is plain (default when a username is set) or login.
	Auth        string   `json:"auth,omitempty" enums:"plain,login"`
	Password    *string  `json:"password,omitempty"`
	HasPassword bool     `json:"hasPassword,omitempty"`
	From        string   `json:"from"`
	To          []string `json:"to"`
	// SubjectPrefix starts every subject (default "[ejserver]").
	SubjectPrefix string `json:"subjectPrefix,omitempty"`
}

// str reads a secret pointer.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Redacted returns the channel as API output shows it: secrets gone, hasXxx set.
func (c Channel) Redacted() Channel {
	out := c
	if s := c.Webhook; s != nil {
		cp := *s
		cp.HasSecret, cp.Secret = str(s.Secret) != "", nil
		out.Webhook = &cp
	}
	if s := c.Slack; s != nil {
		cp := *s
		cp.HasURL, cp.URL = str(s.URL) != "", nil
		out.Slack = &cp
	}
	if s := c.DingTalk; s != nil {
		cp := *s
		cp.HasURL, cp.URL = str(s.URL) != "", nil
		cp.HasSecret, cp.Secret = str(s.Secret) != "", nil
		out.DingTalk = &cp
	}
	if s := c.WeCom; s != nil {
		cp := *s
		cp.HasURL, cp.URL = str(s.URL) != "", nil
		out.WeCom = &cp
	}
	if s := c.PagerDuty; s != nil {
		cp := *s
		cp.HasRoutingKey, cp.RoutingKey = str(s.RoutingKey) != "", nil
		out.PagerDuty = &cp
	}
	if s := c.Email; s != nil {
		cp := *s
		cp.HasPassword, cp.Password = str(s.Password) != "", nil
		out.Email = &cp
	}
	return out
}

// KeepSecrets fills the secrets c leaves out (nil) from old, the stored channel it replaces (same kind), and
// clears the read-only hasXxx fields a client may have copied from a GET.
func (c *Channel) KeepSecrets(old Channel) {
	keep := func(p **string, prev *string) {
		if *p == nil && prev != nil {
			v := *prev
			*p = &v
		}
	}
	if s, o := c.Webhook, old.Webhook; s != nil && o != nil {
		keep(&s.Secret, o.Secret)
	}
	if s, o := c.Slack, old.Slack; s != nil && o != nil {
		keep(&s.URL, o.URL)
	}
	if s, o := c.DingTalk, old.DingTalk; s != nil && o != nil {
		keep(&s.URL, o.URL)
		keep(&s.Secret, o.Secret)
	}
	if s, o := c.WeCom, old.WeCom; s != nil && o != nil {
		keep(&s.URL, o.URL)
	}
	if s, o := c.PagerDuty, old.PagerDuty; s != nil && o != nil {
		keep(&s.RoutingKey, o.RoutingKey)
	}
	if s, o := c.Email, old.Email; s != nil && o != nil {
		keep(&s.Password, o.Password)
	}
	c.clearHas()
}

// clearHas drops the read-only hasXxx flags: the stored form has the secrets themselves.
func (c *Channel) clearHas() {
	if s := c.Webhook; s != nil {
		s.HasSecret = false
	}
	if s := c.Slack; s != nil {
		s.HasURL = false
	}
	if s := c.DingTalk; s != nil {
		s.HasURL, s.HasSecret = false, false
	}
	if s := c.WeCom; s != nil {
		s.HasURL = false
	}
	if s := c.PagerDuty; s != nil {
		s.HasRoutingKey = false
	}
	if s := c.Email; s != nil {
		s.HasPassword = false
	}
}

// Secrets lists the channel's secret values (non-empty ones), so logs and errors can be scrubbed of them.
func (c Channel) Secrets() []string {
	var out []string
	add := func(p *string) {
		if v := str(p); v != "" {
			out = append(out, v)
		}
	}
	if s := c.Webhook; s != nil {
		add(s.Secret)
	}
	if s := c.Slack; s != nil {
		add(s.URL)
	}
	if s := c.DingTalk; s != nil {
		add(s.URL)
		add(s.Secret)
	}
	if s := c.WeCom; s != nil {
		add(s.URL)
	}
	if s := c.PagerDuty; s != nil {
		add(s.RoutingKey)
	}
	if s := c.Email; s != nil {
		add(s.Password)
	}
	return out
}

// Scrub replaces every secret of the channel found in s (an error text, a response excerpt) by "***".
func (c Channel) Scrub(s string) string {
	for _, secret := range c.Secrets() {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return s
}

// DecodeChannel reads a channel's JSON strictly (an unknown field is a field error), without validating it.
func DecodeChannel(data []byte) (Channel, error) {
	var c Channel
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Channel{}, jsonError(err)
	}
	if dec.More() {
		return Channel{}, invalid("", "the body holds more than one JSON value")
	}
	return c, nil
}

// jsonError turns a decoding error into a field error where it names one.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	msg := err.Error()
	if ok := asType(err, &te); ok && te.Field != "" {
		return invalid(te.Field, "must be a %s, not a JSON %s", te.Type.String(), te.Value)
	}
	if field, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		field = strings.Trim(field, `"`)
		return invalid(field, "is not a field of a channel (see GET /openapi/openapi3.json, schema notify.Channel)")
	}
	return invalid("", "the body is not valid JSON: %v", err)
}

func describeKinds() string {
	names := make([]string, len(ChannelKinds))
	for i, k := range ChannelKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// settingsOf reports which kinds have settings set, in ChannelKinds order.
func (c Channel) settingsOf() []ChannelKind {
	var out []ChannelKind
	for _, k := range ChannelKinds {
		if c.hasSettings(k) {
			out = append(out, k)
		}
	}
	return out
}

func (c Channel) hasSettings(k ChannelKind) bool {
	switch k {
	case ChannelWebhook:
		return c.Webhook != nil
	case ChannelSlack:
		return c.Slack != nil
	case ChannelDingTalk:
		return c.DingTalk != nil
	case ChannelWeCom:
		return c.WeCom != nil
	case ChannelPagerDuty:
		return c.PagerDuty != nil
	case ChannelEmail:
		return c.Email != nil
	}
	return false
}

// String names the channel for logs (never its secrets).
func (c Channel) String() string { return fmt.Sprintf("%s (%s)", c.Name, c.Kind) }
