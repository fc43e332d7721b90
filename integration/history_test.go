package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

type executionList struct {
	Items []struct {
		ID           string `json:"id"`
		JobName      string `json:"jobName"`
		ShardingItem int    `json:"shardingItem"`
		InstanceID   string `json:"instanceId"`
		Success      bool   `json:"success"`
		StatusCode   int    `json:"statusCode"`
		Source       string `json:"source"`
	} `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// Peers that share PostgreSQL show the whole cluster's history; when PostgreSQL stops, jobs keep firing and
// /readyz says the store is degraded; when it is back, records are written again.
func TestSharedPostgresHistoryAndOutage(t *testing.T) {
	t.Parallel()
	pg, dsn := newPostgres(t, "ejhist")
	recv := newReceiver(t)
	c := newCluster(t, 2, withArgs("--history-dsn", dsn))
	a, b := c.peers[0], c.peers[1]
	mustDo(t, a, "POST", "/api/v1/jobs", job("hist", "* * * * * ?", 2, recv.URL), http.StatusCreated, nil)
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return completeFires(ds, 2) >= 2 }); !ok {
		t.Fatal("no fires")
	}

	// peer a's API lists executions peer b did, and the other way round
	for _, p := range []*harness.Peer{a, b} {
		other := b.InstanceID()
		if p == b {
			other = a.InstanceID()
		}
		var list executionList
		found := false
		deadline := time.Now().Add(15 * time.Second)
		for !found && time.Now().Before(deadline) {
			mustDo(t, p, "GET", "/api/v1/jobs/hist/executions?instance="+other+"&success=true&limit=5", nil, http.StatusOK, &list)
			found = len(list.Items) > 0
		}
		if !found {
			t.Fatalf("peer %s does not list executions of %s", p.InstanceID(), other)
		}
		for _, e := range list.Items {
			if e.InstanceID != other || !e.Success || e.StatusCode != 200 || e.Source != "NORMAL_TRIGGER" {
				t.Fatalf("execution %+v", e)
			}
		}
		var one map[string]any
		mustDo(t, p, "GET", "/api/v1/executions/"+list.Items[0].ID, nil, http.StatusOK, &one)
	}
	var traces struct {
		Items []struct {
			State string `json:"state"`
		} `json:"items"`
	}
	mustDo(t, b, "GET", "/api/v1/jobs/hist/traces?limit=20", nil, http.StatusOK, &traces)
	if len(traces.Items) == 0 {
		t.Fatal("no status traces")
	}
	var jv struct {
		Stats *struct {
			LastHourSuccess int64 `json:"lastHourSuccess"`
		} `json:"stats"`
		LastResult *struct {
			Success bool `json:"success"`
		} `json:"lastResult"`
	}
	mustDo(t, a, "GET", "/api/v1/jobs/hist", nil, http.StatusOK, &jv)
	if jv.Stats == nil || jv.Stats.LastHourSuccess < 2 || jv.LastResult == nil {
		t.Fatalf("job view has no statistics: %+v", jv)
	}

	// PostgreSQL stops: fires go on, readiness reports the store degraded
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		n := 0
		for at, group := range fires(ds) {
			if at.After(stopped.Add(time.Second)) && len(group) == 2 {
				n++
			}
		}
		return n >= 3
	}); !ok {
		t.Fatal("dispatch stopped with PostgreSQL")
	}
	var ready struct {
		Ready  bool `json:"ready"`
		Checks struct {
			History struct {
				Status string `json:"status"`
			} `json:"history"`
		} `json:"checks"`
	}
	mustDo(t, a, "GET", "/readyz", nil, http.StatusOK, &ready)
	if !ready.Ready || ready.Checks.History.Status != "degraded" {
		t.Fatalf("readyz %+v", ready)
	}
	mustDo(t, a, "GET", "/api/v1/executions", nil, http.StatusServiceUnavailable, nil)

	// back: records written again (an execution that started after the restart shows up)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	deadline := time.Now().Add(40 * time.Second)
	for {
		var list executionList
		status, _, _ := a.Do("GET", "/api/v1/jobs/hist/executions?from="+back.UTC().Format(time.RFC3339)+"&limit=1", nil, &list)
		if status == http.StatusOK && len(list.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no execution recorded after PostgreSQL came back (last status %d)", status)
		}
		recv.WaitFor(500*time.Millisecond, func([]harness.Delivery) bool { return false })
	}
}
