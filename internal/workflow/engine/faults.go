package engine

import (
	"slices"

	"github.com/ejserver/ejserver/internal/workflow"
)

// The engine's fault points: the moments of a run's advance where the duty holder's death must not skip or
// repeat a node. EngineConfig.Fault is told of each as the engine passes it; cmd/ejserver's EJ_TEST_KILL_AT
// (set only by the integration tests) kills the peer at the one it names, and a test checks that another
// peer carries the run to its end with every node run exactly once.

// FaultStage names a fault point.
type FaultStage string

// The fault points, in the order a node's end passes them.
const (
	// FaultInboxRead: the end of Nodes[0]'s fire was read from the inbox; the step applying it is not written.
	FaultInboxRead FaultStage = "inbox-read"
	// FaultRunEnding: the run's last nodes (Nodes) ended; the step that closes the run is not written.
	FaultRunEnding FaultStage = "run-ending"
	// FaultStepWritten: the step applying the ends of Nodes was written (with the triggers of the nodes it
	// fired); the inbox messages that told those ends are not dropped.
	FaultStepWritten FaultStage = "step-written"
	// FaultFired: a step that fired Nodes was written; no instance took their triggers yet.
	FaultFired FaultStage = "fired"
	// FaultRunStarted: a run's start was written with its roots' triggers (Nodes); its start message is not
	// dropped.
	FaultRunStarted FaultStage = "run-started"
)

// FaultStages lists the fault points.
var FaultStages = []FaultStage{FaultInboxRead, FaultRunEnding, FaultStepWritten, FaultFired, FaultRunStarted}

// FaultPoint is a fault point the engine passes: the stage, the run (as written at a *-written stage, as
// read otherwise) and the nodes it concerns.
type FaultPoint struct {
	Stage FaultStage
	Run   workflow.Run
	Nodes []string
}

// fault tells the hook, if any, of a fault point.
func (d *duty) fault(stage FaultStage, r workflow.Run, nodes []string) {
	if d.e.cfg.Fault != nil {
		d.e.cfg.Fault(FaultPoint{Stage: stage, Run: r, Nodes: nodes})
	}
}

// endingFaults tells the fault point before a step is written: the run's close after its last nodes ended.
func (d *duty) endingFaults(before, after workflow.Run, evs []workflow.Event) {
	if before.State == workflow.RunRunning && (after.State == workflow.RunSucceeded || after.State == workflow.RunFailed) {
		d.fault(FaultRunEnding, before, endedNodes(evs))
	}
}

// writtenFaults tells the fault points after a step was written: the nodes' ends it applied, the nodes it
// fired, the run's start.
func (d *duty) writtenFaults(before, after workflow.Run, evs []workflow.Event) {
	if d.e.cfg.Fault == nil {
		return
	}
	if ended := endedNodes(evs); len(ended) > 0 {
		d.fault(FaultStepWritten, after, ended)
	}
	fired := firedNodes(before, after)
	if before.State == workflow.RunPending && after.State == workflow.RunRunning {
		d.fault(FaultRunStarted, after, fired)
	}
	if len(fired) > 0 {
		d.fault(FaultFired, after, fired)
	}
}

// endedNodes names the nodes whose fire's end the events tell.
func endedNodes(evs []workflow.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == workflow.EventNodeEnded && ev.Fire != "" && !slices.Contains(out, ev.Node) {
			out = append(out, ev.Node)
		}
	}
	return out
}
