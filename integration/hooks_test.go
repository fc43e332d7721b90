package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/webhook"
)

// hookCapture is a real HTTP receiver of hooks that keeps every request and when it arrived.
type hookCapture struct {
	url  string
	mu   sync.Mutex
	reqs []captured
	at   []time.Time
}

func newHookCapture(t *testing.T) *hookCapture {
	t.Helper()
	h := &hookCapture{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.reqs = append(h.reqs, captured{Path: r.URL.Path, Header: r.Header.Clone(), Body: b})
		h.at = append(h.at, time.Now())
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *hookCapture) all() []captured {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]captured(nil), h.reqs...)
}

// arrivedAt returns when the request whose body is body arrived.
func (h *hookCapture) arrivedAt(body []byte) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range h.reqs {
		if string(r.Body) == string(body) {
			return h.at[i]
		}
	}
	return time.Time{}
}

// waitSharded polls until every item of job has an owner among n instances.
func waitSharded(t *testing.T, c *testCluster, job string, n int) {
	t.Helper()
	owners := map[string]bool{}
	if !eventually(30*time.Second, func() bool {
		var list struct {
			Items []struct {
				Instance string `json:"instance"`
				Status   string `json:"status"`
			} `json:"items"`
		}
		clear(owners)
		if status, _, err := c.peers[0].Do("GET", "/api/v1/jobs/"+job+"/sharding", nil, &list); err == nil && status == http.StatusOK {
			for _, it := range list.Items {
				if it.Instance != "" && it.Status != "SHARDING_FLAG" {
					owners[it.Instance] = true
				}
			}
		}
		return len(owners) == n
	}) {
		t.Fatalf("job %s: items owned by %d instances, want %d", job, len(owners), n)
	}
}

// afterFire is the body of an afterFire hook.
type afterFire struct {
	Event   string `json:"event"`
	JobName string `json:"jobName"`
	Fire    string `json:"fire"`
	Counts  struct {
		Items, Succeeded, Failed, Lost, NotRun int
	} `json:"counts"`
	Items []struct {
		Item     int    `json:"item"`
		Outcome  string `json:"outcome"`
		Instance string `json:"instance"`
	} `json:"items"`
	Sources map[string]int `json:"sources"`
}

// hooksByFire groups the hook requests a capture got by fire and event.
func hooksByFire(t *testing.T, reqs []captured) (before, after map[string][]captured) {
	t.Helper()
	before, after = map[string][]captured{}, map[string][]captured{}
	for _, r := range reqs {
		var ev struct{ Event, Fire string }
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatalf("hook body %s: %v", r.Body, err)
		}
		switch ev.Event {
		case "beforeFire":
			before[ev.Fire] = append(before[ev.Fire], r)
		case "afterFire":
			after[ev.Fire] = append(after[ev.Fire], r)
		default:
			t.Fatalf("hook event %q", ev.Event)
		}
	}
	return before, after
}

// waitHooks polls until the capture holds n afterFire hooks.
func waitAfterFires(t *testing.T, c *hookCapture, n int, timeout time.Duration) map[string][]captured {
	t.Helper()
	var after map[string][]captured
	if !eventually(timeout, func() bool {
		_, after = hooksByFire(t, c.all())
		return len(after) >= n
	}) {
		t.Fatalf("%d afterFire hooks, want %d", len(after), n)
	}
	return after
}

// 3 peers, a 6-item job: beforeFire and afterFire arrive exactly once per fire (for the whole cluster),
// signed with the job's secret, afterFire after the last item's answer, with a summary of the fire.
func TestHooksOncePerFire(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	const itemDelay = 300 * time.Millisecond
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) { return 200, `{}`, itemDelay })
	hooks := newHookCapture(t)
	c := newCluster(t, 3)
	secret := webhook.GenerateSecret()
	spec := job("hooked", "", 6, recv.URL)
	spec["webhook"] = map[string]any{"url": recv.URL, "secret": secret}
	spec["hooks"] = map[string]any{"beforeFire": hooks.url + "/before", "afterFire": hooks.url + "/after"}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	waitSharded(t, c, "hooked", 3)

	const fires = 3
	for i := range fires {
		mustDo(t, c.peers[i%3], "POST", "/api/v1/jobs/hooked/trigger", map[string]any{}, http.StatusAccepted, nil)
		waitAfterFires(t, hooks, i+1, 30*time.Second)
	}
	// a moment for any duplicate to show up, then count
	time.Sleep(2 * time.Second) // a bounded wait for something that must NOT happen
	before, after := hooksByFire(t, hooks.all())
	if len(after) != fires || len(before) != fires {
		t.Fatalf("%d fires with beforeFire, %d with afterFire, want %d each", len(before), len(after), fires)
	}
	key, _ := webhook.ParseSecret(secret)
	items := recv.Deliveries(harness.Job("hooked"))
	for fire, as := range after {
		if len(as) != 1 || len(before[fire]) != 1 {
			t.Fatalf("fire %s: %d beforeFire, %d afterFire, want 1 each", fire, len(before[fire]), len(as))
		}
		a := as[0]
		ts, _ := strconv.ParseInt(a.Header.Get("webhook-timestamp"), 10, 64)
		if want := webhook.Sign(key, a.Header.Get("webhook-id"), ts, a.Body); a.Header.Get("webhook-signature") != want {
			t.Fatalf("afterFire signature %q, want %q", a.Header.Get("webhook-signature"), want)
		}
		var sum afterFire
		if err := json.Unmarshal(a.Body, &sum); err != nil || sum.JobName != "hooked" || sum.Counts.Items != 6 ||
			sum.Counts.Succeeded != 6 || len(sum.Items) != 6 {
			t.Fatalf("afterFire summary %s (%v)", a.Body, err)
		}
		instances := map[string]bool{}
		for _, it := range sum.Items {
			instances[it.Instance] = true
		}
		if len(instances) != 3 {
			t.Fatalf("afterFire items ran on %d instances, want 3: %s", len(instances), a.Body)
		}
	}
	// afterFire after the last item: every item's answer (arrival + delay) precedes its fire's afterFire
	if len(items) != 6*fires {
		t.Fatalf("%d item deliveries, want %d", len(items), 6*fires)
	}
	for fire, as := range after {
		var sum struct {
			Items []struct {
				ExecutionID string `json:"executionId"`
			} `json:"items"`
		}
		_ = json.Unmarshal(as[0].Body, &sum)
		hookAt := hooks.arrivedAt(as[0].Body)
		for _, it := range sum.Items {
			for _, d := range items {
				if d.Payload.ExecutionID == it.ExecutionID && hookAt.Before(d.ArrivedAt.Add(itemDelay)) {
					t.Fatalf("fire %s: afterFire arrived at %s, before item %d's answer at %s", fire, hookAt,
						d.Payload.ShardingItem, d.ArrivedAt.Add(itemDelay))
				}
			}
		}
	}
}

// A peer killed (SIGKILL) mid-fire: the fire's afterFire still comes exactly once. With failover off it comes
// when the dead peer's session is gone, reporting its items LOST; with failover on, when a survivor's re-run
// of them ended, reporting them succeeded (source FAILOVER).
func TestHooksAfterFireOnceWhenAPeerDiesMidFire(t *testing.T) {
	t.Parallel()
	for _, failover := range []bool{false, true} {
		t.Run(fmt.Sprintf("failover=%v", failover), func(t *testing.T) { testAfterFireWhenAPeerDies(t, failover) })
	}
}

func testAfterFireWhenAPeerDies(t *testing.T, failover bool) {
	const sessionTimeout = 2 * time.Second
	recv := newReceiver(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Source != "FAILOVER" {
			select {
			case <-release:
			case <-time.After(3 * time.Second):
			}
		}
		return 200, `{}`, 0
	})
	hooks := newHookCapture(t)
	c := newCluster(t, 3, withSessionTimeout(sessionTimeout))
	spec := job("dies", "", 6, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	spec["failover"] = failover
	spec["hooks"] = map[string]any{"afterFire": hooks.url + "/after"}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	waitSharded(t, c, "dies", 3)

	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/dies/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 6 })
	if !ok {
		t.Fatalf("%d items in flight, want 6", len(ds))
	}
	victim := c.peers[2]
	victimID := victim.InstanceID()
	victim.Kill()

	waitAfterFires(t, hooks, 1, sessionTimeout+30*time.Second)
	time.Sleep(2 * time.Second) // a bounded wait for a duplicate that must NOT come
	_, after := hooksByFire(t, hooks.all())
	if len(after) != 1 {
		t.Fatalf("%d fires with afterFire, want 1", len(after))
	}
	for _, as := range after {
		if len(as) != 1 {
			t.Fatalf("%d afterFire hooks for the fire, want 1", len(as))
		}
		var sum afterFire
		if err := json.Unmarshal(as[0].Body, &sum); err != nil {
			t.Fatal(err)
		}
		wantLost := 2
		if failover {
			wantLost = 0
		}
		if sum.Counts.Items != 6 || sum.Counts.Lost != wantLost || sum.Counts.Succeeded != 6-wantLost {
			t.Fatalf("afterFire counts %+v, want %d succeeded and %d lost: %s", sum.Counts, 6-wantLost, wantLost, as[0].Body)
		}
		for _, it := range sum.Items {
			if !failover && (it.Outcome == "LOST") != (it.Instance == victimID) {
				t.Fatalf("item %d %s on %s (victim %s)", it.Item, it.Outcome, it.Instance, victimID)
			}
			if failover && it.Instance == victimID {
				t.Fatalf("item %d ended on the victim %s", it.Item, victimID)
			}
		}
		if failover && sum.Sources["FAILOVER"] != 2 {
			t.Fatalf("afterFire sources %v, want 2 FAILOVER: %s", sum.Sources, as[0].Body)
		}
	}
}
