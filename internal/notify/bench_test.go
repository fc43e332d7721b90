package notify

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkDeliverToAHangingChannel is what Deliver costs its caller (dispatch) while one of the two
// channels it names hangs: it only queues (or, the hanging channel's queue full, drops and counts).
func BenchmarkDeliverToAHangingChannel(b *testing.B) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer slow.Close()
	defer fast.Close()
	defer close(release)
	d := NewDispatcher(DispatcherConfig{Channels: channelMap{"slow": slackChannel("slow", slow.URL),
		"fast": slackChannel("fast", fast.URL)}, Observer: newTally(), DrainTimeout: 10 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	defer d.Stop()
	n := fireFailed()
	names := []string{"slow", "fast"}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		d.Deliver(n, names)
	}
}

// BenchmarkRender renders a 2,000-item fire's notification for each kind.
func BenchmarkRender(b *testing.B) {
	for _, c := range []Channel{
		{Name: "s", Kind: ChannelSlack, Slack: &SlackSettings{URL: sp("https://x")}},
		{Name: "d", Kind: ChannelDingTalk, DingTalk: &DingTalkSettings{URL: sp("https://x"), Secret: sp("SEC")}},
		{Name: "w", Kind: ChannelWeCom, WeCom: &WeComSettings{URL: sp("https://x")}},
		{Name: "p", Kind: ChannelPagerDuty, PagerDuty: &PagerDutySettings{RoutingKey: sp("k")}},
		{Name: "h", Kind: ChannelWebhook, Webhook: &WebhookSettings{URL: "https://x", Secret: sp("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")}},
		{Name: "m", Kind: ChannelEmail, Email: &EmailSettings{Host: "h", From: "a@example.com", To: []string{"b@example.com"}}},
	} {
		b.Run(string(c.Kind), func(b *testing.B) {
			n := fireFailed()
			b.ReportAllocs()
			for range b.N {
				var err error
				if c.Kind == ChannelEmail {
					_, err = RenderEmail(c, n)
				} else {
					_, err = Render(c, n, renderNow)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
