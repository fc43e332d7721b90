package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// notification is the data of a webhook channel's event.
type notification struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	Job         string    `json:"job"`
	Rule        string    `json:"rule"`
	DedupKey    string    `json:"dedupKey"`
	Resolve     bool      `json:"resolve"`
	ScheduledAt time.Time `json:"scheduledAt"`
	Folded      int       `json:"folded"`
	Partial     bool      `json:"partial"`
	Counts      *struct {
		Items, Succeeded, Failed, Lost int
	} `json:"counts"`
	Samples []struct {
		Item    int    `json:"item"`
		Outcome string `json:"outcome"`
		Status  int    `json:"status"`
	} `json:"samples"`
}

func notificationsOf(t *testing.T, reqs []captured) []notification {
	t.Helper()
	var out []notification
	for _, r := range reqs {
		var ev struct {
			Type string       `json:"type"`
			Data notification `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &ev); err != nil || ev.Type != "ejserver.notification" {
			t.Fatalf("channel event %s (%v)", r.Body, err)
		}
		out = append(out, ev.Data)
	}
	return out
}

func webhookChannel(t *testing.T, p *harness.Peer, name, url string) {
	t.Helper()
	mustDo(t, p, "POST", "/api/v1/channels", map[string]any{"name": name, "kind": "webhook",
		"webhook": map[string]any{"url": url}}, http.StatusCreated, nil)
}

// 3 peers, a 50-item job whose items all fail: each fire sends exactly one notification (not one per item,
// not one per peer), counting the 50 failures and sampling at most 10.
func TestAlertsOneNotificationPerFailingFire(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) { return 500, "down", 0 })
	ops := newCapture(t, nil)
	c := newCluster(t, 3)
	webhookChannel(t, c.peers[1], "ops", ops.srv.URL+"/alerts")
	spec := job("fifty", "0/2 * * * * ?", 50, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	spec["alerts"] = map[string]any{"rules": []any{map[string]any{"on": []string{"FIRE_FAILED"}, "channels": []string{"ops"}}}}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)

	ops.wait(t, 3, 40*time.Second)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/fifty/disable", nil, http.StatusOK, nil)
	time.Sleep(3 * time.Second) // a bounded wait: the fires in flight end, and any duplicate would show up
	ns := notificationsOf(t, ops.all())
	t.Logf("%d notifications", len(ns))
	byFire := map[time.Time]int{}
	for _, n := range ns {
		byFire[n.ScheduledAt.UTC()]++
		if n.Kind != "FIRE_FAILED" || n.Job != "fifty" || n.Counts == nil || n.Counts.Items != 50 || n.Counts.Failed != 50 ||
			len(n.Samples) != 10 || n.Samples[0].Status != 500 {
			t.Fatalf("notification %+v", n)
		}
	}
	fires := map[time.Time]int{}
	for _, d := range recv.Deliveries(harness.Job("fifty")) {
		fires[d.Payload.ScheduledAt.UTC()]++
	}
	for at, n := range byFire {
		if n != 1 {
			t.Fatalf("fire %s: %d notifications, want 1", at, n)
		}
		if fires[at] != 50 {
			t.Fatalf("fire %s notified with %d items delivered", at, fires[at])
		}
	}
	for at, n := range fires {
		if n == 50 && byFire[at] != 1 {
			t.Fatalf("fire %s (50 items failed): %d notifications, want 1", at, byFire[at])
		}
	}
}

// A quiet period folds repeats into a digest; the recovery goes once, and a PagerDuty-kind channel gets one
// trigger and one resolve with the same dedup_key.
func TestAlertsQuietPeriodAndRecovery(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var failing atomic.Bool
	failing.Store(true)
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) {
		if failing.Load() {
			return 503, "down", 0
		}
		return 200, "{}", 0
	})
	digest := newCapture(t, nil)
	pd := newCapture(t, func(*http.Request) (int, string) { return 202, `{"status":"success"}` })
	c := newCluster(t, 3)
	webhookChannel(t, c.peers[0], "digest", digest.srv.URL+"/alerts")
	mustDo(t, c.peers[0], "POST", "/api/v1/channels", map[string]any{"name": "pd", "kind": "pagerduty",
		"pagerduty": map[string]any{"routingKey": strings.Repeat("R", 32), "url": pd.srv.URL + "/v2/enqueue"}}, http.StatusCreated, nil)
	spec := job("flaky", "* * * * * ?", 3, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	spec["alerts"] = map[string]any{"rules": []any{
		map[string]any{"on": []string{"FIRE_FAILED", "RECOVERED"}, "channels": []string{"pd"}, "quietPeriodSeconds": 600},
		map[string]any{"on": []string{"FIRE_FAILED"}, "channels": []string{"digest"}, "quietPeriodSeconds": 3},
	}}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)

	// failing fires for a while: the digest rule sends the first at once, then digests
	var ns []notification
	if !eventually(40*time.Second, func() bool {
		ns = notificationsOf(t, digest.all())
		return len(ns) >= 2 && ns[len(ns)-1].Folded > 0
	}) {
		t.Fatalf("no digest: %+v", ns)
	}
	failed := map[time.Time]bool{}
	for _, d := range recv.Deliveries(harness.Job("flaky")) {
		failed[d.Payload.ScheduledAt.UTC()] = true
	}
	ns = notificationsOf(t, digest.all())
	t.Logf("%d failed fires, %d notifications, the last folding %d", len(failed), len(ns), ns[len(ns)-1].Folded)
	if len(ns) >= len(failed) {
		t.Fatalf("%d notifications for %d failed fires: the quiet period folded nothing", len(ns), len(failed))
	}

	failing.Store(false)
	pd.wait(t, 2, 30*time.Second)
	time.Sleep(3 * time.Second) // more successful fires: no second resolve may follow
	reqs := pd.all()
	var events []struct {
		EventAction string `json:"event_action"`
		DedupKey    string `json:"dedup_key"`
		RoutingKey  string `json:"routing_key"`
	}
	for _, r := range reqs {
		var ev struct {
			EventAction string `json:"event_action"`
			DedupKey    string `json:"dedup_key"`
			RoutingKey  string `json:"routing_key"`
		}
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if len(events) != 2 || events[0].EventAction != "trigger" || events[1].EventAction != "resolve" ||
		events[0].DedupKey == "" || events[0].DedupKey != events[1].DedupKey {
		t.Fatalf("PagerDuty events %+v, want one trigger and one resolve with the same dedup_key", events)
	}
}

// A channel that hangs does not hold dispatch: the job's next fires reach their webhook while the
// channel's first request is still waiting for an answer.
func TestAlertsHangingChannelDoesNotHoldDispatch(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) { return 500, "down", 0 })
	release := make(chan struct{})
	var hanging atomic.Int32
	hang := newCapture(t, func(*http.Request) (int, string) {
		hanging.Add(1)
		<-release
		return 200, "ok"
	})
	t.Cleanup(func() { close(release) })
	c := newCluster(t, 3)
	webhookChannel(t, c.peers[0], "stuck", hang.srv.URL+"/alerts")
	spec := job("held", "* * * * * ?", 3, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	spec["alerts"] = map[string]any{"rules": []any{map[string]any{"on": []string{"FIRE_FAILED"}, "channels": []string{"stuck"}}}}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)

	hang.wait(t, 1, 30*time.Second)
	since := time.Now()
	later, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		fires := map[time.Time]bool{}
		for _, d := range ds {
			if d.ArrivedAt.After(since) {
				fires[d.Payload.ScheduledAt] = true
			}
		}
		return len(fires) >= 3
	})
	if !ok {
		t.Fatalf("only %d deliveries after the channel hung", len(later))
	}
	if hanging.Load() < 1 {
		t.Fatal("the channel was not hanging")
	}
	select {
	case <-release:
		t.Fatal("released early")
	default: // still hanging while the fires went out
	}
}

// Accepted (202) items whose leases run out on 3 peers: one LEASE_EXPIRED for the fire (not one per item),
// one FIRE_FAILED counting the 3 expired items, and the fire's afterFire once their leases ended, whichever
// peer ended them.
func TestAlertsLeaseExpiryOncePerFire(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) { return http.StatusAccepted, "", 0 })
	ops := newCapture(t, nil)
	hooks := newHookCapture(t)
	c := newCluster(t, 3)
	webhookChannel(t, c.peers[0], "ops", ops.srv.URL+"/alerts")
	spec := asyncJob("leased", "", 3, recv.URL, 2)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	spec["alerts"] = map[string]any{"rules": []any{map[string]any{"on": []string{"LEASE_EXPIRED", "FIRE_FAILED"}, "channels": []string{"ops"}}}}
	spec["hooks"] = map[string]any{"afterFire": hooks.url + "/after"}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	waitSharded(t, c, "leased", 3)
	mustDo(t, c.peers[1], "POST", "/api/v1/jobs/leased/trigger", map[string]any{}, http.StatusAccepted, nil)

	waitAfterFires(t, hooks, 1, 30*time.Second)
	ops.wait(t, 2, 10*time.Second)
	time.Sleep(2 * time.Second) // a bounded wait for a duplicate that must NOT come
	kinds := map[string]int{}
	for _, n := range notificationsOf(t, ops.all()) {
		kinds[n.Kind]++
		if n.Kind == "FIRE_FAILED" && (n.Counts == nil || n.Counts.Failed != 3 || n.Samples[0].Outcome != "EXPIRED") {
			t.Fatalf("FIRE_FAILED %+v", n)
		}
	}
	if kinds["LEASE_EXPIRED"] != 1 || kinds["FIRE_FAILED"] != 1 || len(ops.all()) != 2 {
		t.Fatalf("notifications by kind %v, want one LEASE_EXPIRED and one FIRE_FAILED", kinds)
	}
	_, after := hooksByFire(t, hooks.all())
	for _, as := range after {
		var sum afterFire
		if err := json.Unmarshal(as[0].Body, &sum); err != nil || len(as) != 1 || sum.Counts.Failed != 3 {
			t.Fatalf("afterFire (%d) %s", len(as), as[0].Body)
		}
	}
}
