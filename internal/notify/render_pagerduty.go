package notify

import (
	"encoding/json"
	"time"
)

// PagerDuty's limits (Events API v2): summary, dedup_key.
const (
	pagerDutySummaryMax = 1024
	pagerDutyDedupMax   = 255
)

// renderPagerDuty makes an Events API v2 event: trigger (routing_key, event_action, dedup_key, payload
// with summary, source, severity, timestamp, component, group, class and custom_details; client,
// client_url and links when the console URL is known) or, for a recovery (Resolve), resolve with the same
// dedup_key, which closes the incident the trigger opened.
func renderPagerDuty(c Channel, n Notification) (Request, error) {
	s := c.PagerDuty
	u := s.URL
	if u == "" {
		u = DefaultPagerDutyURL
	}
	dedup := truncate(n.DedupKey, pagerDutyDedupMax)
	if n.Resolve {
		b, err := json.Marshal(struct {
			RoutingKey  string `json:"routing_key"`
			EventAction string `json:"event_action"`
			DedupKey    string `json:"dedup_key"`
		}{str(s.RoutingKey), "resolve", dedup})
		if err != nil {
			return Request{}, err
		}
		return jsonRequest(u, b), nil
	}
	type payload struct {
		Summary       string         `json:"summary"`
		Source        string         `json:"source"`
		Severity      Severity       `json:"severity"`
		Timestamp     string         `json:"timestamp,omitempty"`
		Component     string         `json:"component,omitempty"`
		Group         string         `json:"group,omitempty"`
		Class         string         `json:"class,omitempty"`
		CustomDetails map[string]any `json:"custom_details,omitempty"`
	}
	type link struct {
		Href string `json:"href"`
		Text string `json:"text"`
	}
	details := map[string]any{"rule": n.Rule, "notificationId": n.ID}
	if n.Text != "" {
		details["text"] = truncate(n.Text, maxText)
	}
	if n.Counts != nil {
		details["counts"] = n.Counts
	}
	if len(n.Samples) > 0 {
		details["samples"] = n.Samples
	}
	if n.Folded > 0 {
		details["folded"] = n.Folded
	}
	if n.Partial {
		details["partial"] = true
	}
	if !n.ScheduledAt.IsZero() {
		details["scheduledAt"] = n.ScheduledAt.UTC().Format(time.RFC3339)
	}
	ev := struct {
		RoutingKey  string  `json:"routing_key"`
		EventAction string  `json:"event_action"`
		DedupKey    string  `json:"dedup_key,omitempty"`
		Payload     payload `json:"payload"`
		Client      string  `json:"client,omitempty"`
		ClientURL   string  `json:"client_url,omitempty"`
		Links       []link  `json:"links,omitempty"`
	}{
		RoutingKey: str(s.RoutingKey), EventAction: "trigger", DedupKey: dedup,
		Payload: payload{Summary: truncate(title(n), pagerDutySummaryMax), Source: "ejserver/" + n.Namespace,
			Severity: severityOf(n), Component: component(n), Group: n.Namespace, Class: string(n.Kind), CustomDetails: details},
	}
	if !n.At.IsZero() {
		ev.Payload.Timestamp = n.At.UTC().Format(time.RFC3339Nano)
	}
	if n.ConsoleURL != "" {
		ev.Client, ev.ClientURL = "ejserver", n.ConsoleURL
		ev.Links = []link{{Href: n.ConsoleURL, Text: "ejserver console"}}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return Request{}, err
	}
	return jsonRequest(u, b), nil
}

// component is PagerDuty's component: the job, or workflow/{name} for a workflow run's notification.
func component(n Notification) string {
	if n.Job == "" && n.Workflow != nil {
		return "workflow/" + n.Workflow.Name
	}
	return n.Job
}
