package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console's Audit page, as a viewer: the trail newest first with each change's before and after, a
// secret only as "changed" (its value nowhere in the page), filters by job, actor and action, and the
// "Older entries" page after the first 50.
func TestConsoleAudit(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--api-tokens", tokensFile(t)))
	p := c.peers[0]
	admin := []string{"Authorization", "Bearer " + adminToken}
	rotated := "whsec_" + strings.Repeat("QUJD", 11) + "QQ=="
	spec := job("settle", "@yearly", 2, recv.URL)
	spec["webhook"] = map[string]any{"url": recv.URL, "secret": testSecret}
	mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, nil, admin...)
	spec["cron"] = "@monthly"
	spec["webhook"] = map[string]any{"url": recv.URL, "secret": rotated}
	mustDo(t, p, "PUT", "/api/v1/jobs/settle", spec, http.StatusOK, nil, admin...)
	mustDo(t, p, "POST", "/api/v1/jobs", job("other", "@daily", 1, recv.URL), http.StatusCreated, nil, admin...)
	mustDo(t, p, "POST", "/api/v1/jobs/settle/disable", nil, http.StatusForbidden, nil, "Authorization", "Bearer "+viewerToken)
	for range 25 { // past the page's 50 entries
		mustDo(t, p, "POST", "/api/v1/jobs/other/disable", nil, http.StatusOK, nil, admin...)
		mustDo(t, p, "POST", "/api/v1/jobs/other/enable", nil, http.StatusOK, nil, admin...)
	}
	const entries = 2 + 1 + 1 + 50

	b := newBrowser(t, p.URL("/"))
	b.do("open the console", 30*time.Second, chromedp.Navigate(p.URL("/")), chromedp.WaitVisible(chromedp.ID("signin-token")))
	b.do("sign in as a viewer", 30*time.Second, chromedp.SendKeys(chromedp.ID("signin-token"), viewerToken),
		chromedp.Click(chromedp.CSS(`#signin-form button[type="submit"]`)))
	b.waitText("#who", "viewer", 30*time.Second)
	b.route("#/audit", "Audit trail")
	rows := `#audit-table tbody tr[data-key]`
	b.waitFor("the first page", fmt.Sprintf(`document.querySelectorAll(%s).length === 50`, js(rows)), 30*time.Second)
	if eval[bool](b, `document.getElementById('audit-older').hidden`) {
		t.Fatal("no Older entries button with more than 50 entries")
	}
	eval[chromedp.Void](b, `document.getElementById('audit-older').click()`)
	// the sign-in page's unauthenticated whoami is a 401 the recorder folds per source per minute: its entry
	// lands whenever that minute ends, so the test counts every other entry
	ours := fmt.Sprintf(`[...document.querySelectorAll(%s)].filter((r) => !r.innerText.includes('/api/v1/auth/whoami')).length`, js(rows))
	b.waitFor("the older page", fmt.Sprintf(`%s === %d`, ours, entries), 30*time.Second)
	b.waitFor("no more pages", `document.getElementById('audit-older').hidden`, 30*time.Second)
	if n := eval[int](b, ours); n != entries {
		t.Fatalf("%d entries in the Audit page, want %d", n, entries)
	}

	// the oldest rows: the creation (its fields folded), the replacement's diff, the refused request
	row := func(i int) string { // counted from the oldest of ours (the whoami entry may land anywhere)
		return eval[string](b, fmt.Sprintf(`(() => { const rs = [...document.querySelectorAll(%s)].filter((r) => !r.innerText.includes('/api/v1/auth/whoami'));
			return rs[rs.length - 1 - %d].innerText; })()`, js(rows), i))
	}
	if r := row(0); !strings.Contains(r, "job.create") || !strings.Contains(r, "settle") || !strings.Contains(r, "ops") ||
		!strings.Contains(r, "201") || !strings.Contains(r, "fields") {
		t.Fatalf("the creation's row: %q", r)
	}
	if r := row(1); !strings.Contains(r, "job.replace") || !strings.Contains(r, "cron: @yearly → @monthly") || !strings.Contains(r, "webhook.secret changed") {
		t.Fatalf("the replacement's row: %q", r)
	}
	if r := row(3); !strings.Contains(r, "auth.denied") || !strings.Contains(r, "grafana") || !strings.Contains(r, "403") ||
		!strings.Contains(r, "POST /api/v1/jobs/settle/disable") {
		t.Fatalf("the refused request's row: %q", r)
	}
	// the creation's folded fields open, and still no secret anywhere in the page
	eval[chromedp.Void](b, `document.querySelectorAll('#audit-table details').forEach((d) => { d.open = true; })`)
	page := eval[string](b, `document.documentElement.outerHTML`)
	if !strings.Contains(page, "webhook.secret") || strings.Contains(page, "whsec_") || strings.Contains(page, strings.TrimPrefix(testSecret, "whsec_")[:12]) ||
		strings.Contains(page, "QUJDQUJD") || strings.Contains(page, adminToken) {
		t.Fatal("a secret or a token in the Audit page")
	}

	// filters: a job, an action, an actor
	filter := func(job, action, actor string, want int) {
		t.Helper()
		eval[chromedp.Void](b, fmt.Sprintf(`(() => { const f = document.getElementById('audit-filter');
			f.elements.job.value = %s; f.elements.action.value = %s; f.elements.actor.value = %s;
			f.querySelector('[type=submit]').click(); })()`, js(job), js(action), js(actor)))
		b.waitFor(fmt.Sprintf("%d rows for job %q action %q actor %q", want, job, action, actor),
			fmt.Sprintf(`document.querySelectorAll(%s).length === %d`, js(rows), want), 30*time.Second)
	}
	filter("settle", "", "", 2) // the refused request names no job
	filter("", "job.replace", "", 1)
	filter("", "", "grafana", 1)
	filter("other", "job.disable", "ops", 25)
	filter("nothing", "", "", 0)
	b.waitText("#audit-table tbody", "No entries.", 30*time.Second)
	if probs := b.problems(); len(probs) > 0 {
		t.Fatalf("console problems: %v", probs)
	}
}
