package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

type backfillView struct {
	ID      string    `json:"id"`
	State   string    `json:"state"`
	Total   int       `json:"total"`
	Done    int       `json:"done"`
	Items   int       `json:"items"`
	Owner   string    `json:"owner"`
	Claims  int       `json:"claims"`
	Current time.Time `json:"current"`
}

func getBackfill(t *testing.T, p *harness.Peer, job, id string) backfillView {
	t.Helper()
	var b backfillView
	mustDo(t, p, "GET", "/api/v1/jobs/"+job+"/backfill/"+id, nil, http.StatusOK, &b)
	return b
}

// A backfill of 30 past fires of a 3-item job on 3 peers runs every item of every fire once, with source
// BACKFILL and the original scheduledAt; its owner killed mid-run, another peer continues it, and no fire's
// item reaches the receiver under two webhook-ids (the one in flight is re-sent under its own).
func TestBackfillRunsEveryFireOnceAndSurvivesItsOwnersDeath(t *testing.T) {
	t.Parallel()
	const sessionTimeout = 2 * time.Second
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Source == "BACKFILL" {
			return 200, `{}`, 60 * time.Millisecond // slow enough that the kill lands mid-run
		}
		return 200, `{}`, 0
	})
	c := newCluster(t, 3, withSessionTimeout(sessionTimeout))
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("bf", "0 * * * * ?", 3, recv.URL), http.StatusCreated, nil)

	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var started backfillView
	mustDo(t, c.peers[1], "POST", "/api/v1/jobs/bf/backfill", map[string]any{
		"from": from.Format(time.RFC3339), "to": from.Add(29 * time.Minute).Format(time.RFC3339)}, http.StatusAccepted, &started)
	if started.Total != 30 || started.State != "RUNNING" {
		t.Fatalf("started %+v, want 30 fires RUNNING", started)
	}
	var owner string
	if !eventually(15*time.Second, func() bool {
		b := getBackfill(t, c.peers[0], "bf", started.ID)
		owner = b.Owner
		return b.Done >= 5 && owner != ""
	}) {
		t.Fatalf("the backfill did not reach 5 fires: %+v", getBackfill(t, c.peers[0], "bf", started.ID))
	}
	var victim, survivor *harness.Peer
	for _, p := range c.peers {
		if p.InstanceID() == owner {
			victim = p
		} else {
			survivor = p
		}
	}
	if victim == nil {
		t.Fatalf("owner %q is no peer", owner)
	}
	victim.Kill()

	var end backfillView
	if !eventually(sessionTimeout+30*time.Second, func() bool {
		end = getBackfill(t, survivor, "bf", started.ID)
		return end.State == "DONE"
	}) {
		t.Fatalf("the backfill did not end after its owner died: %+v", end)
	}
	if end.Done != 30 || end.Items < 90 || end.Claims < 2 || end.Owner == "" && end.State != "DONE" {
		t.Fatalf("ended %+v: want 30 fires done, 90 items, claimed twice", end)
	}
	ids := map[string]map[string]bool{} // "at/item" -> webhook-ids
	for _, d := range recv.Deliveries(func(d harness.Delivery) bool { return d.Payload.Source == "BACKFILL" }) {
		at := d.Payload.ScheduledAt.UTC()
		if at.Before(from) || at.After(from.Add(29*time.Minute)) || at.Second() != 0 {
			t.Errorf("delivery scheduled at %s, outside the range's fires", at)
		}
		if d.Header.Get("webhook-id") != d.Payload.ExecutionID {
			t.Errorf("webhook-id %q is not the executionId %q", d.Header.Get("webhook-id"), d.Payload.ExecutionID)
		}
		k := fmt.Sprintf("%s/%d", at.Format(time.RFC3339), d.Payload.ShardingItem)
		if ids[k] == nil {
			ids[k] = map[string]bool{}
		}
		ids[k][d.Payload.ExecutionID] = true
	}
	if len(ids) != 90 {
		t.Fatalf("%d of the 90 items of the 30 fires were delivered", len(ids))
	}
	for k, v := range ids {
		if len(v) != 1 {
			t.Errorf("item %s delivered under %d webhook-ids", k, len(v))
		}
	}
	// the history holds them with their source and original time
	var page struct {
		Items []struct {
			Source      string    `json:"source"`
			ScheduledAt time.Time `json:"scheduledAt"`
		} `json:"items"`
	}
	for _, p := range c.peers { // with SQLite each peer's history holds what it sent: the survivors' together
		if p != victim && len(page.Items) == 0 {
			mustDo(t, p, "GET", "/api/v1/jobs/bf/executions?source=BACKFILL&limit=5", nil, http.StatusOK, &page)
		}
	}
	if len(page.Items) == 0 || page.Items[0].Source != "BACKFILL" || page.Items[0].ScheduledAt.After(from.Add(29*time.Minute)) {
		t.Fatalf("history of the backfill: %+v", page.Items)
	}
}

// A cancelled backfill stops sending; bad requests name their field.
func TestBackfillCancelAndBadInput(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var backfilled atomic.Int64
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Source == "BACKFILL" {
			backfilled.Add(1)
			return 200, `{}`, 50 * time.Millisecond
		}
		return 200, `{}`, 0
	})
	c := newCluster(t, 2, withSessionTimeout(2*time.Second))
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("bfc", "0 * * * * ?", 2, recv.URL), http.StatusCreated, nil)

	bad := []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"from": "2026-01-01T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "to"}, // > 10,000 fires
		{map[string]any{"from": "2026-11-01T00:00:00Z", "to": "2026-11-02T00:00:00Z", "overlapPolicy": "CANCEL_PREVIOUS"}, "overlapPolicy"},
		{map[string]any{"from": "last week", "to": "2026-11-02T00:00:00Z"}, "from"},
		{map[string]any{"from": "2026-11-01T00:00:00Z", "to": "2030-01-01T00:00:00Z"}, "to"},
	}
	for _, b := range bad {
		var prob struct {
			Errors []struct {
				Field string `json:"field"`
			} `json:"errors"`
		}
		mustDo(t, c.peers[0], "POST", "/api/v1/jobs/bfc/backfill", b.body, http.StatusBadRequest, &prob)
		if len(prob.Errors) == 0 || prob.Errors[0].Field != b.field {
			t.Errorf("%v: errors %+v, want field %s", b.body, prob.Errors, b.field)
		}
	}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/nosuch/backfill", map[string]any{"from": "2026-11-01T00:00:00Z",
		"to": "2026-11-02T00:00:00Z"}, http.StatusNotFound, nil)

	var started backfillView
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/bfc/backfill", map[string]any{"from": "2026-11-01T00:00:00Z",
		"to": "2026-11-01T03:19:00Z", "overlapPolicy": "ALLOW"}, http.StatusAccepted, &started)
	if started.Total != 200 {
		t.Fatalf("started %+v, want 200 fires", started)
	}
	if !eventually(15*time.Second, func() bool { return getBackfill(t, c.peers[1], "bfc", started.ID).Done >= 3 }) {
		t.Fatal("the backfill did not start")
	}
	var cancelled backfillView
	mustDo(t, c.peers[1], "POST", "/api/v1/jobs/bfc/backfill/"+started.ID+"/cancel", nil, http.StatusOK, &cancelled)
	if cancelled.State != "CANCELLED" || cancelled.Done >= 200 {
		t.Fatalf("cancelled %+v", cancelled)
	}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/bfc/backfill/"+started.ID+"/cancel", nil, http.StatusConflict, nil)
	// the fire in flight may still land; nothing after it
	sent := backfilled.Load()
	if _, grew := recv.WaitFor(2*time.Second, func([]harness.Delivery) bool { return backfilled.Load() > sent+2 }); grew {
		t.Fatalf("deliveries went on after the cancel: %d, then %d", sent, backfilled.Load())
	}
	if n := backfilled.Load(); n >= 400 {
		t.Fatalf("%d items delivered: the cancel stopped nothing", n)
	}
	var list struct {
		Items []backfillView `json:"items"`
	}
	mustDo(t, c.peers[0], "GET", "/api/v1/jobs/bfc/backfill", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].State != "CANCELLED" {
		t.Fatalf("list %+v", list.Items)
	}

	// the CLI: a backfill of a range without fires ends at once; list shows both; a bad range names its field
	env := []string{"EJ_SERVER=" + c.peers[0].Addr}
	if out := cliOK(t, env, "backfill", "start", "bfc", "--from", "2026-11-01T00:00:10Z", "--to", "2026-11-01T00:00:50Z"); !strings.Contains(out, "DONE") || !strings.Contains(out, "0/0") {
		t.Errorf("backfill start printed %q", out)
	}
	if out := cliOK(t, env, "backfill", "list", "bfc"); !strings.Contains(out, "CANCELLED") || !strings.Contains(out, started.ID) {
		t.Errorf("backfill list printed %q", out)
	}
	if _, errOut, code := cliRun(t, env, "backfill", "start", "bfc", "--from", "2026-11-02T00:00:00Z", "--to", "2026-11-01T00:00:00Z"); code == 0 || !strings.Contains(errOut, "to") {
		t.Errorf("a reversed range: exit %d, %q", code, errOut)
	}
}
