package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console's alerts: the default rules screen saves through the API and shows a bad event's field error
// on the Rules box; a job's page shows its rules and hooks; its form edits them and keeps the rest.
func TestConsoleAlerts(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	spec := job("nightly", "", 2, recv.URL)
	spec["alerts"] = map[string]any{"failedFiresInARow": 3, "rules": []any{
		map[string]any{"on": []string{"FIRE_FAILED", "FAILED_FIRES_IN_A_ROW"}, "channels": []string{"oncall"}, "quietPeriodSeconds": 600}}}
	spec["hooks"] = map[string]any{"afterFire": "http://127.0.0.1:9/after"}
	mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)

	b := newBrowser(t, p.URL("/"))
	b.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/#/alerts")))
	b.waitText("main h1", "Default alert rules", 10*time.Second)
	b.waitFor("the defaults form", `!!document.getElementById('alerts.rules')`, 10*time.Second)
	b.set("alerts.rules", "BOGUS -> ops")
	eval[chromedp.Void](b, `document.querySelector('#alerts-form [type=submit]').click()`)
	b.waitText(`[data-field="alerts.rules"] .error`, "not an event", 10*time.Second)
	b.set("alerts.rules", "ITEM_FAILED LATE -> team-slack quiet=300")
	b.set("alerts.late", "5000")
	eval[chromedp.Void](b, `document.querySelector('#alerts-form [type=submit]').click()`)
	b.waitText("#result", "Saved the default alert rules", 10*time.Second)
	var defaults struct {
		LateAfterMs int `json:"lateAfterMs"`
		Rules       []struct {
			On                 []string `json:"on"`
			Channels           []string `json:"channels"`
			QuietPeriodSeconds int      `json:"quietPeriodSeconds"`
		} `json:"rules"`
	}
	mustDo(t, p, "GET", "/api/v1/alerts/defaults", nil, http.StatusOK, &defaults)
	if defaults.LateAfterMs != 5000 || len(defaults.Rules) != 1 || strings.Join(defaults.Rules[0].On, ",") != "ITEM_FAILED,LATE" ||
		defaults.Rules[0].Channels[0] != "team-slack" || defaults.Rules[0].QuietPeriodSeconds != 300 {
		t.Fatalf("defaults %+v", defaults)
	}

	b.route("#/jobs/nightly", "nightly")
	b.waitText("main", "FIRE_FAILED FAILED_FIRES_IN_A_ROW -> oncall quiet=600", 10*time.Second)
	b.waitText("main", "http://127.0.0.1:9/after", 5*time.Second)

	b.route("#/jobs/nightly/edit", "Edit nightly")
	b.waitFor("the form", `!!document.getElementById('f-hook-before')`, 10*time.Second)
	b.set("f-hook-before", "http://127.0.0.1:9/before")
	eval[chromedp.Void](b, `document.querySelector('#job-form [type=submit]').click()`)
	b.waitText("#result", "Saved nightly", 10*time.Second)
	var got struct {
		Alerts struct {
			FailedFiresInARow int `json:"failedFiresInARow"`
			Rules             []struct {
				QuietPeriodSeconds int `json:"quietPeriodSeconds"`
			} `json:"rules"`
		} `json:"alerts"`
		Hooks struct{ BeforeFire, AfterFire string } `json:"hooks"`
	}
	mustDo(t, p, "GET", "/api/v1/jobs/nightly", nil, http.StatusOK, &got)
	if got.Hooks.BeforeFire != "http://127.0.0.1:9/before" || got.Hooks.AfterFire != "http://127.0.0.1:9/after" ||
		got.Alerts.FailedFiresInARow != 3 || len(got.Alerts.Rules) != 1 || got.Alerts.Rules[0].QuietPeriodSeconds != 600 {
		t.Fatalf("job after the form's save %+v", got)
	}
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("console problems: %v", probs)
	}
}
