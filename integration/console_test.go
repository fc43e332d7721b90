package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ejserver/ejserver/integration/harness"
)

// chromium finds Debian's Chromium; without it the test fails (make test installs it: scripts/deps.sh chromium).
func chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("the console test needs Debian's Chromium: `make test` installs it (scripts/deps.sh chromium), or apt-get install chromium")
	return ""
}

// browser drives one headless Chromium tab against a peer's console and records what the page writes to its
// console.
type browser struct {
	t    testing.TB
	ctx  context.Context
	base string
	shot string // where screenshots go ("" = not kept)

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

func newBrowser(t testing.TB, base string) *browser {
	t.Helper()
	path := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium makes its singleton socket's directory in TMPDIR and a killed browser leaves it behind:
		// one under the test's own directory goes with it.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, base: base}
	if os.Getenv("EJ_SCREENSHOTS") != "" {
		root, err := harness.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		b.shot = filepath.Join(root, "docs", "screenshots")
		if err := os.MkdirAll(b.shot, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx); err != nil { // start the browser with no deadline
		t.Fatalf("start %s: %v", path, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.messages = append(b.messages, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// browserSlack stretches every deadline of a browser step. They are upper bounds that prove nothing by being
// tight, and Chromium sharing 2 cores with the tests that run in parallel takes seconds to type a form.
const browserSlack = 3

// do runs steps with a deadline.
func (b *browser) do(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserSlack*timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('main') ? document.querySelector('main').innerText.slice(0, 3000) : ''`))
	b.t.Fatalf("%s: %v\nthe page's main: %s\nconsole: %v", what, err, text, b.consoleLog())
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserSlack*10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate (an expression) until it holds, within timeout.
func (b *browser) waitFor(what, predicate string, timeout time.Duration) {
	b.t.Helper()
	timeout *= browserSlack
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		b.fail("waiting for "+what, err)
	}
}

// fitsWidth waits until the page is no wider than px; when it stays wider, the failure names the elements
// that stick out (the outermost first), which is what a fix needs to know.
func (b *browser) fitsWidth(what string, px int, timeout time.Duration) {
	b.t.Helper()
	pred := fmt.Sprintf(`document.documentElement.scrollWidth <= %d`, px)
	ctx, cancel := context.WithTimeout(b.ctx, timeout*browserSlack+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](pred, chromedp.WithPollingTimeout(timeout*browserSlack),
		chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		wide := eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('body *')]
			.filter((e) => e.getBoundingClientRect().right > %d + 1)
			.slice(0, 12)
			.map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (typeof e.className === 'string' && e.className ? '.' + e.className.split(' ').join('.') : '') +
				' right=' + Math.round(e.getBoundingClientRect().right) + ' width=' + Math.round(e.getBoundingClientRect().width))`, px))
		b.fail(fmt.Sprintf("waiting for %s to fit a %d px phone (%d px wide; sticking out: %v)", what, px,
			eval[int](b, `document.documentElement.scrollWidth`), wide), err)
	}
}

// waitText waits until the element sel holds text.
func (b *browser) waitText(sel, text string, timeout time.Duration) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("%s to show %q", sel, text),
		fmt.Sprintf(`(() => { const el = document.querySelector(%s); return !!el && el.textContent.includes(%s); })()`, js(sel), js(text)), timeout)
}

// go navigates within the console (a hash route) and waits for the screen's heading.
func (b *browser) route(hash, heading string) {
	b.t.Helper()
	eval[chromedp.Void](b, `location.hash = `+js(hash))
	b.waitText("main h1", heading, 10*time.Second)
}

// set sets a form control's value as typing would: with input and change events.
func (b *browser) set(id, value string) {
	b.t.Helper()
	eval[chromedp.Void](b, fmt.Sprintf(`(() => { const el = document.getElementById(%s); el.value = %s;
		el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); })()`, js(id), js(value)))
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	return eval[int](b, `document.querySelectorAll(`+js(sel)+`).length`)
}

func (b *browser) screenshot(name string, full bool) {
	b.t.Helper()
	if b.shot == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	action := chromedp.CaptureScreenshot()
	if full {
		action = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, action)
	if err != nil {
		b.fail("screenshot "+name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shot, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// problems returns what the page wrote to its console that a user would see as an error: exceptions, errors
// and warnings, except the browser's own note of an API answer of 4xx (the console shows those as it
// should: a 401 before sign-in, a 400 for a field error).
func (b *browser) problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.messages {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
		default:
			continue
		}
		if m.Source == "network" && strings.Contains(m.URL, "/api/v1/") && strings.Contains(m.Text, "status of 4") {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s %s:%d)", m, m.Source, m.URL, m.Line))
	}
	return out
}

func (b *browser) consoleLog() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.messages {
		out = append(out, m.String())
	}
	return out
}

// js quotes a Go string as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestConsole drives the web console in headless Chromium against a real cluster with tokens: sign
// in, create a job through the form (an invalid cron first: the API's field error shows next to the field),
// see it fire, trigger it with a parameter and an item, see the execution appear, disable an item, see a
// peer go away, check keyboard dialogs, a phone width and a viewer who sees no action, with no console error.
// EJ_SCREENSHOTS=1 also writes the screenshots of docs/screenshots.
func TestConsole(t *testing.T) {
	t.Parallel()
	start := time.Now()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.JobName == "report" {
			return 502, `{"error":"warehouse unreachable: dial tcp 10.0.3.7:5432: connection refused"}`, 0
		}
		return 200, `{"ok":true}`, 0
	})
	// one peer, so that every execution is in the SQLite history the browser's peer serves; a second peer
	// joins and leaves later
	tokens := tokensFile(t)
	c := newCluster(t, 1, withArgs("--api-tokens", tokens))
	p := c.peers[0]
	admin := []string{"Authorization", "Bearer " + adminToken}

	// jobs to look at
	settle := job("settle", "0 0/10 * * * ?", 4, recv.URL)
	settle["timeZone"] = "Asia/Shanghai"
	settle["shardingItemParameters"] = "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen"
	settle["jobParameter"] = "batch=500"
	settle["description"] = "nightly settlement, one item per city"
	settle["webhook"] = map[string]any{"url": recv.URL, "secret": testSecret, "headers": map[string]string{"Authorization": "Bearer receiver-token-123"}}
	mustDo(t, p, "POST", "/api/v1/jobs", settle, 201, nil, admin...)
	report := job("report", "@daily", 1, recv.URL)
	report["retry"] = map[string]any{"maxAttempts": 1}
	mustDo(t, p, "POST", "/api/v1/jobs", report, 201, nil, admin...)
	cleanup := job("cleanup", "0 30 2 * * ?", 2, recv.URL)
	cleanup["disabled"] = true
	mustDo(t, p, "POST", "/api/v1/jobs", cleanup, 201, nil, admin...)
	if !eventually(20*time.Second, func() bool {
		status, _, _ := p.Do("POST", "/api/v1/jobs/report/trigger", map[string]any{}, nil, admin...)
		if status != 202 {
			return false
		}
		_, ok := recv.WaitFor(3*time.Second, func(ds []harness.Delivery) bool { return len(recv.Deliveries(harness.Job("report"))) > 0 })
		return ok
	}) {
		t.Fatal("the report job never ran")
	}

	b := newBrowser(t, p.URL("/"))
	t.Logf("cluster and browser up after %s", time.Since(start).Round(time.Millisecond))

	// sign in: a wrong token is refused, the admin token opens the jobs
	b.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/")), chromedp.WaitVisible(chromedp.ID("signin-token")))
	b.do("a wrong token", 10*time.Second, chromedp.SendKeys(chromedp.ID("signin-token"), "not-a-valid-token-0123"), chromedp.Click(chromedp.CSS(`#signin-form button[type="submit"]`)))
	b.waitText("#signin-error", "refused", 10*time.Second)
	b.do("sign in", 10*time.Second, chromedp.SendKeys(chromedp.ID("signin-token"), adminToken), chromedp.Click(chromedp.CSS(`#signin-form button[type="submit"]`)))
	b.waitText(`#jobs-table tbody tr[data-key="settle"]`, "settle", 10*time.Second)
	b.waitText("#who", "admin", 5*time.Second)
	if eval[string](b, `sessionStorage.getItem("ejserver.token")`) != adminToken || eval[string](b, `localStorage.length + document.cookie`) != "0" {
		t.Fatal("the token must be in sessionStorage only")
	}
	b.waitText(`#jobs-table tbody tr[data-key="report"]`, "FAILED 502", 10*time.Second)
	b.waitText(`#jobs-table tbody tr[data-key="cleanup"]`, "DISABLED", 5*time.Second)
	b.waitText(`#jobs-table tbody tr[data-key="settle"]`, "every 10 minutes", 5*time.Second)

	// search and filter
	b.set("jobs-status", "DISABLED")
	b.waitFor("only cleanup listed", `document.querySelectorAll("#jobs-table tbody tr").length === 1 && !!document.querySelector('#jobs-table tr[data-key="cleanup"]')`, 10*time.Second)
	b.set("jobs-status", "")
	b.do("search", 5*time.Second, chromedp.SendKeys(chromedp.ID("jobs-q"), "settle"))
	b.waitFor("only settle listed", `document.querySelectorAll("#jobs-table tbody tr").length === 1 && !!document.querySelector('#jobs-table tr[data-key="settle"]')`, 10*time.Second)
	b.set("jobs-q", "")
	b.waitFor("every job listed", `document.querySelectorAll("#jobs-table tbody tr").length === 3`, 10*time.Second)
	b.screenshot("jobs.png", false)

	// create through the form: an invalid cron shows the API's message next to the field
	b.do("open the form", 10*time.Second, chromedp.Click(chromedp.CSS(`a[href="#/create"]`)), chromedp.WaitVisible(chromedp.ID("f-jobName")))
	if unlabeled := eval[int](b, `[...document.querySelectorAll("#job-form input, #job-form select, #job-form textarea")].filter(el => el.labels.length === 0 && !el.getAttribute("aria-label")).length`); unlabeled != 0 {
		t.Fatalf("%d form controls have no label", unlabeled)
	}
	b.set("f-shardingTotalCount", "2")
	b.do("fill the form", 10*time.Second,
		chromedp.SendKeys(chromedp.ID("f-jobName"), "console-demo"),
		chromedp.SendKeys(chromedp.ID("f-cron"), "0 0 25 * * ?"),
		chromedp.SendKeys(chromedp.ID("f-shardingItemParameters"), "0=north,1=south"),
		chromedp.SendKeys(chromedp.ID("f-url"), recv.URL),
		chromedp.Click(chromedp.CSS(`#job-form button[type="submit"]`)))
	// the cron preview (run when the field loses focus) may mark the field before the submit's answer
	// arrives: wait for the summary that only the submit shows
	b.waitText(".error-summary", "Cron", 10*time.Second)
	b.waitText("#f-cron-error", `hour "25"`, 5*time.Second)
	if eval[string](b, `document.getElementById("f-cron").getAttribute("aria-invalid")`) != "true" {
		t.Fatal("the invalid cron is not marked")
	}
	if n := b.count(`#job-form .error:not(:empty)`); n != 1 {
		t.Fatalf("%d field errors shown, want 1 (cron)", n)
	}
	eval[chromedp.Void](b, `window.scrollTo(0, 0)`)
	b.screenshot("create-form-error.png", false)
	b.set("f-cron", "0/2 * * * * ?")
	b.do("save", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#job-form button[type="submit"]`)))
	b.waitText("main h1", "console-demo", 10*time.Second)
	b.waitText("#result", "Created console-demo", 5*time.Second)
	b.waitText(`#items-table tbody tr[data-key="1"]`, "south", 10*time.Second)

	// see it fire: the receiver gets it, and the job's executions show it without a reload
	if _, ok := recv.WaitFor(20*time.Second, func([]harness.Delivery) bool {
		return len(recv.Deliveries(func(d harness.Delivery) bool {
			return d.Payload.JobName == "console-demo" && d.Payload.Source == "NORMAL_TRIGGER"
		})) > 0
	}); !ok {
		t.Fatal("console-demo never fired")
	}
	b.waitText("#recent-table tbody", "NORMAL_TRIGGER", 15*time.Second)
	b.waitText(`#items-table tbody tr[data-key="0"]`, "OK", 10*time.Second)

	// trigger it with a parameter, item 1 only; the result shows, the execution appears
	b.do("open the trigger dialog", 10*time.Second, chromedp.Click(chromedp.CSS(`#job-actions button[data-action="trigger"]`)), chromedp.WaitVisible(chromedp.ID("trigger-param")))
	b.set("trigger-param", "console-rerun")
	b.do("fill the trigger", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#dialog input[name="item"][value="1"]`)),
		chromedp.Click(chromedp.CSS(`#dialog button[type="submit"]`)))
	b.waitText("#result", "Triggered console-demo", 10*time.Second)
	if eval[bool](b, `document.getElementById("dialog").open`) {
		t.Fatal("the trigger dialog stayed open")
	}
	if _, ok := recv.WaitFor(15*time.Second, func([]harness.Delivery) bool {
		return len(recv.Deliveries(func(d harness.Delivery) bool {
			return d.Payload.JobName == "console-demo" && d.Payload.Source == "MANUAL" && d.Payload.JobParameter == "console-rerun" && d.Payload.ShardingItem == 1
		})) > 0
	}); !ok {
		t.Fatal("the trigger with a parameter never reached the receiver")
	}
	if n := len(recv.Deliveries(func(d harness.Delivery) bool {
		return d.Payload.Source == "MANUAL" && d.Payload.ShardingItem == 0 && d.Payload.JobName == "console-demo"
	})); n != 0 {
		t.Fatalf("item 0 ran %d times on a trigger of item 1", n)
	}
	b.do("open its executions", 10*time.Second, chromedp.Click(chromedp.CSS(`a[href="#/executions?job=console-demo"]`)))
	b.waitText("main h1", "Executions", 10*time.Second)
	b.set("exec-source", "MANUAL")
	b.do("filter item 1", 5*time.Second, chromedp.SendKeys(chromedp.ID("exec-item"), "1"))
	b.waitFor("only MANUAL executions of item 1", `(() => { const rows = [...document.querySelectorAll("#exec-table tbody tr")];
		return rows.length > 0 && rows.every(r => r.cells[3].textContent.includes("MANUAL") && r.cells[2].textContent.trim() === "1"); })()`, 10*time.Second)
	b.set("exec-item", "-3")
	b.waitText("#exec-item-error", "not an item number", 10*time.Second)
	b.set("exec-item", "")
	b.set("exec-source", "")
	b.set("exec-from", time.Now().Add(time.Hour).Format("2006-01-02T15:04:05"))
	b.waitFor("nothing started in the future", `!document.getElementById("exec-empty").hidden && document.querySelectorAll("#exec-table tbody tr").length === 0`, 10*time.Second)
	b.set("exec-from", time.Now().Add(-time.Hour).Format("2006-01-02T15:04:05"))
	b.waitFor("executions of the last hour", `document.querySelectorAll("#exec-table tbody tr").length > 3`, 10*time.Second)

	// paging: three a page, older and back to newer
	b.route("#/executions?job=console-demo&limit=3", "Executions")
	b.waitFor("a first page of three", `document.querySelectorAll("#exec-table tbody tr").length === 3 && !!document.querySelector('#exec-pager [data-cursor]:not([data-cursor="newer"])')`, 10*time.Second)
	first := eval[string](b, `[...document.querySelectorAll("#exec-table tbody tr")].map(r => r.dataset.key).join()`)
	b.do("older", 5*time.Second, chromedp.Click(chromedp.CSS(`#exec-pager [data-cursor]:not([data-cursor="newer"])`)))
	b.waitFor("a second page", `!!document.querySelector('#exec-pager [data-cursor="newer"]') && document.querySelectorAll("#exec-table tbody tr").length > 0`, 10*time.Second)
	if second := eval[string](b, `[...document.querySelectorAll("#exec-table tbody tr")].map(r => r.dataset.key).join()`); second == first {
		t.Fatal("the older page shows the same executions")
	}
	b.do("newer", 5*time.Second, chromedp.Click(chromedp.CSS(`#exec-pager [data-cursor="newer"]`)))
	b.waitFor("the first page again", `!document.querySelector('#exec-pager [data-cursor="newer"]')`, 10*time.Second)
	b.route("#/executions", "Executions")
	b.waitText("#exec-table tbody", "FAILED 502", 10*time.Second)
	eval[chromedp.Void](b, `document.querySelectorAll("#exec-table tbody tr.row-failed details").forEach(d => d.open = true)`)
	b.waitText("#exec-table tbody", "warehouse unreachable", 5*time.Second)
	b.screenshot("executions.png", false)

	// the job's page does not move under the pointer: its items' table stays where it was first drawn while the
	// charts above it load (a click on an item's Disable must not land on the next row or the chart)
	eval[chromedp.Void](b, `window.itemsTop = undefined; new MutationObserver((_, o) => {
		const tr = document.querySelector("#items-table tbody tr");
		if (tr) { window.itemsTop = tr.getBoundingClientRect().top + window.scrollY; o.disconnect(); } }).observe(document.body, {childList: true, subtree: true})`)
	b.route("#/jobs/console-demo", "console-demo")
	b.waitFor("the charts", `!!document.querySelector("#job-charts").dataset.renderMs && window.itemsTop !== undefined`, 15*time.Second)
	if moved := eval[float64](b, `document.querySelector("#items-table tbody tr").getBoundingClientRect().top + window.scrollY - window.itemsTop`); moved != 0 {
		t.Fatalf("the items' table moved %.0f px down as the job's charts loaded", moved)
	}

	// disable an item: confirm, and its status changes
	b.do("disable item 0", 10*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="disable-item"][data-item="0"]`)), chromedp.WaitVisible(chromedp.CSS("#dialog button.danger")))
	if eval[string](b, `document.activeElement.textContent`) != "Cancel" {
		t.Fatal("a destructive confirmation must start on Cancel")
	}
	b.do("confirm", 5*time.Second, chromedp.Click(chromedp.CSS("#dialog button.danger")))
	b.waitText(`#items-table tbody tr[data-key="0"]`, "DISABLED", 10*time.Second)
	b.waitText("#result", "Disabled item 0 of console-demo", 5*time.Second)
	var items struct{ Items []struct{ Disabled bool } }
	mustDo(t, p, "GET", "/api/v1/jobs/console-demo/sharding", nil, 200, &items, admin...)
	if !items.Items[0].Disabled || items.Items[1].Disabled {
		t.Fatalf("sharding after disabling item 0: %+v", items)
	}
	b.screenshot("job-detail.png", true)

	// a confirmation is a modal dialog: Escape closes it, nothing happens, focus goes back
	b.do("open delete", 5*time.Second, chromedp.Click(chromedp.CSS(`#job-actions button[data-action="delete-job"]`)), chromedp.WaitVisible(chromedp.CSS("#dialog button.danger")))
	b.do("escape", 5*time.Second, chromedp.KeyEvent(kb.Escape))
	b.waitFor("the dialog to close", `!document.getElementById("dialog").open && document.activeElement.dataset.action === "delete-job"`, 5*time.Second)
	mustDo(t, p, "GET", "/api/v1/jobs/console-demo", nil, 200, nil, admin...)

	// servers and instances: a peer going away shows within seconds, without a reload
	b.route("#/servers", "Servers and instances")
	b.waitFor("one instance online", `document.querySelectorAll("#instances-table tbody tr:not(.row-gone)").length === 1`, 10*time.Second)
	peer2 := c.add(withArgs("--api-tokens", tokens)).InstanceID()
	b.waitText("#cluster-changes", "Instance "+peer2+" joined the cluster", 10*time.Second)
	b.waitFor("two instances online", `document.querySelectorAll("#instances-table tbody tr:not(.row-gone)").length === 2`, 10*time.Second)
	b.screenshot("servers.png", false)
	stopped := time.Now()
	if err := c.peers[1].Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	b.waitText("#cluster-changes", "Instance "+peer2+" left the cluster", 10*time.Second)
	b.waitText(`#instances-table tbody tr.row-gone`, "GONE", 5*time.Second)
	t.Logf("the console showed peer 2 gone %s after it stopped", time.Since(stopped).Round(100*time.Millisecond))

	// delete: confirm, and it is gone from the list
	b.route("#/jobs/console-demo", "console-demo")
	b.do("delete", 10*time.Second, chromedp.Click(chromedp.CSS(`#job-actions button[data-action="delete-job"]`)), chromedp.Click(chromedp.CSS("#dialog button.danger")))
	b.waitText("main h1", "Jobs", 10*time.Second)
	b.waitText("#result", "Deleted console-demo", 5*time.Second)
	b.waitFor("console-demo gone from the list", `!document.querySelector('#jobs-table tr[data-key="console-demo"]') && !!document.querySelector('#jobs-table tr[data-key="settle"]')`, 10*time.Second)
	mustDo(t, p, "GET", "/api/v1/jobs/console-demo", nil, 404, nil, admin...)

	// a phone's width: one column, no sideways scrolling of the page
	b.do("phone width", 10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.route("#/jobs", "Jobs")
	b.waitText(`#jobs-table tbody tr[data-key="settle"]`, "settle", 5*time.Second)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Fatalf("the page is %d px wide on a 390 px phone", w)
	}
	b.screenshot("phone-jobs.png", false)
	b.do("desktop width", 10*time.Second, chromedp.EmulateReset())

	// a viewer sees everything and no action
	b.do("sign out", 10*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="sign-out"]`)), chromedp.WaitVisible(chromedp.ID("signin-token")))
	if eval[string](b, `sessionStorage.getItem("ejserver.token") || ""`) != "" {
		t.Fatal("sign out kept the token")
	}
	b.do("sign in as a viewer", 10*time.Second, chromedp.SendKeys(chromedp.ID("signin-token"), viewerToken), chromedp.Click(chromedp.CSS(`#signin-form button[type="submit"]`)))
	b.waitText(`#jobs-table tbody tr[data-key="settle"]`, "settle", 10*time.Second)
	b.waitText("#who", "viewer", 5*time.Second)
	noActions := func(where string) {
		t.Helper()
		if n := b.count(`main [data-action]:not([data-action="toggle-headers"]):not([data-action="page"]), a[href="#/create"], a[href$="/edit"]`); n != 0 {
			t.Fatalf("a viewer sees %d action buttons on %s", n, where)
		}
	}
	noActions("the jobs")
	b.route("#/jobs/settle", "settle")
	b.waitText(`#items-table tbody tr[data-key="3"]`, "Shenzhen", 10*time.Second)
	b.waitText("#job-config", "•••••• set (never shown)", 5*time.Second)
	if strings.Contains(eval[string](b, `document.body.textContent`), "receiver-token-123") {
		t.Fatal("a header value shows before the operator asks for it")
	}
	noActions("a job")
	b.route("#/servers", "Servers and instances")
	b.waitText("#servers-table tbody", "127.0.0.1", 10*time.Second)
	noActions("the servers")
	b.route("#/create", "New job")
	b.waitText("main", "may only read", 5*time.Second)

	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
	t.Logf("console test took %s", time.Since(start).Round(time.Millisecond))
}

// Without tokens the API is open on loopback: the console asks for no token, says so, and offers every action.
func TestConsoleOpenAPI(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", job("open-demo", "@hourly", 1, recv.URL), 201, nil)
	b := newBrowser(t, p.URL("/"))
	b.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/")))
	b.waitText(`#jobs-table tbody tr[data-key="open-demo"]`, "every hour", 10*time.Second)
	b.waitText("#who", "open API", 5*time.Second)
	if b.count(`#signin-token, button[data-action="sign-out"]`) != 0 {
		t.Fatal("an open API needs no sign-in and has no sign-out")
	}
	if b.count(`a[href="#/create"], button[data-action="trigger"][data-job="open-demo"]`) != 2 {
		t.Fatal("an open API's console offers the actions")
	}
	b.do("disable it", 10*time.Second, chromedp.Click(chromedp.CSS(`button[data-action="disable-job"][data-job="open-demo"]`)),
		chromedp.Click(chromedp.CSS("#dialog button.danger")))
	b.waitText(`#jobs-table tbody tr[data-key="open-demo"]`, "DISABLED", 10*time.Second)
	b.waitText("#result", "Disabled open-demo", 5*time.Second)
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
}

// Items answered 202 Accepted, in the console: the sharding view shows a running item's progress bar (or "—"),
// its receiver's last message as text, its lease counting down with the page's refresh, how long it has run,
// and a re-POSTed item as RETRYING with its attempt; the executions list shows each accepted execution's state
// as a badge (RUNNING, SUCCEEDED, FAILED, EXPIRED, CANCELLED) with its progress, message and output.
func TestConsoleLongRunning(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.JobName == "reindex" && d.Payload.Attempt > 1 {
			return http.StatusAccepted, "", time.Minute // the re-POST hangs: its lease stays RETRYING
		}
		return http.StatusAccepted, "", 0
	})
	c := newCluster(t, 1)
	p := c.peers[0]

	ledgers := asyncJob("reconcile-ledgers", "", 4, recv.URL, 30)
	ledgers["shardingItemParameters"] = "0=north,1=south,2=east,3=west"
	reindex := asyncJob("reindex", "", 1, recv.URL, 2)
	reindex["retry"] = map[string]any{"maxAttempts": 2, "initialBackoffMs": 100, "maxBackoffMs": 100}
	reindex["webhook"].(map[string]any)["timeoutMs"] = 90000
	expiring := asyncJob("expiring", "", 1, recv.URL, 2)
	expiring["retry"] = map[string]any{"maxAttempts": 1}
	for _, spec := range []map[string]any{ledgers, reindex, expiring, asyncJob("doomed", "", 1, recv.URL, 30)} {
		mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
		mustDo(t, p, "POST", "/api/v1/jobs/"+spec["jobName"].(string)+"/trigger", map[string]any{}, http.StatusAccepted, nil)
	}
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 7 }); !ok {
		t.Fatalf("%d deliveries, want 7", len(recv.Deliveries(nil)))
	}
	sent := map[string]harness.Payload{} // "job/item" -> its first request
	for _, d := range recv.Deliveries(nil) {
		if d.Payload.Attempt <= 1 {
			sent[fmt.Sprintf("%s/%d", d.Payload.JobName, d.Payload.ShardingItem)] = d.Payload
		}
	}
	for i := range 4 {
		waitAccepted(t, p, "reconcile-ledgers", i)
	}
	waitAccepted(t, p, "doomed", 0)
	report := func(key, kind string, body map[string]any) {
		t.Helper()
		if s, typ, v := callback(t, p, sent[key].ExecutionID, kind, sent[key].CallbackToken, body); s != http.StatusOK {
			t.Fatalf("%s of %s: %d %s %+v", kind, key, s, typ, v)
		}
	}
	const hostile = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2"> 2 of 9 partitions`
	report("reconcile-ledgers/0", "heartbeat", map[string]any{"progress": 40, "message": "4,000 of 10,000 ledgers reconciled"})
	report("reconcile-ledgers/1", "heartbeat", map[string]any{"message": hostile})
	report("reconcile-ledgers/2", "complete", map[string]any{"status": "success", "message": "settled 1,200 ledgers", "output": "ledgers=1200\nskipped=0"})
	report("reconcile-ledgers/3", "complete", map[string]any{"status": "failure", "message": "warehouse unreachable"})
	mustDo(t, p, "DELETE", "/api/v1/jobs/doomed", nil, http.StatusNoContent, nil)

	b := newBrowser(t, p.URL("/"))
	b.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/#/jobs/reconcile-ledgers")))
	b.waitText("main h1", "reconcile-ledgers", 10*time.Second)
	row := func(item int) string { return fmt.Sprintf(`#items-table tbody tr[data-key="%d"]`, item) }

	// item 0: a progress bar at 40 %, the message, the lease counting down from at most 30 s, the time it has run
	b.waitText(row(0), "4,000 of 10,000 ledgers reconciled", 10*time.Second)
	if v := eval[int](b, `document.querySelector('`+row(0)+` progress').value`); v != 40 {
		t.Fatalf("item 0's progress bar is at %d, want 40", v)
	}
	b.waitText(row(0)+" .progress", "40%", 5*time.Second)
	b.waitText(row(0)+" .badge", "RUNNING", 5*time.Second)
	b.waitText(row(0), "MANUAL · running", 5*time.Second)
	left := func() int {
		t.Helper()
		text := eval[string](b, `document.querySelector('`+row(0)+` .lease').textContent`)
		var n int
		if _, err := fmt.Sscanf(text, "lease expires in %d s", &n); err != nil || n <= 0 || n > 30 {
			t.Fatalf("item 0's lease shows %q, want \"lease expires in N s\" with 0 < N <= 30", text)
		}
		return n
	}
	first := left()
	b.waitFor("the lease to count down with the page's refresh", fmt.Sprintf(`(() => {
		const m = /lease expires in (\d+) s/.exec(document.querySelector('%s .lease').textContent);
		return !!m && Number(m[1]) < %d; })()`, row(0), first), 10*time.Second)
	if n := left(); n >= first {
		t.Fatalf("the lease still shows %d s, was %d s", n, first)
	}

	// item 1: no progress ("—"), and a receiver's markup shown as text, never run
	b.waitText(row(1)+" .progress.none", "—", 5*time.Second)
	if got := eval[string](b, `document.querySelector('`+row(1)+` .async-msg').textContent`); got != hostile {
		t.Fatalf("item 1's message reads %q, want the receiver's text as it is: %q", got, hostile)
	}
	if n := b.count(`main script, main img`); n != 0 || eval[string](b, `String(window.pwned)`) != "undefined" {
		t.Fatalf("a receiver's message made markup: %d elements, window.pwned=%s", n, eval[string](b, `String(window.pwned)`))
	}
	// the ended items are no longer running; their executions say how they ended
	b.waitText(row(2), "COMPLETED", 5*time.Second)
	b.waitFor("the recent executions' states", `(() => { const t = document.querySelector("#recent-table tbody");
		return ["RUNNING", "SUCCEEDED", "FAILED"].every(s => !!t.querySelector(".badge.st-" + s)); })()`, 10*time.Second)
	b.do("a taller window", 10*time.Second, chromedp.EmulateViewport(1280, 1240))
	eval[chromedp.Void](b, `document.getElementById("sharding-title").scrollIntoView()`)
	b.screenshot("async-running.png", false)
	// on a phone the running items' cards fit the width
	b.do("phone width", 10*time.Second, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.waitText(row(1), "lease expires in", 5*time.Second)
	// the charts, drawn for the wide window, follow the narrower one as their boxes shrink
	b.fitsWidth("the job's page", 390, 5*time.Second)
	b.do("the usual window", 10*time.Second, chromedp.EmulateReset())

	// a lease that ran out with an attempt left: RETRYING, attempt 2, while the re-POST waits for its answer
	b.route("#/jobs/reindex", "reindex")
	b.waitFor("item 0 of reindex RETRYING", `!!document.querySelector('`+row(0)+` .badge.st-RETRYING')`, 20*time.Second)
	b.waitText(row(0), "attempt 2", 5*time.Second)
	b.waitText(row(0), "being POSTed again", 5*time.Second)
	b.waitText(row(0)+" .lease", "answer due in", 5*time.Second)

	// the executions list: every ended state, and the running ones with their progress and message
	b.route("#/executions", "Executions")
	for _, state := range []string{"RUNNING", "SUCCEEDED", "FAILED", "EXPIRED", "CANCELLED"} {
		b.waitFor("an execution "+state, `!!document.querySelector("#exec-table tbody .badge.st-`+state+`")`, 20*time.Second)
	}
	execRow := func(key string) string { return `#exec-table tbody tr[data-key="` + sent[key].ExecutionID + `"]` }
	b.waitText(execRow("reconcile-ledgers/0"), "4,000 of 10,000 ledgers reconciled", 5*time.Second)
	b.waitText(execRow("reconcile-ledgers/0")+" .progress", "40%", 5*time.Second)
	b.waitText(execRow("reconcile-ledgers/0"), "lease expires in", 5*time.Second)
	b.waitText(execRow("reconcile-ledgers/0"), "so far", 5*time.Second)
	if got := eval[string](b, `document.querySelector('`+execRow("reconcile-ledgers/1")+` .async-msg').textContent`); got != hostile {
		t.Fatalf("the execution's message reads %q, want %q", got, hostile)
	}
	b.waitText(execRow("reconcile-ledgers/3")+" .badge", "FAILED", 5*time.Second)
	b.waitText(execRow("reconcile-ledgers/3"), "warehouse unreachable", 5*time.Second)
	b.waitText(execRow("expiring/0")+" .badge", "EXPIRED", 5*time.Second)
	b.waitText(execRow("doomed/0")+" .badge", "CANCELLED", 5*time.Second)
	// the details: a completion's output, and when a running one was last heard from; an open disclosure
	// stays open through the refreshes
	eval[chromedp.Void](b, `document.querySelectorAll("#exec-table tbody details").forEach(d => d.open = true)`)
	if got := eval[string](b, `document.querySelector('`+execRow("reconcile-ledgers/2")+` pre.output').textContent`); got != "ledgers=1200\nskipped=0" {
		t.Fatalf("the output reads %q", got)
	}
	b.waitText(execRow("reconcile-ledgers/0")+" details", "Last heard", 5*time.Second)
	b.waitFor("a refresh", `document.getElementById("live").textContent.includes("updated")`, 5*time.Second)
	before := eval[string](b, `document.getElementById("live").textContent`)
	b.waitFor("another refresh", `document.getElementById("live").textContent !== `+js(before), 10*time.Second)
	if !eval[bool](b, `document.querySelector('`+execRow("reconcile-ledgers/0")+` details').open`) {
		t.Fatal("a refresh closed the running execution's details")
	}

	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
}

// TestConsoleChannels drives the channels page: create a Slack channel through the form (a bad URL first:
// the API's field error shows next to the field), test it (the receiver gets the message and the page says
// it was sent, then lists the send), edit it without retyping the secret URL, and delete it.
func TestConsoleChannels(t *testing.T) {
	t.Parallel()
	slack := newCapture(t, nil)
	c := newCluster(t, 1)
	p := c.peers[0]
	b := newBrowser(t, p.URL("/"))
	b.do("open the console", 20*time.Second, chromedp.Navigate(p.URL("/#/channels")))
	b.waitText("main h1", "Notification channels", 10*time.Second)
	b.do("open the form", 10*time.Second, chromedp.Click(chromedp.CSS(`button[data-channel-new]`)))
	b.waitFor("the form", `!!document.getElementById("c-slack-url")`, 5*time.Second)
	b.set("c-name", "ops-slack")
	b.set("c-slack-url", "http://example.com/not-https")
	b.do("submit a bad URL", 10*time.Second, chromedp.Click(chromedp.CSS(`#channel-form button[type="submit"]`)))
	b.waitText(`[data-field="slack.url"] .error`, "https", 10*time.Second)
	b.screenshot("channel-form-error.png", false)
	b.set("c-slack-url", slack.srv.URL+"/services/T/B/console-secret")
	b.do("create it", 10*time.Second, chromedp.Click(chromedp.CSS(`#channel-form button[type="submit"]`)))
	b.waitText(`#channels-table tbody tr[data-key="ops-slack"]`, "url set", 10*time.Second)
	b.waitText("#result", "Created channel ops-slack", 5*time.Second)

	b.do("test it", 10*time.Second, chromedp.Click(chromedp.CSS(`button[data-channel-test="ops-slack"]`)))
	b.waitText("#channel-test-result", "Test notification sent through ops-slack (HTTP 200)", 10*time.Second)
	if got := slack.wait(t, 1, 5*time.Second)[0]; !strings.Contains(string(got.Body), "Test notification") {
		t.Fatalf("slack got %s", got.Body)
	}
	b.waitText("#notifications-table tbody", "sent", 10*time.Second)
	b.screenshot("channels.png", false)

	b.do("edit it", 10*time.Second, chromedp.Click(chromedp.CSS(`button[data-channel-edit="ops-slack"]`)))
	b.waitText("#channel-form", "Set: leave empty to keep it.", 5*time.Second)
	b.set("c-desc", "on call")
	b.do("save", 10*time.Second, chromedp.Click(chromedp.CSS(`#channel-form button[type="submit"]`)))
	b.waitText(`#channels-table tbody tr[data-key="ops-slack"]`, "on call", 10*time.Second)
	var ch map[string]any
	mustDo(t, p, "POST", "/api/v1/channels/ops-slack/test", nil, http.StatusOK, &ch)
	if ch["outcome"] != "sent" {
		t.Fatalf("after an edit that left the URL empty: %v", ch)
	}
	if strings.Contains(eval[string](b, `document.body.innerHTML`), "console-secret") {
		t.Fatal("the page shows the secret URL")
	}

	b.do("delete it", 10*time.Second, chromedp.Click(chromedp.CSS(`button[data-channel-delete="ops-slack"]`)),
		chromedp.Click(chromedp.CSS("#dialog button.danger")))
	b.waitFor("the row to go", `!document.querySelector('#channels-table tbody tr[data-key="ops-slack"]')`, 10*time.Second)
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("the console wrote errors:\n%s", strings.Join(probs, "\n"))
	}
}
