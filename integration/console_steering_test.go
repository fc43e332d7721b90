package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleCalendarsAndPause drives the calendars page (a bad date first: the API's field error shows, then
// the calendar is created and listed) and shows a paused job's pause and effective next fire on its page.
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
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
}
