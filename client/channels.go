package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Channel is a notification channel: kind webhook, slack, dingtalk, wecom, pagerduty or email, with the
// settings of that kind. Secrets are write-only: on replace a nil one keeps the stored value, "" removes
// it; reads never return them, only the HasXxx flags.
type Channel struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Default     bool   `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
	TimeoutMs   int    `json:"timeoutMs,omitempty"`
	MaxAttempts int    `json:"maxAttempts,omitempty"`

	Webhook   *WebhookChannel   `json:"webhook,omitempty"`
	Slack     *SlackChannel     `json:"slack,omitempty"`
	DingTalk  *DingTalkChannel  `json:"dingtalk,omitempty"`
	WeCom     *WeComChannel     `json:"wecom,omitempty"`
	PagerDuty *PagerDutyChannel `json:"pagerduty,omitempty"`
	Email     *EmailChannel     `json:"email,omitempty"`

	// ETag is the version read with the channel (the ETag header), for ReplaceChannel's If-Match.
	ETag string `json:"-"`
}

// WebhookChannel posts a signed JSON event (Standard Webhooks headers, like item webhooks).
type WebhookChannel struct {
	URL       string  `json:"url"`
	Secret    *string `json:"secret,omitempty"`
	HasSecret bool    `json:"hasSecret,omitempty"`
}

// SlackChannel is a Slack incoming webhook.
type SlackChannel struct {
	URL    *string `json:"url,omitempty"`
	HasURL bool    `json:"hasUrl,omitempty"`
}

// DingTalkChannel is a DingTalk custom robot, optionally signed.
type DingTalkChannel struct {
	URL       *string  `json:"url,omitempty"`
	HasURL    bool     `json:"hasUrl,omitempty"`
	Secret    *string  `json:"secret,omitempty"`
	HasSecret bool     `json:"hasSecret,omitempty"`
	AtMobiles []string `json:"atMobiles,omitempty"`
	AtAll     bool     `json:"atAll,omitempty"`
}

// WeComChannel is a WeCom group robot.
type WeComChannel struct {
	URL              *string  `json:"url,omitempty"`
	HasURL           bool     `json:"hasUrl,omitempty"`
	MentionedMobiles []string `json:"mentionedMobiles,omitempty"`
}

// PagerDutyChannel sends PagerDuty Events API v2 events.
type PagerDutyChannel struct {
	RoutingKey    *string `json:"routingKey,omitempty"`
	HasRoutingKey bool    `json:"hasRoutingKey,omitempty"`
	URL           string  `json:"url,omitempty"`
}

// EmailChannel submits mail over SMTP.
type EmailChannel struct {
	Host          string   `json:"host"`
	Port          int      `json:"port,omitempty"`
	TLS           string   `json:"tls,omitempty"`  // starttls (default), tls or none
	Auth          string   `json:"auth,omitempty"` // plain (default) or login
	Username      string   `json:"username,omitempty"`
	Password      *string  `json:"password,omitempty"`
	HasPassword   bool     `json:"hasPassword,omitempty"`
	From          string   `json:"from"`
	To            []string `json:"to"`
	SubjectPrefix string   `json:"subjectPrefix,omitempty"`
}

// ChannelList is every channel, by name.
type ChannelList struct {
	Items []Channel `json:"items"`
}

// ChannelTestResult is how a test send went.
type ChannelTestResult struct {
	Channel        string `json:"channel"`
	NotificationID string `json:"notificationId"`
	Outcome        string `json:"outcome"` // sent or failed
	Attempts       int    `json:"attempts"`
	Status         int    `json:"status,omitempty"`
	Error          string `json:"error,omitempty"`
	DurationMs     int64  `json:"durationMs"`
}

// NotificationRecord is one notification's delivery to one channel.
type NotificationRecord struct {
	NotificationID string    `json:"notificationId"`
	Channel        string    `json:"channel"`
	ChannelKind    string    `json:"channelKind"`
	Kind           string    `json:"kind"`
	Severity       string    `json:"severity"`
	Job            string    `json:"job,omitempty"`
	Rule           string    `json:"rule,omitempty"`
	DedupKey       string    `json:"dedupKey,omitempty"`
	Resolve        bool      `json:"resolve,omitempty"`
	Title          string    `json:"title"`
	Outcome        string    `json:"outcome"`
	Attempts       int       `json:"attempts"`
	Status         int       `json:"status,omitempty"`
	Error          string    `json:"error,omitempty"`
	Instance       string    `json:"instance"`
	CreatedAt      time.Time `json:"createdAt"`
	FinishedAt     time.Time `json:"finishedAt"`
}

// NotificationFilter selects notification records; zero fields don't filter.
type NotificationFilter struct {
	Channel, Job, Outcome, Cursor string
	Limit                         int
}

// NotificationList is a page of notification records, newest first.
type NotificationList struct {
	Items      []NotificationRecord `json:"items"`
	NextCursor string               `json:"nextCursor,omitempty"`
}

func channelPath(name string, rest ...string) string {
	p := "/api/v1/channels/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// channelCall sends a channel body (a Channel, or raw JSON as []byte or json.RawMessage) and reads the
// channel and its ETag.
func (c *Client) channelCall(ctx context.Context, rq request) (*Channel, error) {
	var out Channel
	rq.out = &out
	resp, err := c.do(ctx, rq)
	if err != nil {
		return nil, err
	}
	out.ETag = resp.Header().Get("ETag")
	return &out, nil
}

// CreateChannel creates a channel (201); one of that name existing is a 409 (IsConflict).
func (c *Client) CreateChannel(ctx context.Context, body any) (*Channel, error) {
	return c.channelCall(ctx, request{method: http.MethodPost, path: "/api/v1/channels", body: rawBody(body)})
}

// ListChannels lists every channel (secrets never included).
func (c *Client) ListChannels(ctx context.Context) (*ChannelList, error) {
	var out ChannelList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/channels", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetChannel reads a channel; Channel.ETag is its version for ReplaceChannel.
func (c *Client) GetChannel(ctx context.Context, name string) (*Channel, error) {
	return c.channelCall(ctx, request{method: http.MethodGet, path: channelPath(name)})
}

// ReplaceChannel replaces a channel (a Channel or raw JSON). With ifMatch (a Channel.ETag) it fails with
// 412 (IsPreconditionFailed) if someone changed the channel since; "" replaces unconditionally.
func (c *Client) ReplaceChannel(ctx context.Context, name string, body any, ifMatch string) (*Channel, error) {
	rq := request{method: http.MethodPut, path: channelPath(name), body: rawBody(body)}
	if ifMatch != "" {
		rq.header = map[string]string{"If-Match": ifMatch}
	}
	return c.channelCall(ctx, rq)
}

// DeleteChannel deletes a channel.
func (c *Client) DeleteChannel(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: channelPath(name)})
	return err
}

// TestChannel sends a TEST notification through the channel now and reports how it went.
func (c *Client) TestChannel(ctx context.Context, name string) (*ChannelTestResult, error) {
	var out ChannelTestResult
	if _, err := c.do(ctx, request{method: http.MethodPost, path: channelPath(name, "test"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Notifications returns one page of what was sent where, newest first.
func (c *Client) Notifications(ctx context.Context, f NotificationFilter) (*NotificationList, error) {
	q := url.Values{}
	set(q, "channel", f.Channel)
	set(q, "job", f.Job)
	set(q, "outcome", f.Outcome)
	set(q, "cursor", f.Cursor)
	setInt(q, "limit", f.Limit)
	var out NotificationList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/notifications", query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
