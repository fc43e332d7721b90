// Package notify delivers alert notifications to named, cluster-wide channels (webhook, Slack, DingTalk,
// WeCom, PagerDuty, email). It decides nothing about when to alert: internal/alert's rules do, and hand
// each decision here as a Notification. Delivery is queued, retried with back-off, bounded and measured,
// and never blocks the caller (dispatch).
package notify

import "time"

// Kind is what happened: the event a rule matched (the `on` values of a job's alert rules).
type Kind string

// The event kinds. The strings are the API's values of a rule's `on` list.
const (
	KindItemFailed        Kind = "ITEM_FAILED"           // an item failed after its last attempt
	KindFireFailed        Kind = "FIRE_FAILED"           // a fire's items did not all succeed
	KindFailedFiresInARow Kind = "FAILED_FIRES_IN_A_ROW" // failedFiresInARow fires in a row failed
	KindMisfire           Kind = "MISFIRE"               // a fire was missed (caught up or not)
	KindFailover          Kind = "FAILOVER"              // items of a dead peer were re-run by a survivor
	KindLate              Kind = "LATE"                  // a fire left later than lateAfterMs
	KindFireSkipped       Kind = "FIRE_SKIPPED"          // a fire was skipped (no instance, clock difference, disabled server)
	KindLeaseExpired      Kind = "LEASE_EXPIRED"         // an async item's lease ran out
	KindRunningLong       Kind = "RUNNING_LONG"          // an item still running past runningLongerThanSeconds
	KindNoInstance        Kind = "NO_INSTANCE"           // no live instance of the job at its fire time
	KindRecovered         Kind = "RECOVERED"             // the next fire succeeded after one of the above
	KindTest              Kind = "TEST"                  // POST /api/v1/channels/{name}/test
	// KindWorkflowFailed: a workflow run ended FAILED (a workflow's rules only: not in Kinds, which are a
	// job's; a workflow's rules may also be on RUNNING_LONG and RECOVERED).
	KindWorkflowFailed Kind = "WORKFLOW_FAILED"
)

// Kinds lists every kind a rule may name, in documentation order.
var Kinds = []Kind{KindItemFailed, KindFireFailed, KindFailedFiresInARow, KindMisfire, KindFailover, KindLate,
	KindFireSkipped, KindLeaseExpired, KindRunningLong, KindNoInstance, KindRecovered}

// Severity orders notifications for channels that have one (PagerDuty's severity, a chat message's colour).
type Severity string

// The severities, PagerDuty's names.
const (
	SeverityCritical Severity = "critical"
	SeverityError    Severity = "error"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Notification is one message to a person: already folded (one per fire, not per item; repeats within a
// rule's quiet period as a digest) and decided by exactly one peer. Channels render it in their own format.
type Notification struct {
	// ID is unique per notification: the webhook channel's webhook-id, the email's Message-ID, the history key.
	ID       string    `json:"id"`
	Kind     Kind      `json:"kind"`
	Severity Severity  `json:"severity"`
	At       time.Time `json:"at"` // when it was decided
	// Namespace is the cluster's ZooKeeper namespace, so one channel shared by clusters can tell them apart.
	Namespace string `json:"namespace"`
	Job       string `json:"job,omitempty"`
	// Rule names the rule that matched ("job/{job}/{index}" or "default/{index}").
	Rule string `json:"rule"`
	// DedupKey is the same for an incident's trigger and its recovery (PagerDuty's dedup_key): job + rule.
	DedupKey string `json:"dedupKey"`
	// Resolve is set on a recovery: it closes the incident that DedupKey opened.
	Resolve bool `json:"resolve,omitempty"`
	// ScheduledAt is the fire's scheduled time (zero for events not tied to a fire).
	ScheduledAt time.Time `json:"scheduledAt,omitzero"`
	// Title is one line, for a subject or a chat message's heading; Text a few lines of plain text.
	Title string `json:"title"`
	Text  string `json:"text"`
	// Counts of the fire's items, when the notification is about a fire.
	Counts *Counts `json:"counts,omitempty"`
	// Samples are a few of the items concerned (at most MaxSamples), so a 2,000-item failure stays one message.
	Samples []Sample `json:"samples,omitempty"`
	// Folded counts the earlier events of the same rule folded into this digest by the quiet period.
	Folded int `json:"folded,omitempty"`
	// Partial is set on a fire's early message (failures so far, other items still running).
	Partial bool `json:"partial,omitempty"`
	// ConsoleURL links to the job or execution in the console when the peer knows its advertised URL.
	ConsoleURL string `json:"consoleUrl,omitempty"`
	// Workflow is set on a workflow run's notification (Job is then empty).
	Workflow *WorkflowRun `json:"workflow,omitempty"`
}

// WorkflowRun names the workflow run a notification is about, and its failed nodes.
type WorkflowRun struct {
	Name    string `json:"name"`
	RunID   string `json:"runId"`
	Attempt int    `json:"attempt"`
	State   string `json:"state"`
	// FailedNodes are the run's nodes that failed (at most MaxSamples), with why.
	FailedNodes []FailedNode `json:"failedNodes,omitempty"`
}

// FailedNode is a workflow node that failed in a run.
type FailedNode struct {
	Node  string `json:"node"`
	Job   string `json:"job"`
	Fire  string `json:"fire,omitempty"`
	Error string `json:"error,omitempty"`
}

// MaxSamples bounds Notification.Samples.
const MaxSamples = 10

// Counts are a fire's items by outcome.
type Counts struct {
	Items     int `json:"items"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Running   int `json:"running,omitempty"`
	Lost      int `json:"lost,omitempty"`
}

// Sample is one item in a notification.
type Sample struct {
	Item        int    `json:"item"`
	ExecutionID string `json:"executionId,omitempty"`
	Instance    string `json:"instance,omitempty"`
	Outcome     string `json:"outcome"` // FAILED, EXPIRED, LOST, RUNNING, SUCCEEDED...
	Status      int    `json:"status,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Deliverer sends notifications to named channels. Deliver queues and returns at once: a slow or hanging
// channel never holds the caller. Unknown channel names are counted and logged, not an error to the caller.
type Deliverer interface {
	Deliver(n Notification, channels []string)
}
