package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// fires groups deliveries by scheduled time.
func fires(ds []harness.Delivery) map[time.Time][]harness.Delivery {
	out := map[time.Time][]harness.Delivery{}
	for _, d := range ds {
		out[d.Payload.ScheduledAt] = append(out[d.Payload.ScheduledAt], d)
	}
	return out
}

// completeFires counts scheduled times at which all n items arrived.
func completeFires(ds []harness.Delivery, n int) int {
	c := 0
	for _, group := range fires(ds) {
		if len(group) == n {
			c++
		}
	}
	return c
}

// Sequential (no t.Parallel): it asserts that nothing arrives later than 500 ms after a delete, a bound that
// other tests' load could stretch.
func TestJobFiresAndFollowsItsConfig(t *testing.T) {
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]

	spec := job("report", "* * * * * ?", 3, recv.URL)
	spec["shardingItemParameters"] = "0=Beijing,1=Shanghai,2=Guangzhou"
	spec["jobParameter"] = "batch=500"
	var created map[string]any
	mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, &created)
	if created["jobName"] != "report" || created["status"] == nil {
		t.Fatalf("create answered %v", created)
	}

	// every second, three items, each once per fire, with the contract's body and headers
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return completeFires(ds, 3) >= 2 })
	if !ok {
		t.Fatalf("no two complete fires; got %d deliveries", len(ds))
	}
	params := map[int]string{0: "Beijing", 1: "Shanghai", 2: "Guangzhou"}
	ids := map[string]bool{}
	for at, group := range fires(ds) {
		seen := map[int]bool{}
		for _, d := range group {
			if seen[d.Payload.ShardingItem] {
				t.Fatalf("fire %v delivered item %d twice", at, d.Payload.ShardingItem)
			}
			seen[d.Payload.ShardingItem] = true
		}
		if at.Nanosecond() != 0 {
			t.Errorf("scheduledAt %v is not on a second", at)
		}
	}
	for _, d := range ds {
		pl := d.Payload
		if pl.JobName != "report" || pl.ShardingTotalCount != 3 || pl.ShardingParameter != params[pl.ShardingItem] ||
			pl.JobParameter != "batch=500" || pl.Source != "NORMAL_TRIGGER" || pl.Attempt != 1 || pl.InstanceID != p.InstanceID() {
			t.Fatalf("payload %+v", pl)
		}
		if d.Method != "POST" || d.Header.Get("Content-Type") != "application/json" ||
			d.Header.Get("webhook-id") != pl.ExecutionID || d.Header.Get("webhook-timestamp") == "" {
			t.Fatalf("headers %v", d.Header)
		}
		if ids[pl.ExecutionID] {
			t.Fatalf("execution id %s used twice", pl.ExecutionID)
		}
		ids[pl.ExecutionID] = true
		var sc map[string]any
		if err := json.Unmarshal([]byte(d.Header.Get("shardingContext")), &sc); err != nil ||
			sc["jobName"] != "report" || sc["shardingItem"] != float64(pl.ShardingItem) ||
			sc["shardingParameter"] != pl.ShardingParameter || sc["taskId"] != pl.TaskID {
			t.Fatalf("shardingContext header %q: %v", d.Header.Get("shardingContext"), err)
		}
		if !strings.HasPrefix(pl.TaskID, "report@-@") {
			t.Fatalf("taskId %q", pl.TaskID)
		}
	}

	// a changed cron takes effect without a restart
	var got map[string]any
	status, _, _ := p.Do("GET", "/api/v1/jobs/report", nil, &got)
	if status != http.StatusOK {
		t.Fatalf("get: %d", status)
	}
	spec["cron"] = "0/3 * * * * ?"
	changedAt := time.Now()
	mustDo(t, p, "PUT", "/api/v1/jobs/report", spec, http.StatusOK, nil, "If-Match", fmt.Sprintf(`"%v"`, got["version"]))
	recv.Reset()
	ds, ok = recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		n := 0
		for at := range fires(ds) {
			if at.After(changedAt.Add(time.Second)) {
				n++
			}
		}
		return n >= 2
	})
	if !ok {
		t.Fatal("no fires after the cron change")
	}
	for at := range fires(ds) {
		if at.After(changedAt.Add(time.Second)) && at.Second()%3 != 0 {
			t.Fatalf("fire at %v after the change to 0/3", at)
		}
	}

	// a manual trigger with a parameter override and one item
	var trig map[string]any
	mustDo(t, p, "POST", "/api/v1/jobs/report/trigger", map[string]any{"jobParameter": "by-hand", "items": []int{1}}, http.StatusAccepted, &trig)
	if items, _ := trig["items"].([]any); len(items) != 1 || items[0] != float64(1) {
		t.Fatalf("trigger answered %v", trig)
	}
	if _, ok := recv.WaitFor(10*time.Second, func(ds []harness.Delivery) bool {
		for _, d := range ds {
			if d.Payload.Source == "MANUAL" {
				return d.Payload.ShardingItem == 1 && d.Payload.JobParameter == "by-hand"
			}
		}
		return false
	}); !ok {
		t.Fatal("the manual trigger did not arrive as item 1 with the override")
	}
	manual := recv.Deliveries(func(d harness.Delivery) bool { return d.Payload.Source == "MANUAL" })
	if len(manual) != 1 {
		t.Fatalf("%d manual deliveries", len(manual))
	}

	// the peer's metrics count what happened (the manual item's outcome is recorded just after it arrives)
	var metrics string
	eventually(5*time.Second, func() bool {
		metrics = string(mustDo(t, p, "GET", "/metrics", nil, http.StatusOK, nil))
		return strings.Contains(metrics, `ejserver_item_executions_total{outcome="success",source="MANUAL"} 1`)
	})
	for _, want := range []string{
		`ejserver_item_executions_total{outcome="success",source="NORMAL_TRIGGER"}`,
		`ejserver_item_executions_total{outcome="success",source="MANUAL"} 1`,
		"ejserver_zookeeper_session_up 1", "ejserver_leaderships 1", "ejserver_scheduled_jobs 1",
		"ejserver_fire_lateness_seconds_bucket", "ejserver_reshardings_total",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// a deleted job stops firing at once
	mustDo(t, p, "DELETE", "/api/v1/jobs/report", nil, http.StatusNoContent, nil)
	deletedAt := time.Now()
	mustDo(t, p, "GET", "/api/v1/jobs/report", nil, http.StatusNotFound, nil)
	late, _ := recv.WaitFor(4*time.Second, func(ds []harness.Delivery) bool {
		for _, d := range ds {
			if d.ArrivedAt.After(deletedAt.Add(500 * time.Millisecond)) {
				return true
			}
		}
		return false
	})
	for _, d := range late {
		if d.ArrivedAt.After(deletedAt.Add(500 * time.Millisecond)) {
			t.Fatalf("a delivery arrived %s after the delete", d.ArrivedAt.Sub(deletedAt))
		}
	}
}

func TestOneOffJobRunsOnlyWhenTriggered(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", job("once", "", 2, recv.URL), http.StatusCreated, nil)
	var v map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/once", nil, http.StatusOK, &v)
	if _, has := v["nextFireTime"]; has {
		t.Fatalf("a one-off job has a next fire time: %v", v)
	}
	mustDo(t, p, "POST", "/api/v1/jobs/once/trigger", nil, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatalf("trigger delivered %d items, want 2", len(ds))
	}
	for _, d := range ds {
		if d.Payload.Source != "MANUAL" {
			t.Fatalf("source %s", d.Payload.Source)
		}
	}
}

func TestRestartedPeerPicksUpJobsAndExitsCleanly(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	a := c.peers[0]
	mustDo(t, a, "POST", "/api/v1/jobs", job("persist", "* * * * * ?", 1, recv.URL), http.StatusCreated, nil)
	if _, ok := recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 }); !ok {
		t.Fatal("no fire")
	}
	if err := a.Stop(20 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v (want exit 0)", err)
	}
	if !strings.Contains(a.Log(), "ejserver stopped") {
		t.Fatal("no clean stop in the log")
	}
	// a new peer on the same namespace finds the job in ZooKeeper and fires it
	b := c.add()
	recv.Reset()
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("the new peer did not fire the stored job")
	}
	for _, d := range ds {
		if d.Payload.InstanceID != b.InstanceID() {
			t.Fatalf("fired by %s, want the new peer %s", d.Payload.InstanceID, b.InstanceID())
		}
	}
	var items struct {
		Items []struct {
			Instance string `json:"instance"`
		} `json:"items"`
	}
	mustDo(t, b, "GET", "/api/v1/jobs/persist/sharding", nil, http.StatusOK, &items)
	if owner := items.Items[0].Instance; owner != b.InstanceID() {
		t.Fatalf("item owned by %v", owner)
	}
}
