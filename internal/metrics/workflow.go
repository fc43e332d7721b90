package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejserver/ejserver/internal/workflow"
)

// workflowMetrics count workflow runs and time their nodes' starts (engine.Observer), on the peer holding the
// engine duty. Workflows are few and named by admins, so every series carries the workflow label.
type workflowMetrics struct {
	started  *prometheus.CounterVec   // workflow
	ended    *prometheus.CounterVec   // workflow, outcome
	skipped  *prometheus.CounterVec   // workflow, reason
	duration *prometheus.HistogramVec // workflow
	delay    *prometheus.HistogramVec // workflow
}

func newWorkflowMetrics(reg *prometheus.Registry) workflowMetrics {
	w := workflowMetrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ejserver_workflow_runs_started_total",
			Help: "Workflow runs that left PENDING on this peer's engine (a run skipped for overlap included)."}, []string{"workflow"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ejserver_workflow_runs_ended_total",
			Help: "Workflow runs that ended on this peer's engine, by outcome (SUCCEEDED, FAILED, CANCELLED, SKIPPED)."},
			[]string{"workflow", "outcome"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ejserver_workflow_runs_skipped_total",
			Help: "Workflow runs SKIPPED on this peer's engine, by reason: calendar (its calendars left a scheduled run out) or overlap (an earlier run was still going)."},
			[]string{"workflow", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ejserver_workflow_run_duration_seconds",
			Help:    "Time from a workflow run's creation to its end.",
			Buckets: []float64{0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}}, []string{"workflow"}),
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ejserver_workflow_node_start_delay_seconds",
			Help:    "Time from the end of a node's last parent (a root's: its run's start) to the node's fire.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}, []string{"workflow"}),
	}
	reg.MustRegister(w.started, w.ended, w.skipped, w.duration, w.delay)
	return w
}

// RunStarted counts a run that left PENDING.
func (m *Metrics) RunStarted(wf string) { m.workflow.started.WithLabelValues(wf).Inc() }

// RunEnded counts an ended run by outcome and times it.
func (m *Metrics) RunEnded(wf string, state workflow.RunState, d time.Duration) {
	m.workflow.ended.WithLabelValues(wf, string(state)).Inc()
	m.workflow.duration.WithLabelValues(wf).Observe(max(d, 0).Seconds())
}

// RunSkipped counts a SKIPPED run by why (engine.SkipCalendar or engine.SkipOverlap).
func (m *Metrics) RunSkipped(wf string, why string) {
	m.workflow.skipped.WithLabelValues(wf, why).Inc()
}

// NodeFired times how long a node waited after it could fire.
func (m *Metrics) NodeFired(wf string, delay time.Duration) {
	m.workflow.delay.WithLabelValues(wf).Observe(max(delay, 0).Seconds())
}
