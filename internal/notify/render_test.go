package notify

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/webhook"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func sp(s string) *string { return &s }

var renderNow = time.Date(2026, 11, 24, 10, 0, 5, 0, time.UTC)

// fireFailed is a realistic notification: a 2,000-item fire with 3 failures, two sampled.
func fireFailed() Notification {
	return Notification{ID: "5f0c6a1e-2b7d-4c1e-9a3f-0d4e8b6c2a10", Kind: KindFireFailed, Severity: SeverityCritical,
		At: time.Date(2026, 11, 24, 10, 0, 3, 0, time.UTC), Namespace: "prod", Job: "settle", Rule: "job/settle/0",
		DedupKey: "prod/settle/job/settle/0", ScheduledAt: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC),
		Title: "settle: 3 of 2000 items failed", Text: "The 10:00 fire of settle did not succeed.",
		Counts: &Counts{Items: 2000, Succeeded: 1997, Failed: 3},
		Samples: []Sample{{Item: 7, ExecutionID: "e7", Instance: "10.0.0.7@-@42", Outcome: "FAILED", Status: 500, Error: "internal <error> & co"},
			{Item: 12, Outcome: "FAILED", Error: "timeout after 5000ms"}},
		Folded: 2, ConsoleURL: "https://ejserver.example.com/#/jobs/settle"}
}

func recovered() Notification {
	n := fireFailed()
	n.ID, n.Kind, n.Severity, n.Resolve = "7a1d", KindRecovered, SeverityInfo, true
	n.Title, n.Text, n.Counts, n.Samples, n.Folded = "settle recovered", "The 10:05 fire succeeded.", nil, nil, 0
	return n
}

// TestRenderGolden renders each kind and compares with testdata/*.json (go test -update rewrites them).
func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name string
		c    Channel
		n    Notification
	}{
		{"slack", Channel{Name: "s", Kind: ChannelSlack, Slack: &SlackSettings{URL: sp("https://hooks.slack.com/services/T/B/X")}}, fireFailed()},
		{"dingtalk", Channel{Name: "d", Kind: ChannelDingTalk, DingTalk: &DingTalkSettings{
			URL: sp("https://oapi.dingtalk.com/robot/send?access_token=abc"), AtMobiles: []string{"13800000000"}}}, fireFailed()},
		{"wecom-markdown", Channel{Name: "w", Kind: ChannelWeCom, WeCom: &WeComSettings{URL: sp("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k")}}, fireFailed()},
		{"wecom-text", Channel{Name: "w", Kind: ChannelWeCom, WeCom: &WeComSettings{URL: sp("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"),
			MentionedMobiles: []string{"13800000000"}}}, fireFailed()},
		{"pagerduty-trigger", Channel{Name: "p", Kind: ChannelPagerDuty, PagerDuty: &PagerDutySettings{RoutingKey: sp("R0UT1NGKEY")}}, fireFailed()},
		{"pagerduty-resolve", Channel{Name: "p", Kind: ChannelPagerDuty, PagerDuty: &PagerDutySettings{RoutingKey: sp("R0UT1NGKEY")}}, recovered()},
		{"webhook", Channel{Name: "h", Kind: ChannelWebhook, Webhook: &WebhookSettings{URL: "https://receiver.example.com/alerts"}}, fireFailed()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Render(tc.c, tc.n, renderNow)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != "POST" || req.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("request %s %v", req.Method, req.Header)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, req.Body, "", "  "); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, req.Body)
			}
			golden(t, tc.name+".json", append(pretty.Bytes(), '\n'))
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n got %s\nwant %s", name, got, want)
	}
}

// TestPagerDutyTriggerAndResolveShareTheDedupKey: the recovery closes the incident the trigger opened.
func TestPagerDutyTriggerAndResolveShareTheDedupKey(t *testing.T) {
	c := Channel{Name: "p", Kind: ChannelPagerDuty, PagerDuty: &PagerDutySettings{RoutingKey: sp("K")}}
	var trig, res struct {
		RoutingKey  string `json:"routing_key"`
		EventAction string `json:"event_action"`
		DedupKey    string `json:"dedup_key"`
		Payload     *struct {
			Severity string `json:"severity"`
		} `json:"payload"`
	}
	for _, x := range []struct {
		n   Notification
		out any
	}{{fireFailed(), &trig}, {recovered(), &res}} {
		r, err := Render(c, x.n, renderNow)
		if err != nil {
			t.Fatal(err)
		}
		if r.URL != DefaultPagerDutyURL {
			t.Fatalf("url %s", r.URL)
		}
		if err := json.Unmarshal(r.Body, x.out); err != nil {
			t.Fatal(err)
		}
	}
	if trig.EventAction != "trigger" || res.EventAction != "resolve" || trig.DedupKey != res.DedupKey ||
		trig.DedupKey != fireFailed().DedupKey || res.Payload != nil || trig.Payload.Severity != "critical" || trig.RoutingKey != "K" {
		t.Fatalf("trigger %+v, resolve %+v", trig, res)
	}
}

// TestDingTalkSignature checks the sign query parameter against an independent computation of DingTalk's
// documented algorithm: base64(HMAC-SHA256(key=secret, timestamp + "\n" + secret)), URL-encoded.
func TestDingTalkSignature(t *testing.T) {
	secret := "SECabc123"
	c := Channel{Name: "d", Kind: ChannelDingTalk, DingTalk: &DingTalkSettings{
		URL: sp("https://oapi.dingtalk.com/robot/send?access_token=tok"), Secret: &secret}}
	r, err := Render(c, fireFailed(), renderNow)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	ts := strconv.FormatInt(renderNow.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	if q.Get("access_token") != "tok" || q.Get("timestamp") != ts || q.Get("sign") != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
		t.Fatalf("signed URL %s", r.URL)
	}
	if !strings.Contains(r.URL, "sign="+url.QueryEscape(q.Get("sign"))) {
		t.Fatalf("sign is not URL-encoded in %s", r.URL)
	}
}

// TestWebhookChannelSignsLikeItemWebhooks verifies the signature with the item webhooks' own code.
func TestWebhookChannelSignsLikeItemWebhooks(t *testing.T) {
	secret := webhook.GenerateSecret()
	c := Channel{Name: "h", Kind: ChannelWebhook, Webhook: &WebhookSettings{URL: "https://r.example.com", Secret: &secret}}
	r, err := Render(c, fireFailed(), renderNow)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := webhook.ParseSecret(secret)
	want := webhook.Sign(key, fireFailed().ID, renderNow.Unix(), r.Body)
	if r.Header.Get(webhook.HeaderSignature) != want || r.Header.Get(webhook.HeaderID) != fireFailed().ID ||
		r.Header.Get(webhook.HeaderTimestamp) != strconv.FormatInt(renderNow.Unix(), 10) {
		t.Fatalf("headers %v, want signature %s", r.Header, want)
	}
}

// TestRenderEmail: an RFC 5322 message with the golden body.
func TestRenderEmail(t *testing.T) {
	c := Channel{Name: "m", Kind: ChannelEmail, Email: &EmailSettings{Host: "smtp.example.com", From: "ejserver <alerts@example.com>",
		To: []string{"ops@example.com"}, SubjectPrefix: "[prod]"}}
	m, err := RenderEmail(c, fireFailed())
	if err != nil {
		t.Fatal(err)
	}
	if m.From != "alerts@example.com" || len(m.To) != 1 || m.To[0] != "ops@example.com" {
		t.Fatalf("envelope %+v", m)
	}
	golden(t, "email.eml", m.Data)
}

// TestLongTextIsBounded: a huge notification stays within each service's limits.
func TestLongTextIsBounded(t *testing.T) {
	n := fireFailed()
	n.Title = strings.Repeat("é", 5000)
	n.Text = strings.Repeat("line\n", 20000)
	for _, c := range []Channel{
		{Name: "s", Kind: ChannelSlack, Slack: &SlackSettings{URL: sp("https://x")}},
		{Name: "d", Kind: ChannelDingTalk, DingTalk: &DingTalkSettings{URL: sp("https://x")}},
		{Name: "w", Kind: ChannelWeCom, WeCom: &WeComSettings{URL: sp("https://x")}},
		{Name: "p", Kind: ChannelPagerDuty, PagerDuty: &PagerDutySettings{RoutingKey: sp("k")}},
	} {
		r, err := Render(c, n, renderNow)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Body) > 25000 {
			t.Errorf("%s: body of %d bytes", c.Kind, len(r.Body))
		}
		if !json.Valid(r.Body) {
			t.Errorf("%s: invalid JSON", c.Kind)
		}
	}
}

// TestWebhookEventOmitsAZeroFireTime: an event not tied to a fire has no scheduledAt (not year 1).
func TestWebhookEventOmitsAZeroFireTime(t *testing.T) {
	c := Channel{Name: "h", Kind: ChannelWebhook, Webhook: &WebhookSettings{URL: "https://r.example.com"}}
	r, err := Render(c, TestNotification("ns", "h", renderNow), renderNow)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.Body), "scheduledAt") {
		t.Fatalf("body %s", r.Body)
	}
}
