package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/smtptest"
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
	var got []captured
	if !eventually(timeout, func() bool { got = c.all(); return len(got) >= n }) {
		t.Fatalf("receiver got %d requests, want %d", len(got), n)
	}
	return got
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
	t.Parallel()
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

	// counted per channel and outcome on the peer that sent
	_, metricsText, err := b.Do("GET", "/metrics", nil, nil)
	if err != nil || !strings.Contains(string(metricsText), `ejserver_notifications_total{channel="ops-hook",outcome="sent"} 1`) {
		t.Fatalf("metrics of peer 2 lack the webhook channel's send (%v)", err)
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

// TestChannelsChatKindsAndEmail tests a channel of every other kind through the test endpoint against real
// receivers: DingTalk (signed), WeCom, PagerDuty and email over a real SMTP server with STARTTLS and AUTH
// (the peers trust its certificate through SSL_CERT_FILE). A channel whose service hangs does not delay a
// test of another channel, and the SMTP password is in no API output and no log.
func TestChannelsChatKindsAndEmail(t *testing.T) {
	t.Parallel()
	srv, err := smtptest.Start(smtptest.Config{Username: "alerts", Password: "smtp-pass-very-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, srv.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 2, withEnv("SSL_CERT_FILE="+certFile))
	a, b := c.peers[0], c.peers[1]
	robotOK := func(*http.Request) (int, string) { return 200, `{"errcode":0,"errmsg":"ok"}` }
	ding := newCapture(t, robotOK)
	wecom := newCapture(t, robotOK)
	pd := newCapture(t, func(*http.Request) (int, string) { return 202, `{"status":"success","dedup_key":"x"}` })
	badSign := newCapture(t, func(*http.Request) (int, string) { return 200, `{"errcode":310000,"errmsg":"sign not match"}` })
	release := make(chan struct{})
	hang := newCapture(t, func(*http.Request) (int, string) { <-release; return 200, "ok" })
	defer close(release)

	host, port, _ := net.SplitHostPort(srv.Addr)
	for _, ch := range []map[string]any{
		{"name": "ding", "kind": "dingtalk", "default": true, "dingtalk": map[string]any{"url": ding.srv.URL + "/robot/send?access_token=ding-token-secret",
			"secret": "SECding-sign-secret", "atMobiles": []string{"13800000000"}}},
		{"name": "wecom", "kind": "wecom", "default": true, "wecom": map[string]any{"url": wecom.srv.URL + "/cgi-bin/webhook/send?key=wecom-key-secret"}},
		{"name": "pd", "kind": "pagerduty", "pagerduty": map[string]any{"routingKey": "pdroutingkeysecret", "url": pd.srv.URL + "/v2/enqueue"}},
		{"name": "badsign", "kind": "dingtalk", "dingtalk": map[string]any{"url": badSign.srv.URL + "/robot/send?access_token=x"}},
		{"name": "hang", "kind": "slack", "timeoutMs": 30000, "slack": map[string]any{"url": hang.srv.URL + "/services/h"}},
		{"name": "mail", "kind": "email", "default": true, "email": map[string]any{"host": host, "port": mustAtoi(t, port),
			"username": "alerts", "password": "smtp-pass-very-secret", "from": "ejserver <alerts@example.com>",
			"to": []string{"ops@example.com"}}},
	} {
		mustDo(t, a, "POST", "/api/v1/channels", ch, http.StatusCreated, nil)
	}

	// a hanging service holds its own test only: the others are answered meanwhile
	hung := make(chan testResult, 1)
	go func() {
		var res testResult
		_, _, _ = b.Do("POST", "/api/v1/channels/hang/test", nil, &res)
		hung <- res
	}()
	hang.wait(t, 1, 10*time.Second)

	var res testResult
	mustDo(t, b, "POST", "/api/v1/channels/ding/test", nil, http.StatusOK, &res)
	if res.Outcome != "sent" {
		t.Fatalf("dingtalk: %+v", res)
	}
	d := ding.wait(t, 1, 5*time.Second)[0]
	q, _ := url.ParseQuery(d.Query)
	mac := hmac.New(sha256.New, []byte("SECding-sign-secret"))
	mac.Write([]byte(q.Get("timestamp") + "\n" + "SECding-sign-secret"))
	if q.Get("access_token") != "ding-token-secret" || q.Get("sign") != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
		t.Fatalf("dingtalk query %s", d.Query)
	}
	var dm struct {
		MsgType  string `json:"msgtype"`
		Markdown struct{ Title, Text string }
		At       struct {
			AtMobiles []string `json:"atMobiles"`
			IsAtAll   bool     `json:"isAtAll"`
		} `json:"at"`
	}
	if err := json.Unmarshal(d.Body, &dm); err != nil || dm.MsgType != "markdown" || !strings.Contains(dm.Markdown.Title, "Test notification") ||
		!strings.Contains(dm.Markdown.Text, "@13800000000") || len(dm.At.AtMobiles) != 1 {
		t.Fatalf("dingtalk body %s (%v)", d.Body, err)
	}

	mustDo(t, b, "POST", "/api/v1/channels/wecom/test", nil, http.StatusOK, &res)
	w := wecom.wait(t, 1, 5*time.Second)[0]
	var wm struct {
		MsgType  string `json:"msgtype"`
		Markdown struct {
			Content string `json:"content"`
		} `json:"markdown"`
	}
	if err := json.Unmarshal(w.Body, &wm); err != nil || res.Outcome != "sent" || wm.MsgType != "markdown" ||
		!strings.Contains(wm.Markdown.Content, "Test notification") || w.Query != "key=wecom-key-secret" {
		t.Fatalf("wecom %+v: %s %s", res, w.Query, w.Body)
	}

	mustDo(t, a, "POST", "/api/v1/channels/pd/test", nil, http.StatusOK, &res)
	p := pd.wait(t, 1, 5*time.Second)[0]
	var pm struct {
		RoutingKey  string `json:"routing_key"`
		EventAction string `json:"event_action"`
		DedupKey    string `json:"dedup_key"`
		Payload     struct{ Summary, Source, Severity, Class string }
	}
	if err := json.Unmarshal(p.Body, &pm); err != nil || res.Outcome != "sent" || res.Status != 202 || pm.RoutingKey != "pdroutingkeysecret" ||
		pm.EventAction != "trigger" || pm.DedupKey == "" || pm.Payload.Severity != "info" || pm.Payload.Class != "TEST" ||
		pm.Payload.Source != "ejserver/"+c.ns {
		t.Fatalf("pagerduty %+v: %s", res, p.Body)
	}

	mustDo(t, a, "POST", "/api/v1/channels/badsign/test", nil, http.StatusOK, &res)
	if res.Outcome != "failed" || !strings.Contains(res.Error, "310000") {
		t.Fatalf("a DingTalk errcode is a failure: %+v", res)
	}

	mustDo(t, a, "POST", "/api/v1/channels/mail/test", nil, http.StatusOK, &res)
	if res.Outcome != "sent" {
		t.Fatalf("email: %+v", res)
	}
	msgs, ok := srv.Wait(1, 10*time.Second)
	if !ok {
		t.Fatal("no email arrived")
	}
	m := msgs[0]
	parsed, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
	if err != nil || !m.TLS || m.Auth != "PLAIN" || m.From != "alerts@example.com" || len(m.To) != 1 ||
		!strings.HasPrefix(parsed.Header.Get("Subject"), "[ejserver] Test notification") ||
		parsed.Header.Get("Message-ID") != "<"+res.NotificationID+"@"+c.ns+".ejserver>" {
		t.Fatalf("email %+v: %s (%v)", m, m.Data, err)
	}

	select {
	case r := <-hung:
		t.Fatalf("the hanging channel's test ended before the service answered: %+v", r)
	default:
	}
	release <- struct{}{}
	if r := <-hung; r.Outcome != "sent" {
		t.Fatalf("the hanging channel's test, released: %+v", r)
	}

	var list struct {
		Items []map[string]any `json:"items"`
	}
	raw := mustDo(t, b, "GET", "/api/v1/channels", nil, http.StatusOK, &list)
	secrets := []string{"smtp-pass-very-secret", "ding-token-secret", "SECding-sign-secret", "wecom-key-secret", "pdroutingkeysecret"}
	for _, s := range secrets {
		if strings.Contains(string(raw), s) {
			t.Errorf("the channel list holds secret %q", s)
		}
		for i, p := range c.peers {
			if strings.Contains(p.Log(), s) {
				t.Errorf("peer %d's log holds secret %q", i+1, s)
			}
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestChannelCLI drives `ejserver channel` against a server with tokens: apply creates then replaces
// (keeping the secret the second file leaves out), list, get, test, history and delete work; a viewer token
// reads channels but may not write or test them.
func TestChannelCLI(t *testing.T) {
	t.Parallel()
	slack := newCapture(t, nil)
	c := newCluster(t, 1, withArgs("--api-tokens", tokensFile(t)))
	p := c.peers[0]
	admin := []string{"EJ_SERVER=" + p.Addr, "EJ_TOKEN=" + adminToken}
	viewer := []string{"EJ_SERVER=" + p.Addr, "EJ_TOKEN=" + viewerToken}
	dir := t.TempDir()
	first := writeFile(t, dir, "channels.yaml", `
- name: ops-slack
  kind: slack
  default: true
  slack: {url: "`+slack.srv.URL+`/services/T/B/cli-secret-token"}
- name: ops-hook
  kind: webhook
  webhook: {url: "`+slack.srv.URL+`/hook"}
`)
	if out := cliOK(t, admin, "channel", "apply", "-f", first); !strings.Contains(out, "created channel ops-slack") ||
		!strings.Contains(out, "created channel ops-hook") {
		t.Fatalf("first apply: %s", out)
	}
	second := writeFile(t, dir, "again.yaml", `{"name": "ops-slack", "kind": "slack", "default": true, "description": "on call", "slack": {}}`)
	if out := cliOK(t, admin, "channel", "apply", "-f", second); !strings.Contains(out, "replaced channel ops-slack") {
		t.Fatalf("second apply: %s", out)
	}
	if out := cliOK(t, viewer, "channel", "list"); !strings.Contains(out, "ops-slack") || !strings.Contains(out, "on call") ||
		strings.Contains(out, "cli-secret-token") {
		t.Fatalf("list: %s", out)
	}
	if out := cliOK(t, viewer, "channel", "get", "ops-slack"); !strings.Contains(out, "hasUrl: true") || strings.Contains(out, "cli-secret-token") {
		t.Fatalf("get: %s", out)
	}
	if out := cliOK(t, admin, "channel", "test", "ops-slack"); !strings.Contains(out, "ops-slack: sent (HTTP 200)") {
		t.Fatalf("test: %s", out)
	}
	if got := slack.wait(t, 1, 5*time.Second)[0]; got.Path != "/services/T/B/cli-secret-token" {
		t.Fatalf("the kept URL was not used: %s", got.Path)
	}
	if out := cliOK(t, viewer, "channel", "history", "--channel", "ops-slack"); !strings.Contains(out, "TEST") || !strings.Contains(out, "sent") {
		t.Fatalf("history: %s", out)
	}
	if _, errOut, code := cliRun(t, viewer, "channel", "test", "ops-slack"); code != 1 || !strings.Contains(errOut, "403") {
		t.Fatalf("a viewer's test: exit %d, %s", code, errOut)
	}
	if _, errOut, code := cliRun(t, viewer, "channel", "delete", "ops-hook"); code != 1 || !strings.Contains(errOut, "403") {
		t.Fatalf("a viewer's delete: exit %d, %s", code, errOut)
	}
	bad := writeFile(t, dir, "bad.yaml", `{"name": "x", "kind": "slack", "slack": {"url": "http://example.com/x"}}`)
	if _, errOut, code := cliRun(t, admin, "channel", "apply", "-f", bad); code != 1 || !strings.Contains(errOut, "slack.url") {
		t.Fatalf("a bad channel: exit %d, %s", code, errOut)
	}
	cliOK(t, admin, "channel", "delete", "ops-hook")
	if _, _, code := cliRun(t, admin, "channel", "get", "ops-hook"); code != 1 {
		t.Fatalf("get after delete: exit %d", code)
	}
}
