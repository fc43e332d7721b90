package wfalert

import (
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/alert"
	"github.com/ejserver/ejserver/internal/notify"
	"github.com/ejserver/ejserver/internal/workflow"
)

var t0 = time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)

func failedRun() workflow.Run {
	return workflow.Run{ID: "01a20ebd-aaaa", Workflow: "nightly", State: workflow.RunFailed, Attempt: 1,
		ScheduledAt: t0, StartedAt: t0, EndedAt: t0.Add(time.Minute),
		Nodes: []workflow.NodeRun{
			{Node: workflow.Node{Name: "a", Job: "ja"}, State: workflow.NodeSucceeded},
			{Node: workflow.Node{Name: "b", Job: "jb"}, State: workflow.NodeFailed, Fire: "f1", Error: "item 1: FAILED: status 500"},
			{Node: workflow.Node{Name: "c", Job: "jc"}, State: workflow.NodeSkipped},
		}}
}

func TestEnd(t *testing.T) {
	tests := []struct {
		name  string
		state workflow.RunState
		kind  notify.Kind
		ok    bool
	}{
		{"failed", workflow.RunFailed, notify.KindWorkflowFailed, true},
		{"succeeded", workflow.RunSucceeded, notify.KindRecovered, true},
		{"cancelled", workflow.RunCancelled, "", false},
		{"skipped", workflow.RunSkipped, "", false},
		{"running", workflow.RunRunning, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := failedRun()
			r.State = tt.state
			e, key, ok := End(r, "http://10.0.0.7:8080/")
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			if e.Kind != tt.kind || e.Type != alert.Single {
				t.Fatalf("event %+v", e)
			}
			if want := "1795485660000-01a20ebd-aaaa-1-" + string(tt.kind); key != want {
				t.Fatalf("key %q, want %q", key, want)
			}
			if e.ConsoleURL != "http://10.0.0.7:8080/#/workflows/nightly/runs/01a20ebd-aaaa" {
				t.Fatalf("link %q", e.ConsoleURL)
			}
			if len(e.Workflow.FailedNodes) != 1 || e.Workflow.FailedNodes[0].Node != "b" || e.Workflow.FailedNodes[0].Job != "jb" {
				t.Fatalf("failed nodes %+v", e.Workflow.FailedNodes)
			}
		})
	}
}

func TestLong(t *testing.T) {
	r := failedRun()
	r.State, r.EndedAt = workflow.RunRunning, time.Time{}
	h := time.Hour
	if _, _, ok := Long(r, h, t0.Add(59*time.Minute), ""); ok {
		t.Fatal("told before the threshold")
	}
	e, key, ok := Long(r, h, t0.Add(61*time.Minute), "")
	if !ok || e.Kind != notify.KindRunningLong || !strings.HasPrefix(key, "1795489200000-") {
		t.Fatalf("%v %q %+v", ok, key, e)
	}
	if _, _, ok := Long(r, h, t0.Add(h+TellWithin+time.Second), ""); ok {
		t.Fatal("told after TellWithin: its fence may be gone")
	}
	if _, _, ok := Long(r, 0, t0.Add(2*h), ""); ok {
		t.Fatal("told without a threshold")
	}
	// a retry counts from its first node fire of the attempt
	r.Attempt = 2
	r.Nodes[1].Attempt, r.Nodes[1].FiredAt = 2, t0.Add(3*h)
	if got := LongDue(r, h); !got.Equal(t0.Add(4 * h)) {
		t.Fatalf("due %v", got)
	}
}

func TestFenceTime(t *testing.T) {
	r := failedRun()
	at, ok := FenceTime(FenceKey(r.EndedAt, r, notify.KindWorkflowFailed))
	if !ok || !at.Equal(r.EndedAt) {
		t.Fatalf("%v %v", at, ok)
	}
	if _, ok := FenceTime("x-1"); ok {
		t.Fatal("not a fence key")
	}
}

// TestDecideOncePerIncident: the job's Decide, on a workflow's policy: a failed run opens an incident, the
// next failure is no news within the quiet period, a success resolves it with the same dedup key.
func TestDecideOncePerIncident(t *testing.T) {
	p := alert.WorkflowPolicy("ns", "nightly", ejserver.Alerts{Rules: []ejserver.AlertRule{
		{On: []string{"WORKFLOW_FAILED", "RECOVERED"}, Channels: []string{"ops"}, QuietPeriodSeconds: 600}}})
	fail, _, _ := End(failedRun(), "")
	st, out := alert.Decide(p, alert.State{}, fail, t0)
	if len(out) != 1 || out[0].Notification.Kind != notify.KindWorkflowFailed {
		t.Fatalf("first failure: %+v", out)
	}
	n := out[0].Notification
	if n.Job != "" || n.Workflow == nil || n.Workflow.RunID != "01a20ebd-aaaa" || n.DedupKey != "ns/workflow/nightly/workflow/0" ||
		!strings.Contains(n.Title, "failed at node b") || !strings.Contains(n.Text, "item 1: FAILED: status 500") {
		t.Fatalf("notification %+v", n)
	}
	st, out = alert.Decide(p, st, fail, t0.Add(time.Minute))
	if len(out) != 0 {
		t.Fatalf("second failure in the quiet period: %+v", out)
	}
	ok := failedRun()
	ok.State = workflow.RunSucceeded
	rec, _, _ := End(ok, "")
	_, out = alert.Decide(p, st, rec, t0.Add(2*time.Minute))
	if len(out) != 1 || !out[0].Notification.Resolve || out[0].Notification.DedupKey != n.DedupKey || out[0].Notification.Folded != 1 {
		t.Fatalf("recovery: %+v", out)
	}
}

// FuzzFenceTime: any key parses or is refused without panicking, and a key FenceKey made of a time after 1970
// gives its time back.
func FuzzFenceTime(f *testing.F) {
	f.Add("1795485660000-01a20ebd-aaaa-1-WORKFLOW_FAILED", int64(1795485660000))
	f.Add("x-1", int64(0))
	f.Add("", int64(-5))
	f.Fuzz(func(t *testing.T, key string, ms int64) {
		_, _ = FenceTime(key)
		if ms < 0 {
			return // keys are of runs' times, after 1970: a negative one would start with the separator
		}
		at := time.UnixMilli(ms)
		got, ok := FenceTime(FenceKey(at, workflow.Run{ID: "r", Attempt: 1}, notify.KindRunningLong))
		if !ok || !got.Equal(at) {
			t.Fatalf("FenceTime(FenceKey(%v)) = %v, %v", at, got, ok)
		}
	})
}
