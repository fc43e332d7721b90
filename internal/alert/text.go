package alert

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejserver/ejserver/internal/notify"
)

// notification builds the message of one rule for one event.
func (p Policy) notification(r Rule, k notify.Kind, e Event, s State, now time.Time) notify.Notification {
	items := e.Items
	partial := e.Type == FirePartial
	if e.Type != Single && k != notify.KindRecovered {
		items = s.untold(e) // a partial told some already: the end tells the rest
	}
	n := notify.Notification{
		ID:   notificationID(p.DedupKey(r.Name), string(k), string(e.Type), e.Fire, e.ScheduledAt.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano)),
		Kind: k, Severity: severity(k), At: now, Namespace: p.Namespace, Job: p.Job, Rule: r.Name,
		DedupKey: p.DedupKey(r.Name), Resolve: k == notify.KindRecovered, ScheduledAt: e.ScheduledAt,
		Partial: partial,
	}
	if e.Type != Single {
		c := e.Counts
		n.Counts = &c
	}
	n.Samples = samples(items)
	if p.Workflow != "" {
		n.Workflow, n.ConsoleURL = e.Workflow, e.ConsoleURL
		n.Title, n.Text = p.workflowWords(k, e)
		return n
	}
	n.Title, n.Text = p.words(k, e, n, len(items))
	return n
}

// workflowWords are the title and text of a workflow's notification: the run, its failed nodes and why.
func (p Policy) workflowWords(k notify.Kind, e Event) (title, text string) {
	wf := fmt.Sprintf("workflow %q", p.Workflow)
	run := ""
	if w := e.Workflow; w != nil {
		run = w.RunID
	}
	var b strings.Builder
	switch k {
	case notify.KindWorkflowFailed:
		title = fmt.Sprintf("%s: run %s failed", wf, run)
		if w := e.Workflow; w != nil && len(w.FailedNodes) > 0 {
			names := make([]string, len(w.FailedNodes))
			for i, f := range w.FailedNodes {
				names[i] = f.Node
			}
			title = fmt.Sprintf("%s: run %s failed at node %s", wf, run, strings.Join(names, ", "))
		}
	case notify.KindRunningLong:
		title = fmt.Sprintf("%s: run %s still runs after %s (left running)", wf, run, p.RunningLonger)
	case notify.KindRecovered:
		title = fmt.Sprintf("%s recovered: run %s succeeded", wf, run)
	default:
		title = fmt.Sprintf("%s: %s", wf, k)
	}
	if w := e.Workflow; w != nil {
		fmt.Fprintf(&b, "run %s (attempt %d): %s\n", w.RunID, w.Attempt, w.State)
		for _, f := range w.FailedNodes {
			fmt.Fprintf(&b, "node %s (job %s) failed", f.Node, f.Job)
			if f.Error != "" {
				fmt.Fprintf(&b, ": %s", f.Error)
			}
			b.WriteString("\n")
		}
	}
	if e.Detail != "" {
		b.WriteString(e.Detail)
	}
	return title, strings.TrimRight(b.String(), "\n")
}

// samples returns at most notify.MaxSamples of items, lowest item first.
func samples(items []notify.Sample) []notify.Sample {
	if len(items) == 0 {
		return nil
	}
	out := slices.Clone(items)
	slices.SortFunc(out, func(a, b notify.Sample) int { return a.Item - b.Item })
	if len(out) > notify.MaxSamples {
		out = out[:notify.MaxSamples]
	}
	return out
}

func severity(k notify.Kind) notify.Severity {
	switch k {
	case notify.KindFailedFiresInARow, notify.KindNoInstance:
		return notify.SeverityCritical
	case notify.KindItemFailed, notify.KindFireFailed, notify.KindLeaseExpired, notify.KindWorkflowFailed:
		return notify.SeverityError
	case notify.KindRecovered, notify.KindTest:
		return notify.SeverityInfo
	}
	return notify.SeverityWarning
}

func (p Policy) words(k notify.Kind, e Event, n notify.Notification, concerned int) (title, text string) {
	job := fmt.Sprintf("job %q", p.Job)
	fire := ""
	if !e.ScheduledAt.IsZero() {
		fire = " (fire of " + e.ScheduledAt.UTC().Format(time.RFC3339) + ")"
	}
	var b strings.Builder
	switch k {
	case notify.KindRecovered:
		title = fmt.Sprintf("%s recovered: every item of a fire succeeded", job)
	case notify.KindFailedFiresInARow:
		title = fmt.Sprintf("%s failed %d fires in a row", job, p.FailedFiresInARow)
	case notify.KindFireFailed, notify.KindItemFailed:
		c := e.Counts
		title = fmt.Sprintf("%s: %d of %d items failed%s", job, c.Failed+c.Lost, c.Items, fire)
		if n.Partial {
			title = fmt.Sprintf("%s: %d items failed so far, %d still running%s", job, concerned, c.Running, fire)
		}
	case notify.KindMisfire:
		title = fmt.Sprintf("%s misfired: an item was still running at its fire time", job)
	case notify.KindFailover:
		title = fmt.Sprintf("%s failed over: a survivor re-runs items of a vanished peer", job)
	case notify.KindLate:
		title = fmt.Sprintf("%s is late: items left more than %s after the scheduled time", job, p.LateAfter)
	case notify.KindFireSkipped:
		title = fmt.Sprintf("%s skipped a fire", job)
	case notify.KindLeaseExpired:
		title = fmt.Sprintf("%s: an accepted item's lease ran out", job)
	case notify.KindRunningLong:
		title = fmt.Sprintf("%s: an item still runs after %s (left running)", job, p.RunningLonger)
	case notify.KindNoInstance:
		title = fmt.Sprintf("%s has no live instance at its fire time", job)
	default:
		title = fmt.Sprintf("%s: %s", job, k)
	}
	if e.Detail != "" {
		b.WriteString(e.Detail)
		b.WriteString("\n")
	}
	if c := n.Counts; c != nil {
		fmt.Fprintf(&b, "items %d: %d succeeded, %d failed", c.Items, c.Succeeded, c.Failed)
		if c.Lost > 0 {
			fmt.Fprintf(&b, ", %d lost", c.Lost)
		}
		if c.Running > 0 {
			fmt.Fprintf(&b, ", %d running", c.Running)
		}
		b.WriteString("\n")
	}
	for _, s := range n.Samples {
		fmt.Fprintf(&b, "item %d: %s", s.Item, s.Outcome)
		if s.Status != 0 {
			fmt.Fprintf(&b, " (HTTP %d)", s.Status)
		}
		if s.Error != "" {
			fmt.Fprintf(&b, ": %s", s.Error)
		}
		b.WriteString("\n")
	}
	if concerned > len(n.Samples) {
		fmt.Fprintf(&b, "... and %d more\n", concerned-len(n.Samples))
	}
	return title, strings.TrimRight(b.String(), "\n")
}
