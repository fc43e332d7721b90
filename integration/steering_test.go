package integration

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// noonZone is an ElasticJob GMT+N zone in which it is now around noon, so "today" there is hours from
// either midnight and a calendar of today's date holds for the whole test.
func noonZone(now time.Time) (string, *time.Location) {
	off := (12 - now.UTC().Hour() + 24) % 24
	if off > 12 {
		off -= 24
	}
	name := fmt.Sprintf("GMT%+d", off)
	return name, time.FixedZone(name, off*3600)
}

// ofJob keeps the deliveries of one job.
func ofJob(name string) func(harness.Delivery) bool {
	return func(d harness.Delivery) bool { return d.Payload.JobName == name }
}

// skipped sums ejserver_fires_skipped_total{reason=...} over the peers.
func skipped(t *testing.T, c *testCluster, reason string) int {
	t.Helper()
	total := 0
	for _, p := range c.peers {
		_, raw, err := p.Do("GET", "/metrics", nil, nil)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ejserver_fires_skipped_total{") && strings.Contains(line, `reason="`+reason+`"`) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				total += int(v)
			}
		}
	}
	return total
}

// TestCalendarsExcludeIncludeAndEditLive: on 2 peers, a job excluding today's calendar does not fire, one
// restricted to it fires, one restricted to tomorrow does not and previews tomorrow's fires; a job naming
// an unknown calendar and the deletion of a calendar in use are refused naming them; moving the calendar to
// tomorrow starts the excluding job on every peer without a restart.
func TestCalendarsExcludeIncludeAndEditLive(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	p := c.peers[0]
	zone, loc := noonZone(time.Now())
	today := time.Now().In(loc).Format(time.DateOnly)
	tomorrow := time.Now().In(loc).AddDate(0, 0, 1).Format(time.DateOnly)
	mustDo(t, p, "POST", "/api/v1/calendars", map[string]any{"name": "today", "timeZone": zone, "dates": []string{today}}, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/calendars", map[string]any{"name": "tomorrow", "timeZone": zone,
		"ranges": []map[string]string{{"from": tomorrow, "to": tomorrow}}}, http.StatusCreated, nil)

	bad := job("ghost", "* * * * * ?", 2, recv.URL)
	bad["excludeCalendars"] = []string{"no-such-calendar"}
	raw := mustDo(t, p, "POST", "/api/v1/jobs", bad, http.StatusBadRequest, nil)
	if !strings.Contains(string(raw), `"field":"excludeCalendars"`) || !strings.Contains(string(raw), "no-such-calendar") {
		t.Fatalf("unknown calendar refused as %s", raw)
	}
	for name, spec := range map[string]map[string]any{
		"excl":  {"excludeCalendars": []string{"today"}},
		"keep":  {"includeCalendars": []string{"today"}},
		"later": {"includeCalendars": []string{"tomorrow"}, "timeZone": zone},
	} {
		j := job(name, "* * * * * ?", 2, recv.URL)
		for k, v := range spec {
			j[k] = v
		}
		mustDo(t, p, "POST", "/api/v1/jobs", j, http.StatusCreated, nil)
	}
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		return completeFires(recv.Deliveries(ofJob("keep")), 2) >= 3
	}); !ok {
		t.Fatalf("the job restricted to today's calendar did not fire 3 times: %d deliveries", len(recv.Deliveries(ofJob("keep"))))
	}
	if !eventually(10*time.Second, func() bool { return skipped(t, c, "calendar") >= 6 }) {
		t.Fatalf("calendar skips counted: %d", skipped(t, c, "calendar"))
	}
	if n := len(recv.Deliveries(ofJob("excl"))) + len(recv.Deliveries(ofJob("later"))); n != 0 {
		t.Fatalf("calendar-excluded jobs delivered %d items", n)
	}

	var next struct {
		Next []time.Time `json:"next"`
	}
	mustDo(t, p, "GET", "/api/v1/jobs/later/next?count=3", nil, http.StatusOK, &next)
	if len(next.Next) != 3 {
		t.Fatalf("effective next fires of later: %v", next.Next)
	}
	for _, at := range next.Next {
		if at.In(loc).Format(time.DateOnly) != tomorrow {
			t.Fatalf("effective next fire %v is not on %s", at, tomorrow)
		}
	}
	// the expression preview applies the same calendars by the same code: the job's fires, not the cron's
	var preview struct {
		Next []time.Time `json:"next"`
	}
	q := url.Values{"cron": {"* * * * * ?"}, "timeZone": {zone}, "count": {"3"}, "includeCalendars": {"tomorrow"},
		"from": {next.Next[0].Add(-time.Second).Format(time.RFC3339)}}
	mustDo(t, p, "GET", "/api/v1/cron/next?"+q.Encode(), nil, http.StatusOK, &preview)
	if !slices.EqualFunc(preview.Next, next.Next, time.Time.Equal) {
		t.Fatalf("cron preview with includeCalendars=tomorrow: %v, the job's next fires: %v", preview.Next, next.Next)
	}
	q.Set("excludeCalendars", "tomorrow,no-such-calendar")
	raw = mustDo(t, p, "GET", "/api/v1/cron/next?"+q.Encode(), nil, http.StatusBadRequest, nil)
	if !strings.Contains(string(raw), `"field":"excludeCalendars"`) || !strings.Contains(string(raw), "no-such-calendar") {
		t.Fatalf("a preview naming an unknown calendar refused as %s", raw)
	}
	if out := cliOK(t, []string{"EJ_SERVER=" + p.Addr}, "cron", "next", "0 0 12 * * ?", "--tz", zone, "--count", "2",
		"--include-calendars", "tomorrow"); strings.Count(out, tomorrow) != 1 {
		t.Fatalf("ejserver cron next --include-calendars tomorrow: %s", out)
	}

	var view map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/later", nil, http.StatusOK, &view)
	if nft, _ := time.Parse(time.RFC3339, fmt.Sprint(view["nextFireTime"])); nft.In(loc).Format(time.DateOnly) != tomorrow {
		t.Fatalf("job view's nextFireTime %v is not the effective one", view["nextFireTime"])
	}

	raw = mustDo(t, p, "DELETE", "/api/v1/calendars/today", nil, http.StatusConflict, nil)
	if !strings.Contains(string(raw), "excl") || !strings.Contains(string(raw), "keep") {
		t.Fatalf("delete of a calendar in use refused as %s", raw)
	}
	env := []string{"EJ_SERVER=" + p.Addr}
	file := writeFile(t, t.TempDir(), "cals.yaml", "- name: spare\n  annual: [12-25]\n")
	cliOK(t, env, "calendar", "apply", "-f", file)
	if out := cliOK(t, env, "calendar", "list"); !strings.Contains(out, "spare") || !strings.Contains(out, "tomorrow") {
		t.Fatalf("ejserver calendar list: %s", out)
	}
	cliOK(t, env, "calendar", "delete", "spare")

	// the edit reaches both peers through their watches: the excluding job fires on both peers' items
	edited := time.Now()
	mustDo(t, c.peers[1], "PUT", "/api/v1/calendars/today", map[string]any{"timeZone": zone, "dates": []string{tomorrow}}, http.StatusOK, nil)
	if _, ok := recv.WaitFor(20*time.Second, func([]harness.Delivery) bool {
		return completeFires(recv.Deliveries(ofJob("excl")), 2) >= 2
	}); !ok {
		t.Fatalf("the excluding job did not start after its calendar moved: %d deliveries", len(recv.Deliveries(ofJob("excl"))))
	}
	for _, d := range recv.Deliveries(ofJob("excl")) {
		if d.Payload.ScheduledAt.Before(edited.Add(-time.Second)) {
			t.Fatalf("excl delivered a fire of %v, before the edit at %v", d.Payload.ScheduledAt, edited)
		}
	}
}

// TestPauseEndAtAndRemainingFires: on 2 peers, a paused job skips its fires (who and why shown) but runs a
// manual trigger, and fires again on resume; remainingFires 3 runs exactly 3 fires, each item once, counted
// once across the peers; endAt stops the schedule after that time exactly.
func TestPauseEndAtAndRemainingFires(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	p := c.peers[0]

	counted := job("counted", "* * * * * ?", 2, recv.URL)
	counted["remainingFires"] = 3
	mustDo(t, p, "POST", "/api/v1/jobs", counted, http.StatusCreated, nil)
	endAt := time.Now().Add(4 * time.Second).Truncate(time.Second)
	ending := job("ending", "* * * * * ?", 2, recv.URL)
	ending["endAt"] = endAt.UTC().Format(time.RFC3339)
	mustDo(t, p, "POST", "/api/v1/jobs", ending, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs", job("paused", "* * * * * ?", 2, recv.URL), http.StatusCreated, nil)

	if _, ok := recv.WaitFor(20*time.Second, func([]harness.Delivery) bool {
		return completeFires(recv.Deliveries(ofJob("paused")), 2) >= 2
	}); !ok {
		t.Fatal("the job to pause did not fire")
	}
	var paused map[string]any
	mustDo(t, p, "POST", "/api/v1/jobs/paused/pause", map[string]string{"note": "receiver migration"}, http.StatusOK, &paused)
	pause, _ := paused["pause"].(map[string]any)
	if pause["note"] != "receiver migration" || pause["by"] == "" || pause["at"] == nil {
		t.Fatalf("pause shown as %v", paused["pause"])
	}
	pausedAt, _ := time.Parse(time.RFC3339, fmt.Sprint(pause["at"]))
	before := skipped(t, c, "paused")
	if !eventually(15*time.Second, func() bool { return skipped(t, c, "paused") >= before+4 }) {
		t.Fatalf("paused skips: %d", skipped(t, c, "paused"))
	}
	mustDo(t, c.peers[1], "POST", "/api/v1/jobs/paused/trigger", nil, http.StatusAccepted, nil)
	if _, ok := recv.WaitFor(15*time.Second, func([]harness.Delivery) bool {
		n := 0
		for _, d := range recv.Deliveries(ofJob("paused")) {
			if d.Payload.Source == "MANUAL" {
				n++
			}
		}
		return n == 2
	}); !ok {
		t.Fatal("a manual trigger of the paused job did not run")
	}
	for _, d := range recv.Deliveries(ofJob("paused")) {
		if d.Payload.Source != "MANUAL" && d.Payload.ScheduledAt.After(pausedAt.Add(time.Second)) {
			t.Fatalf("a scheduled fire at %v ran while paused (since %v)", d.Payload.ScheduledAt, pausedAt)
		}
	}
	var view map[string]any
	mustDo(t, c.peers[1], "GET", "/api/v1/jobs/paused", nil, http.StatusOK, &view)
	if view["pause"] == nil || view["nextFireTime"] != nil {
		t.Fatalf("paused job viewed as pause=%v nextFireTime=%v", view["pause"], view["nextFireTime"])
	}
	env := []string{"EJ_SERVER=" + p.Addr}
	if out := cliOK(t, env, "job", "next", "paused"); !strings.Contains(out, "receiver migration") {
		t.Fatalf("ejserver job next of a paused job: %s", out)
	}
	resumed := time.Now()
	cliOK(t, env, "job", "resume", "paused")
	var after map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/paused", nil, http.StatusOK, &after)
	if after["pause"] != nil {
		t.Fatalf("resumed job still shows pause %v", after["pause"])
	}
	if _, ok := recv.WaitFor(15*time.Second, func([]harness.Delivery) bool {
		n := 0
		for at, g := range fires(recv.Deliveries(ofJob("paused"))) {
			if at.After(resumed) && len(g) == 2 {
				n++
			}
		}
		return n >= 2
	}); !ok {
		t.Fatal("the resumed job did not fire again")
	}

	// remainingFires 3: exactly three fires, both items each, whichever peer counted them
	if !eventually(20*time.Second, func() bool {
		var n struct {
			RemainingFires *int `json:"remainingFires"`
		}
		_, _, _ = p.Do("GET", "/api/v1/jobs/counted/next", nil, &n)
		return n.RemainingFires != nil && *n.RemainingFires == 0
	}) {
		t.Fatal("the counter of remainingFires did not reach 0")
	}
	before = skipped(t, c, "ended")
	if !eventually(15*time.Second, func() bool { return skipped(t, c, "ended") >= before+4 }) {
		t.Fatal("no fires skipped as ended after the count and endAt")
	}
	got := fires(recv.Deliveries(ofJob("counted")))
	if len(got) != 3 {
		t.Fatalf("remainingFires 3 ran %d fires", len(got))
	}
	for at, g := range got {
		if len(g) != 2 || g[0].Payload.ShardingItem == g[1].Payload.ShardingItem {
			t.Fatalf("fire %v delivered %d items", at, len(g))
		}
	}

	// endAt: fires up to endAt, none after
	ended := fires(recv.Deliveries(ofJob("ending")))
	if len(ended) == 0 {
		t.Fatal("the job with endAt never fired")
	}
	atEnd := false
	for at := range ended {
		if at.After(endAt) {
			t.Fatalf("a fire at %v after endAt %v", at, endAt)
		}
		atEnd = atEnd || at.Equal(endAt)
	}
	if !atEnd {
		t.Fatalf("the fire at endAt %v itself did not run (%d fires before it)", endAt, len(ended))
	}
}
