package webhook

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A fire's items (and a job's fires) share one template per webhook setting: the URL is parsed, the secret
// decoded and the static headers built once, not per item. A setting that changes in anything the template
// holds gets a template of its own, and its requests carry the change.
func TestPrepareSharesOneTemplatePerWebhookSetting(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, status(http.StatusNoContent))
	s, _ := newTestSender(t, Config{})
	d := testDelivery(rec.URL)
	d.Webhook.Secret = GenerateSecret()
	d.Webhook.Headers = map[string]string{"X-Team": "settlement"}

	first := s.Prepare(d)
	d2 := d
	d2.Payload.ShardingItem, d2.Payload.ShardingParameter = 3, "Shenzhen"
	d2.Webhook.Headers = map[string]string{"X-Team": "settlement"} // equal, not the same map
	second := s.Prepare(d2)
	if first.err != nil || second.err != nil {
		t.Fatalf("prepare: %v, %v", first.err, second.err)
	}
	if first.p.template != second.p.template {
		t.Error("two items of one webhook setting got two templates")
	}
	if first.p.sc[0] == second.p.sc[0] {
		t.Errorf("two items share a shardingContext header: %q", first.p.sc[0])
	}

	changes := map[string]func(d *Delivery){
		"header value":  func(d *Delivery) { d.Webhook.Headers = map[string]string{"X-Team": "billing"} },
		"header added":  func(d *Delivery) { d.Webhook.Headers = map[string]string{"X-Team": "settlement", "X-Env": "prod"} },
		"secret":        func(d *Delivery) { d.Webhook.Secret = GenerateSecret() },
		"method":        func(d *Delivery) { d.Webhook.Method = http.MethodPut },
		"timeout":       func(d *Delivery) { d.Webhook.TimeoutMs = 1234 },
		"connect":       func(d *Delivery) { d.Webhook.ConnectTimeoutMs = 321 },
		"previous":      func(d *Delivery) { d.Webhook.PreviousSecret = GenerateSecret() },
		"url (a query)": func(d *Delivery) { d.Webhook.URL = rec.URL + "?team=billing" },
	}
	for name, change := range changes {
		d3 := d
		change(&d3)
		third := s.Prepare(d3)
		if third.err != nil {
			t.Fatalf("%s: prepare: %v", name, third.err)
		}
		if third.p.template == first.p.template {
			t.Errorf("%s changed, and the delivery still got the old setting's template", name)
		}
	}

	d4 := d
	d4.Webhook.Headers = map[string]string{"X-Team": "billing"}
	if res := s.Send(context.Background(), s.Prepare(d4)); !res.Success {
		t.Fatalf("delivery failed: %s", res.FailureCause)
	}
	if got := rec.requests()[0].header.Get("X-Team"); got != "billing" {
		t.Errorf("X-Team = %q after the job's header changed, want billing", got)
	}
}

// The templates kept are bounded, in all and per URL, and a dropped one is made again when needed.
func TestTemplatesAreBounded(t *testing.T) {
	t.Parallel()
	s, _ := newTestSender(t, Config{})
	s.templates = newTemplates(16)
	base := testDelivery("http://127.0.0.1:9/hook")
	for i := range 100 {
		d := base
		d.Webhook.URL = fmt.Sprintf("http://127.0.0.1:9/hook/%d", i)
		if pr := s.Prepare(d); pr.err != nil {
			t.Fatal(pr.err)
		}
		if n := s.templates.len(); n > 16 {
			t.Fatalf("%d templates kept, bound 16", n)
		}
	}
	for i := range 20 { // one URL, twenty header settings
		d := base
		d.Webhook.Headers = map[string]string{"X-Job": fmt.Sprint(i)}
		if pr := s.Prepare(d); pr.err != nil {
			t.Fatal(pr.err)
		}
	}
	s.templates.mu.RLock()
	perURL := len(s.templates.byURL[base.Webhook.URL])
	s.templates.mu.RUnlock()
	if perURL > maxTemplatesPerURL {
		t.Errorf("%d templates kept for one URL, bound %d", perURL, maxTemplatesPerURL)
	}
}

// A refused setting is refused at every item (an error is never kept as a template).
func TestTemplateErrorsAreNotKept(t *testing.T) {
	t.Parallel()
	s, _ := newTestSender(t, Config{})
	d := testDelivery("http://169.254.169.254/latest")
	for range 2 {
		if pr := s.Prepare(d); pr.err == nil {
			t.Fatal("a metadata target was prepared")
		}
	}
	if n := s.templates.len(); n != 0 {
		t.Errorf("%d templates kept after refusals", n)
	}
}

// With the previous secret in its grace period, both secrets sign (current first); after it, only the
// current one, from the same template.
func TestTemplateSignsWithBothSecretsInTheGracePeriod(t *testing.T) {
	t.Parallel()
	s, clk := newTestSender(t, Config{})
	d := testDelivery("http://127.0.0.1:9/hook")
	cur, prev := GenerateSecret(), GenerateSecret()
	d.Webhook.Secret, d.Webhook.PreviousSecret = cur, prev
	d.Webhook.PreviousSecretExpiresAt = clk.Now().Add(time.Minute)
	tp, err := s.templates.get(d.Webhook, s.makeTemplate)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"a":1}`)
	now := clk.Now()
	want, _ := SignatureHeader([]string{cur, prev}, "id", now.Unix(), body)
	if got := tp.signature(d.Webhook, now, "id", now.Unix(), body); got != want {
		t.Errorf("in the grace period: %q, want %q", got, want)
	}
	later := now.Add(2 * time.Minute)
	want, _ = SignatureHeader([]string{cur}, "id", later.Unix(), body)
	if got := tp.signature(d.Webhook, later, "id", later.Unix(), body); got != want {
		t.Errorf("after the grace period: %q, want %q", got, want)
	}
	d.Webhook.Secret = ""
	tp, err = s.templates.get(d.Webhook, s.makeTemplate)
	if err != nil {
		t.Fatal(err)
	}
	want, _ = SignatureHeader([]string{prev}, "id", now.Unix(), body)
	if got := tp.signature(d.Webhook, now, "id", now.Unix(), body); got != want {
		t.Errorf("the previous secret alone: %q, want %q", got, want)
	}
}

// maxPrepareAllocs: 29 before templates (the URL parsed, the secret decoded, the header map and a map per
// header checked, per item).
const maxPrepareAllocs = 10

// Preparing an item of a known setting allocates only what is the item's own (the prepared delivery, its
// shardingContext header, its body): nothing per header or secret of the job.
func TestPrepareAllocatesOnlyTheItemsOwn(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s, _ := newTestSender(t, Config{})
	d := testDelivery("http://127.0.0.1:9/hook")
	d.Webhook.Secret = GenerateSecret()
	d.Webhook.Headers = map[string]string{"Authorization": "Bearer abc", "X-Team": "settlement", "X-Env": "prod"}
	s.Prepare(d)
	got := testing.AllocsPerRun(100, func() { s.Prepare(d) })
	t.Logf("%.0f allocations per Prepare", got)
	if got > maxPrepareAllocs {
		t.Errorf("Prepare allocates %.0f times per item, want at most %d", got, maxPrepareAllocs)
	}
}
