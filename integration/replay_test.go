package integration

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// A failed item replayed: a new execution (its own webhook-id, source MANUAL, the original's scheduledAt)
// linked to the original in the history; the failed list finds the original; a success can't be replayed.
func TestReplayLinksTheNewExecutionToTheFailedOne(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var calls atomic.Int64
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if calls.Add(1) == 1 {
			return 500, `{"error":"down"}`, 0
		}
		return 200, `{}`, 0
	})
	c := newCluster(t, 2)
	spec := job("rp", "", 1, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	if !eventually(30*time.Second, func() bool {
		s, _, _ := c.peers[0].Do("POST", "/api/v1/jobs/rp/trigger", nil, nil)
		return s == http.StatusAccepted
	}) {
		t.Fatal("trigger refused")
	}
	type exec struct {
		ID          string    `json:"id"`
		Source      string    `json:"source"`
		Success     bool      `json:"success"`
		CompletedAt time.Time `json:"completedAt"`
		ScheduledAt time.Time `json:"scheduledAt"`
		ReplayOf    string    `json:"replayOf"`
	}
	var failed exec
	var p *harness.Peer // the peer whose history (SQLite: its own) holds the run
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if !eventually(20*time.Second, func() bool {
		for _, q := range c.peers {
			var page struct{ Items []exec }
			mustDo(t, q, "GET", "/api/v1/executions?job=rp&success=false&from="+since, nil, http.StatusOK, &page)
			if len(page.Items) == 1 {
				failed, p = page.Items[0], q
			}
		}
		return failed.ID != ""
	}) {
		t.Fatal("the failed execution is not listed")
	}
	var started exec
	mustDo(t, p, "POST", "/api/v1/executions/"+failed.ID+"/replay", nil, http.StatusAccepted, &started)
	if started.ID == failed.ID || started.ReplayOf != failed.ID || started.Source != "MANUAL" || !started.ScheduledAt.Equal(failed.ScheduledAt) {
		t.Fatalf("replay %+v of %+v", started, failed)
	}
	var ended exec
	if !eventually(20*time.Second, func() bool {
		s, _, err := p.Do("GET", "/api/v1/executions/"+started.ID, nil, &ended) // 404 until its record is written
		return err == nil && s == http.StatusOK && !ended.CompletedAt.IsZero()
	}) {
		t.Fatalf("the replay did not end: %+v", ended)
	}
	if !ended.Success || ended.ReplayOf != failed.ID {
		t.Fatalf("replay ended %+v", ended)
	}
	ds := recv.Deliveries(nil)
	if len(ds) != 2 || ds[1].Header.Get("webhook-id") != started.ID || ds[1].Payload.Source != "MANUAL" {
		t.Fatalf("deliveries %d, the second %+v", len(ds), ds[len(ds)-1].Payload)
	}
	mustDo(t, p, "POST", "/api/v1/executions/"+started.ID+"/replay", nil, http.StatusConflict, nil)
	mustDo(t, p, "POST", "/api/v1/executions/nosuch/replay", nil, http.StatusNotFound, nil)
}
