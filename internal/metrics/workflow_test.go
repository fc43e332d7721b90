package metrics

import (
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/workflow"
	"github.com/ejserver/ejserver/internal/workflow/engine"
)

var _ engine.Observer = (*Metrics)(nil)

func TestWorkflowMetrics(t *testing.T) {
	t.Parallel()
	m := New(Config{})
	m.RunStarted("nightly")
	m.RunStarted("nightly")
	m.RunStarted("hourly")
	m.NodeFired("nightly", 40*time.Millisecond)
	m.NodeFired("nightly", 2*time.Second)
	m.NodeFired("nightly", -time.Second) // a clock step back: counted as no wait
	m.RunEnded("nightly", workflow.RunSucceeded, 90*time.Second)
	m.RunEnded("nightly", workflow.RunFailed, 30*time.Second)
	m.RunEnded("hourly", workflow.RunFailed, time.Second)
	m.RunEnded("hourly", workflow.RunSkipped, 0)
	m.RunSkipped("hourly", engine.SkipCalendar)
	m.RunEnded("hourly", workflow.RunSkipped, 0)
	m.RunSkipped("hourly", engine.SkipCalendar)
	m.RunEnded("nightly", workflow.RunSkipped, 0)
	m.RunSkipped("nightly", engine.SkipOverlap)
	fams := gather(t, m)

	want(t, fams, "ejserver_workflow_runs_started_total", l("workflow", "nightly"), 2)
	want(t, fams, "ejserver_workflow_runs_started_total", l("workflow", "hourly"), 1)
	want(t, fams, "ejserver_workflow_runs_ended_total", l("workflow", "nightly", "outcome", "SUCCEEDED"), 1)
	want(t, fams, "ejserver_workflow_runs_ended_total", l("workflow", "nightly", "outcome", "FAILED"), 1)
	want(t, fams, "ejserver_workflow_runs_ended_total", l("workflow", "hourly", "outcome", "FAILED"), 1)
	want(t, fams, "ejserver_workflow_runs_ended_total", l("workflow", "hourly", "outcome", "SKIPPED"), 2)
	want(t, fams, "ejserver_workflow_runs_skipped_total", l("workflow", "hourly", "reason", "calendar"), 2)
	want(t, fams, "ejserver_workflow_runs_skipped_total", l("workflow", "nightly", "reason", "overlap"), 1)
	want(t, fams, "ejserver_workflow_run_duration_seconds", l("workflow", "nightly"), 3)
	want(t, fams, "ejserver_workflow_node_start_delay_seconds", l("workflow", "nightly"), 3)
	for _, mt := range fams["ejserver_workflow_node_start_delay_seconds"].GetMetric() {
		if s := mt.GetHistogram().GetSampleSum(); s < 2.039 || s > 2.041 {
			t.Errorf("node start delays sum to %v s, want 2.04 (the negative one as 0)", s)
		}
	}
	for _, mt := range fams["ejserver_workflow_run_duration_seconds"].GetMetric() {
		if labelsOf(mt)["workflow"] == "nightly" && mt.GetHistogram().GetSampleSum() != 120 {
			t.Errorf("nightly's run durations sum to %v s, want 120", mt.GetHistogram().GetSampleSum())
		}
	}
}
