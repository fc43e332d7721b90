// Package wfalert tells a workflow's trouble through its alert rules: the same model, the same Decide
// (internal/alert: incidents, recovery, quiet periods) and the same channels as a job's, on the events of a
// run: WORKFLOW_FAILED (a run ended FAILED), RUNNING_LONG (a run still going after runningLongerThanSeconds,
// told once per attempt) and RECOVERED (the next run that succeeded after a failure a rule told).
//
// The core (events.go) is pure: a run in, the event it raises and its fence key out. The edge (service.go)
// follows the runs the workflow engine's duty holder writes or loads (engine.RunListener), fences each event
// in ZooKeeper (/{namespace}.ejserver/alerts/workflow-fences/{workflow}/{key}: create-if-absent, so exactly
// one peer sends it, even when the engine's peer dies and the next one loads the run again) and applies it
// to the workflow's alert state under a version check (.../alerts/workflow-state/{workflow}).
//
//	run written/loaded ──► Ended? FAILED: WORKFLOW_FAILED, SUCCEEDED: RECOVERED ──► fence ──► Decide ──► channels
//	tick ──► active run past its threshold ──► re-read it, still going ──► fence ──► RUNNING_LONG
package wfalert
