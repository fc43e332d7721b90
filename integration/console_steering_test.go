package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ejserver/ejserver/integration/harness"
)

// TestConsoleCalendarsAndPause drives the calendars page (a bad date first: the API's field error shows, then
// the calendar is created and listed) and shows a paused job's pause and effective next fire on its page;
// then, in the same browser, the rest of issue 24's console (consoleSteering).
func TestConsoleCalendarsAndPause(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	b := newBrowser(t, p.URL("/"))
	b.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/#/calendars")))
	b.waitText("main h1", "Calendars", 10*time.Second)
	b.waitText("#cal-rows", "No calendars yet", 10*time.Second)
	b.set("cal-json", `{"name":"xmas","annual":["12-32"]}`)
	b.do("submit it", 10*time.Second, chromedp.Click(chromedp.CSS(`#cal-form button[type="submit"]`)))
	b.waitText("#cal-json-error", "annual[0]", 10*time.Second)
	b.set("cal-json", `{"name":"xmas","timeZone":"Europe/Berlin","annual":["12-25","12-26"]}`)
	b.do("save it", 10*time.Second, chromedp.Click(chromedp.CSS(`#cal-form button[type="submit"]`)))
	b.waitText("#cal-rows", "every 12-26", 10*time.Second)
	b.screenshot("calendars.png", false)

	j := job("nightly", "0 0 2 * * ?", 1, recv.URL)
	j["excludeCalendars"] = []string{"xmas"}
	mustDo(t, p, "POST", "/api/v1/jobs", j, http.StatusCreated, nil)
	mustDo(t, p, "POST", "/api/v1/jobs/nightly/pause", map[string]string{"note": "quarter close"}, http.StatusOK, nil)
	b.do("open the job", 10*time.Second, chromedp.Navigate(p.URL("/#/jobs/nightly")))
	b.waitText("main", "quarter close", 10*time.Second)
	consoleSteering(t, b, p, recv)
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
}

// consoleSteering drives, in one browser: the job form's steering fields (policy selects without an empty
// option, the cluster's calendars to pick, a preview that applies them, endAt and remainingFires with the
// API's field errors next to them), pause and resume with a note, a backfill started, followed to its end,
// another cancelled, and the failed view's bulk replay, whose new executions link to the ones they replay.
func consoleSteering(t *testing.T, b *browser, p *harness.Peer, recv *harness.Receiver) {
	t.Helper()
	// the two fires after today are a calendar's: the preview of a noon cron skips them
	now := time.Now().UTC()
	d1, d2 := now.AddDate(0, 0, 1).Format(time.DateOnly), now.AddDate(0, 0, 2).Format(time.DateOnly)
	mustDo(t, p, "POST", "/api/v1/calendars", map[string]any{"name": "off", "dates": []string{d1, d2}}, http.StatusCreated, nil)
	// flaky fails its first two items (one trigger of its two items); a backfill of steered is slow, so one
	// can be cancelled while it runs
	var flaky atomic.Int64
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		switch {
		case d.Payload.JobName == "flaky" && flaky.Add(1) <= 2:
			return 500, `{"error":"down"}`, 0
		case d.Payload.JobName == "steered" && d.Payload.Source == "BACKFILL":
			return 200, `{}`, 200 * time.Millisecond
		}
		return 200, `{}`, 0
	})

	b.route("#/create", "New job")
	for id, want := range map[string]string{"f-overlap": "BUFFER_ONE (default)", "f-catchup": "none (default)"} {
		got := eval[string](b, fmt.Sprintf(`(() => { const s = document.getElementById(%s);
			return [...s.options].some((o) => o.value === '') ? 'an empty option' : s.options[s.selectedIndex].text; })()`, js(id)))
		if got != want {
			t.Fatalf("%s shows %q, want %q and no empty option", id, got, want)
		}
	}
	b.waitFor("the cluster's calendars to pick", `!!document.querySelector('input[name="excludeCalendars"][value="off"]')`, 10*time.Second)
	b.do("exclude calendar off", 5*time.Second, chromedp.Click(chromedp.CSS(`input[name="excludeCalendars"][value="off"]`)))
	b.set("f-cron", "0 0 12 * * ?")
	b.waitFor("a preview with the calendar applied", `document.querySelectorAll('#f-cron-preview time').length === 3 &&
		document.getElementById('f-cron-preview').textContent.includes('calendars applied')`, 10*time.Second)
	for _, at := range strings.Split(eval[string](b, `[...document.querySelectorAll('#f-cron-preview time')].map((t) => t.getAttribute('datetime')).join(' ')`), " ") {
		if strings.HasPrefix(at, d1) || strings.HasPrefix(at, d2) {
			t.Fatalf("the preview lists %s, a day of the excluded calendar (%s, %s)", at, d1, d2)
		}
	}
	eval[any](b, `document.getElementById('f-overlap').scrollIntoView()`)
	b.screenshot("job-form-steering.png", false)
	b.set("f-jobName", "steered")
	b.set("f-url", recv.URL)
	b.set("f-overlap", "SKIP")
	b.set("f-jitter", "500")
	b.set("f-endAt", "next tuesday")
	b.set("f-remainingFires", "-1")
	b.do("keep to the excluded calendar too, and submit", 10*time.Second,
		chromedp.Click(chromedp.CSS(`input[name="includeCalendars"][value="off"]`)),
		chromedp.Click(chromedp.CSS(`#job-form button[type="submit"]`)))
	b.waitText("#f-endAt-error", "RFC 3339", 10*time.Second)
	b.waitText("#f-remainingFires-error", "between 0", 10*time.Second)
	b.waitText("#f-includeCalendars-error", "excluded too", 10*time.Second)
	b.do("keep to every day again", 5*time.Second, chromedp.Click(chromedp.CSS(`input[name="includeCalendars"][value="off"]`)))
	endAt := now.AddDate(0, 1, 0).Format(time.RFC3339)
	b.set("f-endAt", endAt)
	b.set("f-remainingFires", "100")
	b.do("create it", 10*time.Second, chromedp.Click(chromedp.CSS(`#job-form button[type="submit"]`)))
	b.waitText("main h1", "steered", 10*time.Second)
	var saved map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/steered", nil, http.StatusOK, &saved)
	if fmt.Sprint(saved["excludeCalendars"]) != "[off]" || saved["endAt"] != endAt || saved["remainingFires"] != 100.0 ||
		saved["overlapPolicy"] != "SKIP" || saved["misfire"] != false || saved["jitterMs"] != 500.0 || saved["catchUp"] != "none" {
		t.Fatalf("the form saved %v", saved)
	}

	// pause with a note, shown with who and when; resume
	b.do("pause", 10*time.Second, chromedp.Click(chromedp.CSS(`#job-actions button[data-action="pause-job"]`)), chromedp.WaitVisible(chromedp.ID("pause-note")))
	b.set("pause-note", "migrating the ledger")
	b.do("confirm the pause", 5*time.Second, chromedp.Click(chromedp.CSS(`#dialog button[type="submit"]`)))
	b.waitText("#job-pause", "migrating the ledger", 10*time.Second)
	b.waitText("#job-status", "PAUSED", 10*time.Second)
	b.do("resume", 10*time.Second, chromedp.Click(chromedp.CSS(`#job-actions button[data-action="resume-job"]`)))
	b.waitFor("the pause to go", `!document.getElementById('job-pause') && !!document.querySelector('#job-actions [data-action="pause-job"]')`, 10*time.Second)

	// a backfill: a bad range shows the API's error at its field; three days of noon fires run to the end. The
	// range's ends are at a minute's 30th second, never a fire's time, and 72 h apart: it holds three noons at
	// any time of day (from 72 h to 1 min ago, it held two when the test ran in the minute after noon)
	setLocal := func(id string, ago time.Duration) {
		eval[any](b, fmt.Sprintf(`(() => { const d = new Date(Date.now() - %d), p = (n) => String(n).padStart(2, '0');
			document.getElementById(%s).value = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' +
				p(d.getHours()) + ':' + p(d.getMinutes()) + ':30'; })()`, ago.Milliseconds(), js(id)))
	}
	setLocal("bf-from", time.Minute)
	setLocal("bf-to", 72*time.Hour)
	b.do("a backwards range", 5*time.Second, chromedp.Click(chromedp.CSS(`#backfill-form button[type="submit"]`)))
	b.waitText("#bf-to-error", "must be after from", 10*time.Second)
	setLocal("bf-from", 72*time.Hour+time.Minute)
	setLocal("bf-to", time.Minute)
	b.do("start a backfill", 5*time.Second, chromedp.Click(chromedp.CSS(`#backfill-form button[type="submit"]`)))
	b.waitFor("the backfill to finish", `(() => { const r = document.querySelector('#backfill-table tbody tr');
		return !!r && r.textContent.includes('DONE') && r.querySelector('.bf-progress').textContent.trim() === '3/3 fires'; })()`, 30*time.Second)
	setLocal("bf-from", 4000*24*time.Hour)
	b.do("start a long backfill", 5*time.Second, chromedp.Click(chromedp.CSS(`#backfill-form button[type="submit"]`)))
	b.waitFor("it to run", `document.querySelectorAll('#backfill-table [data-backfill-cancel]').length === 1`, 10*time.Second)
	b.do("cancel it", 10*time.Second, chromedp.Click(chromedp.CSS(`#backfill-table [data-backfill-cancel]`)), chromedp.Click(chromedp.CSS("#dialog button.danger")))
	b.waitFor("it to be cancelled", `(() => { const r = document.querySelector('#backfill-table tbody tr');
		return !!r && r.textContent.includes('CANCELLED') && !document.querySelector('[data-backfill-cancel]'); })()`, 20*time.Second)
	eval[any](b, `document.getElementById('job-backfill').scrollIntoView()`)
	b.screenshot("job-backfills.png", false)

	// the failed view: two failed items replayed at once, each result on its row, each replay linked
	flakySpec := job("flaky", "", 2, recv.URL)
	flakySpec["retry"] = map[string]any{"maxAttempts": 1}
	mustDo(t, p, "POST", "/api/v1/jobs", flakySpec, http.StatusCreated, nil)
	if !eventually(30*time.Second, func() bool {
		s, _, _ := p.Do("POST", "/api/v1/jobs/flaky/trigger", nil, nil)
		return s == http.StatusAccepted
	}) {
		t.Fatal("trigger of flaky refused")
	}
	b.route("#/failed?hours=2&job=flaky", "Failed executions")
	b.waitFor("two failed rows", `(() => { if (document.querySelectorAll('#failed-table input[name=pick]').length === 2) return true;
		if (Date.now() - (window.lastShow || 0) > 1000) { // the history records an item as it ends: ask again
			window.lastShow = Date.now();
			document.querySelector('#failed-filters button[type=submit]').click();
		}
		return false; })()`, 20*time.Second)
	b.do("select all and replay", 10*time.Second, chromedp.Click(chromedp.ID("failed-all")), chromedp.Click(chromedp.ID("failed-replay")))
	b.waitFor("both replayed", `[...document.querySelectorAll('#failed-table .replay-result')].filter((c) => c.textContent.includes('replayed as')).length === 2`, 20*time.Second)
	b.screenshot("failed-replay.png", false)
	b.do("open a replay", 10*time.Second, chromedp.Click(chromedp.CSS(`#failed-table .replay-result a`)))
	b.waitFor("the replay's page", `!!document.getElementById('exec-replay-of')`, 10*time.Second)
	b.waitText("#exec-one", "MANUAL", 10*time.Second)
	b.do("open the original", 10*time.Second, chromedp.Click(chromedp.ID("exec-replay-of")))
	b.waitText("#exec-one", "FAILED", 10*time.Second)
	b.route("#/executions?job=flaky", "Executions")
	b.waitFor("the list to link both replays", `document.querySelectorAll('#exec-table .replay-of a').length === 2`, 10*time.Second)
	if _, ok := recv.WaitFor(20*time.Second, func([]harness.Delivery) bool { return len(recv.Deliveries(ofJob("flaky"))) >= 4 }); !ok {
		t.Fatalf("flaky deliveries: %d, want 2 failed and 2 replays", len(recv.Deliveries(ofJob("flaky"))))
	}
}
