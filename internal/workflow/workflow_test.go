package workflow

import (
	"errors"
	"strings"
	"testing"

	"github.com/ejserver/ejserver"
)

func edge(node string, on On) Edge { return Edge{Node: node, On: on} }

func wf(nodes ...Node) Workflow {
	w := Workflow{Name: "wf", Nodes: nodes}
	w.Normalize()
	return w
}

func n(name, job string, after ...Edge) Node { return Node{Name: name, Job: job, After: after} }

func TestValidate(t *testing.T) {
	t.Parallel()
	jobs := func(name string) bool { return name != "missing" }
	tests := []struct {
		name      string
		w         Workflow
		wantField string
		wantText  string
	}{
		{name: "diamond", w: wf(n("a", "j"), n("b", "j", edge("a", "")), n("c", "j", edge("a", "")), n("d", "j", edge("b", ""), edge("c", "")))},
		{name: "failure branch", w: wf(n("a", "j"), n("ok", "j", edge("a", OnSuccess)), n("bad", "j", edge("a", OnFailure)), n("end", "j", edge("ok", OnAlways), edge("bad", OnAlways)))},
		{name: "cycle", w: wf(n("a", "j", edge("c", "")), n("b", "j", edge("a", "")), n("c", "j", edge("b", ""))), wantField: "nodes[", wantText: "is on a cycle"},
		{name: "self", w: wf(n("a", "j", edge("a", ""))), wantField: "nodes[0].after[0].node", wantText: "waits for itself"},
		{name: "missing job", w: wf(n("a", "j"), n("b", "missing", edge("a", ""))), wantField: "nodes[1].job", wantText: `node "b": job "missing" not found`},
		{name: "no job", w: wf(n("a", "")), wantField: "nodes[0].job", wantText: "names no job"},
		{name: "unknown parent", w: wf(n("a", "j", edge("x", ""))), wantField: "nodes[0].after[0].node", wantText: `node "x"`},
		{name: "bad node name", w: wf(n("a b", "j")), wantField: "nodes[0].name", wantText: `node "a b"`},
		{name: "twice named", w: wf(n("a", "j"), n("a", "j")), wantField: "nodes[1].name", wantText: "named twice"},
		{name: "bad on", w: wf(n("a", "j"), n("b", "j", edge("a", "sometimes"))), wantField: "nodes[1].after[0].on", wantText: "sometimes"},
		{name: "contradiction", w: wf(n("a", "j"), n("b", "j", edge("a", OnSuccess), edge("a", OnFailure))), wantField: "nodes[1].after[1]", wantText: "could never run"},
		{name: "unreachable", w: wf(n("x", "j"), n("s", "j", edge("x", OnSuccess)), n("f", "j", edge("x", OnFailure)), n("both", "j", edge("s", OnSuccess), edge("f", OnSuccess))), wantField: "nodes[3].after", wantText: `node "both" can never run`},
		{name: "unreachable below", w: wf(n("x", "j"), n("s", "j", edge("x", OnSuccess)), n("f", "j", edge("x", OnFailure)), n("both", "j", edge("s", OnAlways), edge("f", OnFailure)), n("z", "j", edge("both", OnSuccess), edge("s", OnSuccess))), wantField: "nodes[4].after", wantText: `"z"`},
		{name: "always reaches", w: wf(n("x", "j"), n("s", "j", edge("x", OnSuccess)), n("f", "j", edge("x", OnFailure)), n("both", "j", edge("s", OnAlways), edge("f", OnAlways)))},
		{name: "no nodes", w: wf(), wantField: "nodes", wantText: "at least one"},
		{name: "bad cron", w: Workflow{Name: "wf", Cron: "nope", Overlap: OverlapSkip, Nodes: []Node{n("a", "j")}}, wantField: "cron"},
		{name: "bad overlap", w: Workflow{Name: "wf", Overlap: "queue", Nodes: []Node{n("a", "j")}}, wantField: "overlap"},
		{name: "bad name", w: Workflow{Name: "", Overlap: OverlapSkip, Nodes: []Node{n("a", "j")}}, wantField: "name"},
		{name: "calendars", w: Workflow{Name: "wf", Cron: "@daily", Overlap: OverlapSkip, ExcludeCalendars: []string{"cn-holidays"}, IncludeCalendars: []string{"workdays"}, Nodes: []Node{n("a", "j")}}},
		{name: "calendar twice", w: Workflow{Name: "wf", Cron: "@daily", Overlap: OverlapSkip, ExcludeCalendars: []string{"h", "h"}, Nodes: []Node{n("a", "j")}}, wantField: "excludeCalendars[1]", wantText: "named twice"},
		{name: "calendar both", w: Workflow{Name: "wf", Cron: "@daily", Overlap: OverlapSkip, ExcludeCalendars: []string{"h"}, IncludeCalendars: []string{"h"}, Nodes: []Node{n("a", "j")}}, wantField: "includeCalendars", wantText: "excluded too"},
		{name: "calendar bad name", w: Workflow{Name: "wf", Cron: "@daily", Overlap: OverlapSkip, IncludeCalendars: []string{"a b"}, Nodes: []Node{n("a", "j")}}, wantField: "includeCalendars[0]", wantText: "not a calendar name"},
		{name: "calendar without cron", w: Workflow{Name: "wf", Overlap: OverlapSkip, IncludeCalendars: []string{"h"}, Nodes: []Node{n("a", "j")}}, wantField: "includeCalendars", wantText: "without a cron"},
		{name: "alerts", w: Workflow{Name: "wf", Overlap: OverlapSkip, Alerts: ejserver.Alerts{RunningLongerThanSeconds: 60, Rules: []ejserver.AlertRule{{On: []string{"WORKFLOW_FAILED", "RUNNING_LONG", "RECOVERED"}, Channels: []string{"ops"}}}}, Nodes: []Node{n("a", "j")}}},
		{name: "alerts job event", w: Workflow{Name: "wf", Overlap: OverlapSkip, Alerts: ejserver.Alerts{Rules: []ejserver.AlertRule{{On: []string{"FIRE_FAILED"}, Channels: []string{"ops"}}}}, Nodes: []Node{n("a", "j")}}, wantField: "alerts.rules[0].on[0]", wantText: "use one of WORKFLOW_FAILED, RUNNING_LONG, RECOVERED"},
		{name: "alerts no threshold", w: Workflow{Name: "wf", Overlap: OverlapSkip, Alerts: ejserver.Alerts{Rules: []ejserver.AlertRule{{On: []string{"RUNNING_LONG"}, Channels: []string{"ops"}}}}, Nodes: []Node{n("a", "j")}}, wantField: "alerts.rules[0].on[0]", wantText: "needs alerts.runningLongerThanSeconds"},
		{name: "alerts no channel", w: Workflow{Name: "wf", Overlap: OverlapSkip, Alerts: ejserver.Alerts{Rules: []ejserver.AlertRule{{On: []string{"WORKFLOW_FAILED"}}}}, Nodes: []Node{n("a", "j")}}, wantField: "alerts.rules[0].channels", wantText: "names no channel"},
		{name: "alerts late", w: Workflow{Name: "wf", Overlap: OverlapSkip, Alerts: ejserver.Alerts{LateAfterMs: 5}, Nodes: []Node{n("a", "j")}}, wantField: "alerts.lateAfterMs", wantText: "does not apply to a workflow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.w, jobs)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var e *ejserver.Error
			if !errors.As(err, &e) || e.Code != ejserver.EINVALID {
				t.Fatalf("Validate = %v, want an EINVALID error", err)
			}
			if !strings.HasPrefix(e.Field(), tt.wantField) {
				t.Fatalf("field = %q, want %q (%v)", e.Field(), tt.wantField, err)
			}
			if !strings.Contains(e.Fields[0].Message, tt.wantText) {
				t.Fatalf("message = %q, want it to say %q", e.Fields[0].Message, tt.wantText)
			}
		})
	}
}

func TestValidateCycleNamesItsNodes(t *testing.T) {
	t.Parallel()
	err := Validate(wf(n("root", "j"), n("a", "j", edge("root", ""), edge("b", "")), n("b", "j", edge("a", ""))), nil)
	var e *ejserver.Error
	if !errors.As(err, &e) {
		t.Fatalf("Validate = %v", err)
	}
	msg := e.Fields[0].Message
	if !strings.Contains(msg, "a -> b -> a") && !strings.Contains(msg, "b -> a -> b") {
		t.Fatalf("cycle message %q does not spell the cycle", msg)
	}
}
