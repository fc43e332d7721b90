package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// leaseView is a callback's answer.
type leaseView struct {
	ExecutionID    string     `json:"executionId"`
	Attempt        int        `json:"attempt"`
	State          string     `json:"state"`
	Progress       *int       `json:"progress"`
	Message        string     `json:"message"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt"`
}

type problem struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// callback sends a heartbeat or completion of execution id to peer p with token, and returns the status, the
// problem type (the last path segment of its type, "" on success) and the answer.
func callback(t *testing.T, p *harness.Peer, id, kind, token string, body any) (int, string, leaseView) {
	t.Helper()
	var headers []string
	if token != "" {
		headers = []string{"Authorization", "Bearer " + token}
	}
	status, raw, err := p.Do("POST", "/api/v1/executions/"+id+"/"+kind, body, nil, headers...)
	if err != nil {
		t.Fatalf("%s of %s: %v", kind, id, err)
	}
	var v leaseView
	if status == http.StatusOK {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s answer %s: %v", kind, raw, err)
		}
		return status, "", v
	}
	var pr problem
	_ = json.Unmarshal(raw, &pr)
	return status, pr.Type[strings.LastIndex(pr.Type, "/")+1:], v
}

// execution reads an execution from a peer's history.
type executionRecord struct {
	ID           string     `json:"id"`
	Success      bool       `json:"success"`
	CompletedAt  *time.Time `json:"completedAt"`
	Async        bool       `json:"async"`
	State        string     `json:"state"`
	Message      string     `json:"message"`
	Attempts     int        `json:"attempts"`
	FailureCause string     `json:"failureCause"`
}

func waitExecution(t *testing.T, p *harness.Peer, id string, timeout time.Duration, cond func(executionRecord) bool) executionRecord {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var e executionRecord
	for {
		status, raw, err := p.Do("GET", "/api/v1/executions/"+id, nil, &e)
		if err == nil && status == http.StatusOK && cond(e) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s on %s: %d %s", id, p.Config.ServerIP, status, raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// accepting answers 202 to every request and returns it; the test completes the items by callback.
func accepting(recv *harness.Receiver) {
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) { return http.StatusAccepted, "", 0 })
}

func asyncJob(name, cron string, total int, url string, leaseSeconds int) map[string]any {
	spec := job(name, cron, total, url)
	spec["async"] = map[string]any{"leaseSeconds": leaseSeconds}
	return spec
}

// An item answered 202 stays RUNNING, with the heartbeat's progress in the sharding view, until the
// receiver completes it by callback seconds later, sent to another peer than the one that POSTed it; the
// completion repeated answers 200, a different one 409; bad tokens are 401, unknown executions 404.
func TestAsyncItemCompletesByCallback(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	accepting(recv)
	c := newCluster(t, 2)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", asyncJob("longrun", "", 1, recv.URL, 30), http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/longrun/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("no delivery")
	}
	d := ds[0]
	p := d.Payload
	if p.CallbackToken == "" || !strings.HasSuffix(p.CallbackURL, "/api/v1/executions/"+p.ExecutionID) || p.LeaseSeconds != 30 ||
		d.Header.Get("Ejserver-Callback-Token") != p.CallbackToken || d.Header.Get("Ejserver-Callback-Url") != p.CallbackURL {
		t.Fatalf("callback fields: url %q token set %v lease %d, headers %v", p.CallbackURL, p.CallbackToken != "", p.LeaseSeconds, d.Header)
	}
	var sender, other *harness.Peer
	for _, peer := range c.peers {
		if peer.InstanceID() == p.InstanceID {
			sender = peer
		} else {
			other = peer
		}
	}
	if sender == nil || other == nil {
		t.Fatalf("delivery from %s", p.InstanceID)
	}
	if !strings.HasPrefix(p.CallbackURL, "http://"+sender.Addr) {
		t.Errorf("callback URL %q is not the sending peer's advertised address %s", p.CallbackURL, sender.Addr)
	}

	// the item stays RUNNING; a heartbeat's progress shows in the sharding view of either peer
	progress := 40
	status, typ, v := callback(t, other, p.ExecutionID, "heartbeat", p.CallbackToken, map[string]any{"progress": progress, "message": "40% of rows"})
	if status != http.StatusOK || v.State != "RUNNING" || v.Progress == nil || *v.Progress != 40 || v.LeaseExpiresAt == nil {
		t.Fatalf("heartbeat: %d %s %+v", status, typ, v)
	}
	var items []struct {
		Status  string `json:"status"`
		Running *struct {
			Async          bool       `json:"async"`
			State          string     `json:"state"`
			Progress       *int       `json:"progress"`
			Message        string     `json:"message"`
			LeaseExpiresAt *time.Time `json:"leaseExpiresAt"`
			ElapsedMs      int64      `json:"elapsedMs"`
		} `json:"running"`
	}
	var page struct {
		Items json.RawMessage `json:"items"`
	}
	raw := mustDo(t, sender, "GET", "/api/v1/jobs/longrun/sharding", nil, http.StatusOK, nil)
	if err := json.Unmarshal(raw, &page); err != nil || json.Unmarshal(page.Items, &items) != nil {
		_ = json.Unmarshal(raw, &items)
	}
	if len(items) != 1 || items[0].Status != "RUNNING" || items[0].Running == nil || !items[0].Running.Async ||
		items[0].Running.Progress == nil || *items[0].Running.Progress != 40 || items[0].Running.Message != "40% of rows" ||
		items[0].Running.LeaseExpiresAt == nil {
		t.Fatalf("sharding view while running: %s", raw)
	}

	// refusals: no token, a forged one, another execution's, an unknown execution
	if s, typ, _ := callback(t, other, p.ExecutionID, "complete", "", map[string]any{"status": "success"}); s != 401 || typ != "callback-token" {
		t.Errorf("no token: %d %s", s, typ)
	}
	forged := p.CallbackToken[:len(p.CallbackToken)-4] + "AAAA"
	if s, typ, _ := callback(t, other, p.ExecutionID, "complete", forged, map[string]any{"status": "success"}); s != 401 || typ != "callback-token" {
		t.Errorf("forged token: %d %s", s, typ)
	}
	if s, _, _ := callback(t, other, p.ExecutionID, "complete", "s3cret-admin-token-of-the-api", map[string]any{"status": "success"}); s != 401 {
		t.Errorf("an API-like token: %d", s)
	}
	if s, typ, _ := callback(t, other, "0192f5e4-7b1a-7cc3-9d2e-3f4a5b6c7d8e", "complete", p.CallbackToken, map[string]any{"status": "success"}); s != 401 {
		t.Errorf("another execution's id with this token: %d %s", s, typ)
	}
	if s, _, _ := callback(t, other, "../../x", "complete", p.CallbackToken, map[string]any{"status": "success"}); s != 404 {
		t.Errorf("a path as execution id: %d", s)
	}
	if s, typ, _ := callback(t, other, p.ExecutionID, "complete", p.CallbackToken, map[string]any{"status": "done"}); s != 400 || typ != "invalid" {
		t.Errorf("bad status: %d %s", s, typ)
	}

	// the completion, to the other peer; again (200); a different one (409)
	done := map[string]any{"status": "success", "message": "settled 1200 rows", "output": "rows=1200"}
	if s, typ, v := callback(t, other, p.ExecutionID, "complete", p.CallbackToken, done); s != 200 || v.State != "SUCCEEDED" {
		t.Fatalf("complete: %d %s %+v", s, typ, v)
	}
	if s, typ, v := callback(t, sender, p.ExecutionID, "complete", p.CallbackToken, done); s != 200 || v.State != "SUCCEEDED" {
		t.Fatalf("the same completion again: %d %s %+v", s, typ, v)
	}
	if s, typ, _ := callback(t, sender, p.ExecutionID, "complete", p.CallbackToken, map[string]any{"status": "failure"}); s != 409 || typ != "already-completed" {
		t.Fatalf("another completion: %d %s", s, typ)
	}
	if s, typ, _ := callback(t, sender, p.ExecutionID, "heartbeat", p.CallbackToken, nil); s != 409 || typ != "already-completed" {
		t.Fatalf("a heartbeat after the end: %d %s", s, typ)
	}
	// SQLite history is per peer: the peer that applied the completion holds the end record
	e := waitExecution(t, other, p.ExecutionID, 10*time.Second, func(e executionRecord) bool { return e.CompletedAt != nil })
	if !e.Success || !e.Async || e.State != "SUCCEEDED" || e.Message != "settled 1200 rows" {
		t.Fatalf("history on the completing peer: %+v", e)
	}
	// and the item is no longer running
	raw = mustDo(t, sender, "GET", "/api/v1/jobs/longrun/sharding", nil, http.StatusOK, nil)
	if strings.Contains(string(raw), `"RUNNING"`) {
		t.Fatalf("sharding after completion: %s", raw)
	}
	if len(recv.Deliveries(nil)) != 1 {
		t.Fatalf("the item was POSTed %d times", len(recv.Deliveries(nil)))
	}
}

// Heartbeats keep a 2-second lease alive for 10 seconds; when they stop, the lease runs out and the item is
// POSTed again with the same webhook-id and the next attempt; a late callback of the first attempt is then
// refused (409 stale-attempt); the second attempt answers 200 and the item ends succeeded.
func TestAsyncLeaseHeartbeatsAndRetry(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Attempt == 1 {
			return http.StatusAccepted, "", 0
		}
		return http.StatusOK, `{}`, 0
	})
	c := newCluster(t, 2)
	spec := asyncJob("leased", "", 1, recv.URL, 2)
	spec["retry"] = map[string]any{"maxAttempts": 2, "initialBackoffMs": 100, "maxBackoffMs": 100}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/leased/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("no delivery")
	}
	first := ds[0].Payload
	start := time.Now()
	for i := 0; time.Since(start) < 10*time.Second; i++ {
		s, typ, v := callback(t, c.peers[i%2], first.ExecutionID, "heartbeat", first.CallbackToken, map[string]any{"progress": i})
		if s != 200 || v.State != "RUNNING" {
			t.Fatalf("heartbeat %d after %v: %d %s %+v", i, time.Since(start), s, typ, v)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n := len(recv.Deliveries(nil)); n != 1 {
		t.Fatalf("%d deliveries while heartbeats kept the lease", n)
	}
	// no more heartbeats: the lease runs out after 2 s, the watcher POSTs attempt 2
	ds, ok = recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("no re-POST after the lease ran out")
	}
	second := ds[1]
	if second.Header.Get("webhook-id") != first.ExecutionID || second.Payload.Attempt != 2 || second.Payload.ExecutionID != first.ExecutionID {
		t.Fatalf("re-POST: webhook-id %q attempt %d", second.Header.Get("webhook-id"), second.Payload.Attempt)
	}
	if second.Payload.CallbackToken == first.CallbackToken {
		t.Fatal("the second attempt carries the first attempt's token")
	}
	if s, typ, _ := callback(t, c.peers[0], first.ExecutionID, "complete", first.CallbackToken, map[string]any{"status": "success"}); s != 409 {
		t.Fatalf("late completion of attempt 1: %d %s", s, typ)
	}
	e := waitOnEither(t, c.peers, first.ExecutionID, func(e executionRecord) bool { return e.CompletedAt != nil })
	if !e.Success || e.State != "SUCCEEDED" || e.Attempts != 2 {
		t.Fatalf("after the re-POST answered 200: %+v", e)
	}
}

// A lease that runs out with no attempt left ends EXPIRED (a failure); a completion after that is 409
// lease-expired. Several items race their completion against the expiry: each ends in exactly one outcome,
// and the answer to the completion says which.
func TestAsyncCompletionRacingExpiry(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	accepting(recv)
	c := newCluster(t, 2)
	const items = 8
	spec := asyncJob("racing", "", items, recv.URL, 2)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/racing/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= items })
	if !ok {
		t.Fatalf("%d deliveries", len(ds))
	}
	type answer struct {
		id     string
		status int
		typ    string
	}
	answers := make([]answer, items)
	var wg sync.WaitGroup
	for i, d := range ds[:items] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// from 1.8 s to 2.2 s after the 202: around the 2-second expiry
			time.Sleep(time.Until(d.ArrivedAt.Add(1800*time.Millisecond + time.Duration(i)*50*time.Millisecond)))
			status, raw, err := c.peers[i%2].Do("POST", "/api/v1/executions/"+d.Payload.ExecutionID+"/complete",
				map[string]any{"status": "success"}, nil, "Authorization", "Bearer "+d.Payload.CallbackToken)
			a := answer{id: d.Payload.ExecutionID, status: status}
			if err == nil && status != 200 {
				var pr problem
				_ = json.Unmarshal(raw, &pr)
				a.typ = pr.Type[strings.LastIndex(pr.Type, "/")+1:]
			}
			answers[i] = a
		}()
	}
	wg.Wait()
	var won, lost int
	for _, a := range answers {
		switch {
		case a.status == 200:
			won++
		case a.status == 409 && a.typ == "lease-expired":
			lost++
		default:
			t.Fatalf("completion of %s: %d %s", a.id, a.status, a.typ)
		}
	}
	// every item has exactly one recorded end, and it matches the answer
	for i, a := range answers {
		e := waitOnEither(t, c.peers, a.id, func(e executionRecord) bool { return e.CompletedAt != nil })
		if (a.status == 200) != (e.State == "SUCCEEDED") || (a.status == 409) != (e.State == "EXPIRED") || e.Success != (a.status == 200) {
			t.Fatalf("item %d: answered %d %s but recorded %+v", i, a.status, a.typ, e)
		}
		if s, typ, _ := callback(t, c.peers[0], a.id, "complete", ds[i].Payload.CallbackToken, map[string]any{"status": "success"}); (a.status == 200) != (s == 200) {
			t.Fatalf("item %d: the completion repeated answers %d %s after %d", i, s, typ, a.status)
		}
	}
	t.Logf("completions that beat the expiry: %d, refused as expired: %d", won, lost)
	if n := len(recv.Deliveries(nil)); n != items {
		t.Fatalf("%d deliveries: an expired item with no attempt left was POSTed again", n)
	}
}

func waitOnEither(t *testing.T, peers []*harness.Peer, id string, cond func(executionRecord) bool) executionRecord {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, p := range peers {
			var e executionRecord
			if status, _, _ := p.Do("GET", "/api/v1/executions/"+id, nil, &e); status == 200 && cond(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s never matched", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill -9 of the peer that POSTed an accepted item does not fail the item over: it is not POSTed again, its
// completion sent to a survivor is recorded; fires that found it running give exactly one MISFIRE catch-up
// after it completes, and the fires after that are normal.
func TestAsyncItemSurvivesItsPeerAndMisfiresOnce(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	var mu sync.Mutex
	accepted := 0
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if accepted == 0 && d.Payload.Source == "NORMAL_TRIGGER" {
			accepted++
			return http.StatusAccepted, "", 0 // only the first run is long
		}
		return http.StatusOK, `{}`, 0
	})
	c := newCluster(t, 3, withSessionTimeout(2*time.Second))
	spec := asyncJob("survivor", "0/2 * * * * ?", 1, recv.URL, 60)
	spec["failover"] = true
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("no delivery")
	}
	p := ds[0].Payload
	var victim *harness.Peer
	var survivors []*harness.Peer
	for _, peer := range c.peers {
		if peer.InstanceID() == p.InstanceID {
			victim = peer
		} else {
			survivors = append(survivors, peer)
		}
	}
	waitAccepted(t, victim, "survivor", 0)
	victim.Kill()
	// fires come every 2 s and find the item running; nothing is POSTed, failover included
	time.Sleep(8 * time.Second)
	if n := len(recv.Deliveries(nil)); n != 1 {
		for _, d := range recv.Deliveries(nil) {
			t.Logf("delivery %s item %d source %s attempt %d", d.Payload.ExecutionID, d.Payload.ShardingItem, d.Payload.Source, d.Payload.Attempt)
		}
		t.Fatalf("%d deliveries while the accepted item ran: it was POSTed again", n)
	}
	if s, typ, v := callback(t, survivors[0], p.ExecutionID, "complete", p.CallbackToken, map[string]any{"status": "success"}); s != 200 || v.State != "SUCCEEDED" {
		t.Fatalf("completion after its peer died: %d %s %+v", s, typ, v)
	}
	completed := time.Now()
	ds, ok = recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 4 })
	if !ok {
		t.Fatalf("%d deliveries after the completion", len(ds))
	}
	var misfires, normals int
	for _, d := range ds[1:] {
		switch d.Payload.Source {
		case "MISFIRE":
			misfires++
		case "NORMAL_TRIGGER":
			normals++
		default:
			t.Fatalf("delivery with source %s", d.Payload.Source)
		}
		if d.Payload.ExecutionID == p.ExecutionID {
			t.Fatal("the accepted execution was POSTed again")
		}
	}
	if misfires != 1 || ds[1].Payload.Source != "MISFIRE" || ds[1].ArrivedAt.Sub(completed) > 5*time.Second {
		t.Fatalf("after the completion: %d misfire catch-ups (first delivery %s, %v after the completion); want exactly 1, first",
			misfires, ds[1].Payload.Source, ds[1].ArrivedAt.Sub(completed))
	}
	e := waitExecution(t, survivors[0], p.ExecutionID, 10*time.Second, func(e executionRecord) bool { return e.CompletedAt != nil })
	if !e.Success || e.State != "SUCCEEDED" {
		t.Fatalf("history: %+v", e)
	}
}

// Deleting a job cancels its accepted items: a heartbeat then answers 409 execution-cancelled. Disabling
// one leaves them running: a completion is recorded.
func TestAsyncDisableAndDelete(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	accepting(recv)
	c := newCluster(t, 1)
	for _, name := range []string{"todelete", "todisable"} {
		mustDo(t, c.peers[0], "POST", "/api/v1/jobs", asyncJob(name, "", 1, recv.URL, 30), http.StatusCreated, nil)
		mustDo(t, c.peers[0], "POST", "/api/v1/jobs/"+name+"/trigger", map[string]any{}, http.StatusAccepted, nil)
	}
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("no deliveries")
	}
	byJob := map[string]harness.Payload{}
	for _, d := range ds {
		byJob[d.Payload.JobName] = d.Payload
	}
	waitAccepted(t, c.peers[0], "todelete", 0)
	waitAccepted(t, c.peers[0], "todisable", 0)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/todisable/disable", nil, http.StatusOK, nil)
	mustDo(t, c.peers[0], "DELETE", "/api/v1/jobs/todelete", nil, http.StatusNoContent, nil)
	del := byJob["todelete"]
	s, typ, _ := callback(t, c.peers[0], del.ExecutionID, "heartbeat", del.CallbackToken, nil)
	if s != 409 || typ != "execution-cancelled" {
		t.Fatalf("heartbeat of a deleted job's item: %d %s", s, typ)
	}
	dis := byJob["todisable"]
	if s, typ, v := callback(t, c.peers[0], dis.ExecutionID, "heartbeat", dis.CallbackToken, nil); s != 200 || v.State != "RUNNING" {
		t.Fatalf("heartbeat of a disabled job's item: %d %s %+v", s, typ, v)
	}
	if s, typ, v := callback(t, c.peers[0], dis.ExecutionID, "complete", dis.CallbackToken, map[string]any{"status": "failure", "message": "stopped"}); s != 200 || v.State != "FAILED" {
		t.Fatalf("completion of a disabled job's item: %d %s %+v", s, typ, v)
	}
	e := waitExecution(t, c.peers[0], dis.ExecutionID, 10*time.Second, func(e executionRecord) bool { return e.CompletedAt != nil })
	if e.Success || e.State != "FAILED" || !strings.Contains(e.FailureCause, "stopped") {
		t.Fatalf("history of the disabled job's item: %+v", e)
	}
}

// waitAccepted waits until the sharding view shows the item running under a lease (its 202 recorded).
func waitAccepted(t *testing.T, p *harness.Peer, job string, item int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list struct {
			Items []struct {
				Item    int `json:"item"`
				Running *struct {
					Async bool `json:"async"`
				} `json:"running"`
			} `json:"items"`
		}
		mustDo(t, p, "GET", "/api/v1/jobs/"+job+"/sharding", nil, http.StatusOK, &list)
		for _, it := range list.Items {
			if it.Item == item && it.Running != nil && it.Running.Async {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("item %d of %s never shown as accepted", item, job)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With PostgreSQL history shared by the peers, a completion that lands on another peer than the one that
// POSTed the item shows in every peer's API; once the lease record is gone (a short --lease-retention), the
// same completion repeated still answers 200 from the history, and a different one 409.
func TestAsyncCompletionOnAnotherPeerWithPostgres(t *testing.T) {
	t.Parallel()
	_, dsn := newPostgres(t, "ejasync")
	recv := newReceiver(t)
	accepting(recv)
	c := newCluster(t, 2, withArgs("--history-dsn", dsn, "--lease-retention", "1s"))
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", asyncJob("pgasync", "", 2, recv.URL, 30), http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/pgasync/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("no deliveries")
	}
	for _, d := range ds[:2] {
		p := d.Payload
		var other *harness.Peer
		for _, peer := range c.peers {
			if peer.InstanceID() != p.InstanceID {
				other = peer
			}
		}
		if other == nil { // both items on one peer: any peer will do
			other = c.peers[1]
		}
		if s, typ, _ := callback(t, other, p.ExecutionID, "heartbeat", p.CallbackToken, map[string]any{"progress": 50, "message": "half way"}); s != 200 {
			t.Fatalf("heartbeat: %d %s", s, typ)
		}
		// every peer shows the running record with the heartbeat's message
		for _, peer := range c.peers {
			waitExecution(t, peer, p.ExecutionID, 10*time.Second, func(e executionRecord) bool {
				return e.State == "RUNNING" && e.Message == "half way"
			})
		}
		done := map[string]any{"status": "success", "message": "all done"}
		if s, typ, _ := callback(t, other, p.ExecutionID, "complete", p.CallbackToken, done); s != 200 {
			t.Fatalf("complete: %d %s", s, typ)
		}
		for _, peer := range c.peers {
			waitExecution(t, peer, p.ExecutionID, 10*time.Second, func(e executionRecord) bool {
				return e.CompletedAt != nil && e.Success && e.State == "SUCCEEDED" && e.Message == "all done"
			})
		}
	}
	// the lease records go after 1 s; the history answers then, on every peer
	p := ds[0].Payload
	deadline := time.Now().Add(20 * time.Second)
	for {
		children := zkCliOut(t, c.zk, "ls", "/"+c.ns+".ejserver/ended-leases")
		if strings.Contains(children, "\n[]\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease records still there: %v", children)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, peer := range c.peers {
		if s, typ, v := callback(t, peer, p.ExecutionID, "complete", p.CallbackToken, map[string]any{"status": "success", "message": "all done"}); s != 200 || v.State != "SUCCEEDED" {
			t.Fatalf("the same completion after the lease record went: %d %s %+v", s, typ, v)
		}
		if s, typ, _ := callback(t, peer, p.ExecutionID, "complete", p.CallbackToken, map[string]any{"status": "failure"}); s != 409 || typ != "already-completed" {
			t.Fatalf("a different completion after the lease record went: %d %s", s, typ)
		}
	}
}

// A streaming DATAFLOW item answered 202 and completed with hasMore is POSTed again as its next iteration
// (webhook-id {executionId}.2, its own token); that iteration's synchronous answer ends it.
func TestAsyncDataflowNextIteration(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Iteration == 1 {
			return http.StatusAccepted, "", 0
		}
		return http.StatusOK, `{"hasMore": false}`, 0
	})
	c := newCluster(t, 1)
	spec := asyncJob("stream", "", 1, recv.URL, 30)
	spec["jobType"], spec["streamingProcess"] = "DATAFLOW", true
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/stream/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("no delivery")
	}
	first := ds[0].Payload
	if s, typ, v := callback(t, c.peers[0], first.ExecutionID, "complete", first.CallbackToken, map[string]any{"status": "success", "hasMore": true}); s != 200 || v.State != "RETRYING" {
		t.Fatalf("completion with hasMore: %d %s %+v", s, typ, v)
	}
	ds, ok = recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatal("the next iteration was not POSTed")
	}
	next := ds[1]
	if next.Header.Get("webhook-id") != first.ExecutionID+".2" || next.Payload.Iteration != 2 || next.Payload.CallbackToken == first.CallbackToken {
		t.Fatalf("next iteration: webhook-id %q iteration %d", next.Header.Get("webhook-id"), next.Payload.Iteration)
	}
	e := waitExecution(t, c.peers[0], first.ExecutionID, 15*time.Second, func(e executionRecord) bool { return e.CompletedAt != nil })
	if !e.Success || e.State != "SUCCEEDED" {
		t.Fatalf("after the synchronous last iteration: %+v", e)
	}
	if s, typ, _ := callback(t, c.peers[0], first.ExecutionID, "heartbeat", first.CallbackToken, nil); s != 409 || typ != "stale-attempt" {
		t.Fatalf("the first iteration's token after the second: %d %s", s, typ)
	}
}

// A manual trigger that finds an item's accepted work running is not dropped: one run (source MISFIRE)
// follows the end of that work.
func TestAsyncManualTriggerBehindAcceptedWork(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Source == "MANUAL" {
			return http.StatusAccepted, "", 0
		}
		return http.StatusOK, `{}`, 0
	})
	c := newCluster(t, 1)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", asyncJob("queued", "", 1, recv.URL, 30), http.StatusCreated, nil)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/queued/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("no delivery")
	}
	waitAccepted(t, c.peers[0], "queued", 0)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs/queued/trigger", map[string]any{}, http.StatusAccepted, nil)
	if ds, ok := recv.WaitFor(2*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 }); ok {
		t.Fatalf("the trigger ran while the accepted work did: %s", ds[1].Payload.Source)
	}
	p := ds[0].Payload
	if s, typ, _ := callback(t, c.peers[0], p.ExecutionID, "complete", p.CallbackToken, map[string]any{"status": "success"}); s != 200 {
		t.Fatalf("complete: %d %s", s, typ)
	}
	ds, ok = recv.WaitFor(15*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok || ds[1].Payload.Source != "MISFIRE" || ds[1].Payload.ExecutionID == p.ExecutionID {
		t.Fatalf("after the end: %d deliveries", len(ds))
	}
	if ds, _ := recv.WaitFor(2*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 3 }); len(ds) != 2 {
		t.Fatalf("%d deliveries: more than one run followed", len(ds))
	}
}
