package wfalert

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver/internal/alert"
	"github.com/ejserver/ejserver/internal/notify"
	"github.com/ejserver/ejserver/internal/workflow"
)

// TellWithin bounds how late an event is still told: a run that ended (or passed its threshold) longer ago
// than this when a peer first sees it is not told. It is half the fences' age (FenceAge), so an event told
// once is never told again after its fence is dropped.
const TellWithin = 30 * time.Minute

// FenceAge is how long an event's fence is kept.
const FenceAge = time.Hour

// End is the event a run's end raises: WORKFLOW_FAILED for a FAILED run, RECOVERED for a SUCCEEDED one
// (ok false for an active, cancelled or skipped run), and the key of its fence.
func End(r workflow.Run, consoleBase string) (e alert.Event, key string, ok bool) {
	var k notify.Kind
	switch r.State {
	case workflow.RunFailed:
		k = notify.KindWorkflowFailed
	case workflow.RunSucceeded:
		k = notify.KindRecovered
	default:
		return alert.Event{}, "", false
	}
	return event(r, k, consoleBase), FenceKey(r.EndedAt, r, k), true
}

// LongDue is when an active run's attempt passes threshold: from the run's start, for a retry from its first
// node fire of the attempt (zero: the run is not going, or no threshold).
func LongDue(r workflow.Run, threshold time.Duration) time.Time {
	if threshold <= 0 || r.State != workflow.RunRunning {
		return time.Time{}
	}
	from := r.StartedAt
	if r.Attempt > 1 {
		from = time.Time{}
		for _, n := range r.Nodes {
			if n.Attempt == r.Attempt && !n.FiredAt.IsZero() && (from.IsZero() || n.FiredAt.Before(from)) {
				from = n.FiredAt
			}
		}
	}
	if from.IsZero() {
		return time.Time{}
	}
	return from.Add(threshold)
}

// Long is the RUNNING_LONG event of an active run at now, and its fence key (ok false: not due, or due longer
// ago than TellWithin).
func Long(r workflow.Run, threshold time.Duration, now time.Time, consoleBase string) (e alert.Event, key string, ok bool) {
	due := LongDue(r, threshold)
	if due.IsZero() || now.Before(due) || now.Sub(due) > TellWithin {
		return alert.Event{}, "", false
	}
	e = event(r, notify.KindRunningLong, consoleBase)
	e.Detail = fmt.Sprintf("running since %s", due.Add(-threshold).UTC().Format(time.RFC3339))
	return e, FenceKey(due, r, notify.KindRunningLong), true
}

// FenceKey names an event's fence: the event's time in Unix milliseconds first (old fences are dropped by
// it), then the run, its attempt and the event.
func FenceKey(at time.Time, r workflow.Run, k notify.Kind) string {
	return fmt.Sprintf("%d-%s-%d-%s", at.UnixMilli(), r.ID, r.Attempt, k)
}

// FenceTime is the time a fence key starts with (false: not a fence key).
func FenceTime(key string) (time.Time, bool) {
	ms, _, ok := strings.Cut(key, "-")
	v, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(v), true
}

// ConsoleLink is the console's page of a run ("" without a base URL).
func ConsoleLink(base, wf, id string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/#/workflows/" + url.PathEscape(wf) + "/runs/" + url.PathEscape(id)
}

func event(r workflow.Run, k notify.Kind, consoleBase string) alert.Event {
	info := &notify.WorkflowRun{Name: r.Workflow, RunID: r.ID, Attempt: r.Attempt, State: string(r.State)}
	for _, n := range r.Nodes {
		if n.State == workflow.NodeFailed && len(info.FailedNodes) < notify.MaxSamples {
			info.FailedNodes = append(info.FailedNodes, notify.FailedNode{Node: n.Name, Job: n.Job, Fire: n.Fire, Error: n.Error})
		}
	}
	return alert.Event{Type: alert.Single, Kind: k, Fire: r.ID, ScheduledAt: r.ScheduledAt, Workflow: info,
		ConsoleURL: ConsoleLink(consoleBase, r.Workflow, r.ID)}
}
