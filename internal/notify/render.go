package notify

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Request is one HTTP request a channel sends: what a renderer makes of a Notification.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

// Render turns n into the request channel c sends (every kind but email: see RenderEmail). now is the
// attempt's time (signatures carry it). It is pure: same input, same request.
func Render(c Channel, n Notification, now time.Time) (Request, error) {
	switch c.Kind {
	case ChannelWebhook:
		return renderWebhook(c, n, now)
	case ChannelSlack:
		return renderSlack(c, n)
	case ChannelDingTalk:
		return renderDingTalk(c, n, now)
	case ChannelWeCom:
		return renderWeCom(c, n)
	case ChannelPagerDuty:
		return renderPagerDuty(c, n)
	}
	return Request{}, fmt.Errorf("channel %s: kind %q has no HTTP request", c.Name, c.Kind)
}

// jsonRequest is a POST of a JSON body.
func jsonRequest(u string, body []byte) Request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return Request{Method: http.MethodPost, URL: u, Header: h, Body: body}
}

// severityOf is n's severity, error when unset.
func severityOf(n Notification) Severity {
	switch n.Severity {
	case SeverityCritical, SeverityError, SeverityWarning, SeverityInfo:
		return n.Severity
	}
	return SeverityError
}

// title is n's one-line heading.
func title(n Notification) string {
	t := oneLine(n.Title)
	if t == "" {
		t = string(n.Kind)
		if n.Job != "" {
			t += ": job " + n.Job
		}
	}
	if n.Partial {
		t += " (so far)"
	}
	return t
}

// maxText bounds the notification's text in every format (bytes).
const maxText = 4000

// lines are n's details as plain-text lines: its text, counts, samples, the folded repeats and a link.
func lines(n Notification) []string {
	var out []string
	if t := truncate(strings.TrimSpace(n.Text), maxText); t != "" {
		out = append(out, strings.Split(t, "\n")...)
	}
	if c := n.Counts; c != nil {
		s := fmt.Sprintf("Items: %d, succeeded %d, failed %d", c.Items, c.Succeeded, c.Failed)
		if c.Running > 0 {
			s += fmt.Sprintf(", running %d", c.Running)
		}
		if c.Lost > 0 {
			s += fmt.Sprintf(", lost %d", c.Lost)
		}
		out = append(out, s)
	}
	for i, s := range n.Samples {
		if i == MaxSamples {
			break
		}
		out = append(out, "- "+sampleLine(s))
	}
	if n.Folded > 0 {
		out = append(out, fmt.Sprintf("(%d earlier notification(s) of this rule folded into this one)", n.Folded))
	}
	meta := "Namespace " + n.Namespace
	if n.Job != "" {
		meta += ", job " + n.Job
	}
	if w := n.Workflow; w != nil {
		meta += ", workflow " + w.Name + ", run " + w.RunID
	}
	if !n.ScheduledAt.IsZero() {
		meta += ", fire " + n.ScheduledAt.UTC().Format(time.RFC3339)
	}
	meta += ", " + string(n.Kind) + ", " + string(severityOf(n))
	out = append(out, meta)
	if n.ConsoleURL != "" {
		out = append(out, n.ConsoleURL)
	}
	return out
}

func sampleLine(s Sample) string {
	var b strings.Builder
	b.WriteString("item " + strconv.Itoa(s.Item) + ": " + s.Outcome)
	if s.Status != 0 {
		b.WriteString(" (HTTP " + strconv.Itoa(s.Status) + ")")
	}
	if s.Instance != "" {
		b.WriteString(" on " + s.Instance)
	}
	if e := oneLine(s.Error); e != "" {
		b.WriteString(": " + truncate(e, 200))
	}
	return b.String()
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", " ")), " ")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + "…"
}
