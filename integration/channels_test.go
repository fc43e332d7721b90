package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/webhook"
)

// capture is a real HTTP receiver that keeps every request it gets.
type capture struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []captured
	answer func(r *http.Request) (int, string)
}

type captured struct {
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

func newCapture(t *testing.T, answer func(r *http.Request) (int, string)) *capture {
	t.Helper()
	c := &capture{answer: answer}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, captured{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		c.mu.Unlock()
		status, body := http.StatusOK, "ok"
		if c.answer != nil {
			status, body = c.answer(r)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) all() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]captured(nil), c.reqs...)
}

// wait polls until the receiver holds n requests.
func (c *capture) wait(t *testing.T, n int, timeout time.Duration) []captured {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if got := c.all(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests, want %d", len(c.all()), n)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

type testResult struct {
	Channel        string `json:"channel"`
	NotificationID string `json:"notificationId"`
	Outcome        string `json:"outcome"`
	Attempts       int    `json:"attempts"`
	Status         int    `json:"status"`
	Error          string `json:"error"`
}

// TestChannelsWebhookAndSlack manages channels over one peer's API and tests them from another: the webhook
// channel's event arrives signed with Standard Webhooks headers, the Slack one as incoming-webhook JSON, a
// failing service's status is reported, secrets never appear in API output or the peers' logs, and the
// sends are in the notification history.
func TestChannelsWebhookAndSlack(t *testing.T) {
	c := newCluster(t, 2)
	a, b := c.peers[0], c.peers[1]
	hook := newCapture(t, nil)
	slack := newCapture(t, nil)
	failing := newCapture(t, func(*http.Request) (int, string) { return http.StatusNotFound, "no_service" })
	secret := webhook.GenerateSecret()
	slackURL := slack.srv.URL + "/services/T000/B000/slack-token-very-secret"

	mustDo(t, a, "POST", "/api/v1/channels", map[string]any{"name": "ops-hook", "kind": "webhook",
		"webhook": map[string]any{"url": hook.srv.URL + "/alerts", "secret": secret}}, http.StatusCreated, nil)
	var created map[string]any
	mustDo(t, a, "POST", "/api/v1/channels", map[string]any{"name": "ops-slack", "kind": "slack", "default": true,
		"slack": map[string]any{"url": slackURL}}, http.StatusCreated, &created)
	if s := created["slack"].(map[string]any); s["hasUrl"] != true || s["url"] != nil {
		t.Fatalf("create answer shows the secret URL or lacks hasUrl: %v", created)
	}
	mustDo(t, a, "POST", "/api/v1/channels", map[string]any{"name": "broken", "kind": "slack",
		"slack": map[string]any{"url": failing.srv.URL + "/services/x"}}, http.StatusCreated, nil)

	// the other peer tests them: read from ZooKeeper there
	var res testResult
	mustDo(t, b, "POST", "/api/v1/channels/ops-hook/test", nil, http.StatusOK, &res)
	if res.Outcome != "sent" || res.Status != 200 || res.Attempts != 1 {
		t.Fatalf("webhook test: %+v", res)
	}
	got := hook.wait(t, 1, 5*time.Second)[0]
	ts, _ := strconv.ParseInt(got.Header.Get("webhook-timestamp"), 10, 64)
	key, _ := webhook.ParseSecret(secret)
	if want := webhook.Sign(key, got.Header.Get("webhook-id"), ts, got.Body); got.Header.Get("webhook-signature") != want {
		t.Fatalf("webhook signature %q, want %q", got.Header.Get("webhook-signature"), want)
	}
	if got.Header.Get("webhook-id") != res.NotificationID {
		t.Fatalf("webhook-id %q, want the notification id %q", got.Header.Get("webhook-id"), res.NotificationID)
	}
	var ev struct {
		Type    string `json:"type"`
		Channel string `json:"channel"`
		Data    struct {
			ID, Kind, Namespace, Title string
		} `json:"data"`
	}
	if err := json.Unmarshal(got.Body, &ev); err != nil || ev.Type != "ejserver.notification" || ev.Channel != "ops-hook" ||
		ev.Data.Kind != "TEST" || ev.Data.Namespace != c.ns || ev.Data.ID != res.NotificationID {
		t.Fatalf("webhook event %s (%v)", got.Body, err)
	}

	mustDo(t, b, "POST", "/api/v1/channels/ops-slack/test", nil, http.StatusOK, &res)
	if res.Outcome != "sent" {
		t.Fatalf("slack test: %+v", res)
	}
	sl := slack.wait(t, 1, 5*time.Second)[0]
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Type, Text string
			} `json:"text"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(sl.Body, &msg); err != nil || sl.Path != "/services/T000/B000/slack-token-very-secret" ||
		!strings.Contains(msg.Text, "Test notification") || len(msg.Blocks) < 2 || msg.Blocks[0].Type != "header" ||
		msg.Blocks[0].Text.Type != "plain_text" {
		t.Fatalf("slack message at %s: %s (%v)", sl.Path, sl.Body, err)
	}

	mustDo(t, a, "POST", "/api/v1/channels/broken/test", nil, http.StatusOK, &res)
	if res.Outcome != "failed" || res.Status != 404 || !strings.Contains(res.Error, "no_service") {
		t.Fatalf("failing channel's test: %+v", res)
	}

	// replace without the secret keeps it; If-Match guards concurrent edits
	status, raw, err := b.Do("GET", "/api/v1/channels/ops-slack", nil, nil)
	if err != nil || status != 200 {
		t.Fatalf("get: %d %s %v", status, raw, err)
	}
	var etag string
	{
		req, _ := http.NewRequest("GET", b.URL("/api/v1/channels/ops-slack"), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		etag = resp.Header.Get("ETag")
	}
	mustDo(t, b, "PUT", "/api/v1/channels/ops-slack", map[string]any{"kind": "slack", "description": "on call", "default": true,
		"slack": map[string]any{}}, http.StatusOK, nil, "If-Match", etag)
	mustDo(t, a, "PUT", "/api/v1/channels/ops-slack", map[string]any{"kind": "slack",
		"slack": map[string]any{}}, http.StatusPreconditionFailed, nil, "If-Match", etag)
	mustDo(t, a, "POST", "/api/v1/channels/ops-slack/test", nil, http.StatusOK, &res)
	if res.Outcome != "sent" || len(slack.wait(t, 2, 5*time.Second)) != 2 {
		t.Fatalf("slack test after a replace without the URL: %+v", res)
	}

	// a second default slack channel is refused; bad configs get field errors
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "s2", "kind": "slack", "default": true, "slack": map[string]any{"url": slackURL}}, "default"},
		{map[string]any{"name": "bad/name", "kind": "slack", "slack": map[string]any{"url": slackURL}}, "name"},
		{map[string]any{"name": "k", "kind": "sms"}, "kind"},
		{map[string]any{"name": "h", "kind": "slack", "slack": map[string]any{"url": "http://example.com/hook"}}, "slack.url"},
		{map[string]any{"name": "h", "kind": "slack", "webhook": map[string]any{"url": "https://example.com"}}, "webhook"},
		{map[string]any{"name": "h", "kind": "webhook", "webhook": map[string]any{"url": "https://example.com", "secret": "nope"}}, "webhook.secret"},
		{map[string]any{"name": "m", "kind": "email", "email": map[string]any{"host": "smtp.example.com", "from": "x", "to": []string{}}}, "email.from"},
		{map[string]any{"name": "p", "kind": "pagerduty", "pagerduty": map[string]any{}}, "pagerduty.routingKey"},
		{map[string]any{"name": "u", "kind": "slack", "slack": map[string]any{"url": slackURL}, "colour": "red"}, "colour"},
	} {
		var prob struct {
			Errors []struct{ Field string } `json:"errors"`
			Field  string                   `json:"field"`
		}
		status, raw, err := a.Do("POST", "/api/v1/channels", tc.body, &prob)
		if err != nil || status != http.StatusBadRequest {
			t.Fatalf("%v: status %d %s %v", tc.body, status, raw, err)
		}
		if !strings.Contains(string(raw), `"`+tc.field+`"`) {
			t.Errorf("%v: the problem does not name field %q: %s", tc.body, tc.field, raw)
		}
	}

	// the history says what was sent where, from any peer's API (each peer's SQLite has its own sends)
	var hist struct {
		Items []struct {
			Channel, Outcome, Kind, NotificationID string
		} `json:"items"`
	}
	mustDo(t, b, "GET", "/api/v1/notifications?channel=ops-hook", nil, http.StatusOK, &hist)
	if len(hist.Items) != 1 || hist.Items[0].Outcome != "sent" || hist.Items[0].Kind != "TEST" {
		t.Fatalf("notification history on peer 2: %+v", hist)
	}
	mustDo(t, a, "GET", "/api/v1/notifications?outcome=failed", nil, http.StatusOK, &hist)
	if len(hist.Items) != 1 || hist.Items[0].Channel != "broken" {
		t.Fatalf("failed notifications on peer 1: %+v", hist)
	}

	// list and delete
	var list struct {
		Items []map[string]any `json:"items"`
	}
	mustDo(t, b, "GET", "/api/v1/channels", nil, http.StatusOK, &list)
	if len(list.Items) != 3 {
		t.Fatalf("list: %v", list)
	}
	mustDo(t, b, "DELETE", "/api/v1/channels/broken", nil, http.StatusNoContent, nil)
	mustDo(t, a, "GET", "/api/v1/channels/broken", nil, http.StatusNotFound, nil)

	// secrets: never in API output, never in a log
	for _, p := range c.peers {
		_, raw, _ := p.Do("GET", "/api/v1/channels", nil, nil)
		for _, s := range []string{secret, "slack-token-very-secret"} {
			if strings.Contains(string(raw), s) {
				t.Errorf("API output holds a secret: %s", raw)
			}
			if strings.Contains(p.Log(), s) {
				t.Errorf("peer %s's log holds a secret", p.Config.ServerIP)
			}
		}
	}
}
