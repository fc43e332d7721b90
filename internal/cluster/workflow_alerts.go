package cluster

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// A workflow's alert state and event fences, beside the jobs' (fires.go) but in folders of their own, so a
// workflow and a job of the same name never share them:
//
//	/{namespace}.ejserver/alerts/workflow-state/{workflow}         Decide's state (incidents, quiet periods)
//	/{namespace}.ejserver/alerts/workflow-fences/{workflow}/{key}  one per (run, attempt, event): who sends

func (p Paths) workflowAlertState(wf string) string { return p.Meta() + "/alerts/workflow-state/" + wf }
func (p Paths) workflowAlertFences(wf string) string {
	return p.Meta() + "/alerts/workflow-fences/" + wf
}

// FenceWorkflowEvent creates a workflow's event fence if absent: true for the one peer that created it.
func (r *Registry) FenceWorkflowEvent(wf, key string) (bool, error) {
	return r.fence(r.p.workflowAlertFences(wf), key)
}

// WorkflowEventFences lists a workflow's event fences.
func (r *Registry) WorkflowEventFences(wf string) ([]string, error) {
	kids, _, err := r.s.children(r.p.workflowAlertFences(wf))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// DropWorkflowEventFence deletes one of a workflow's event fences (gone already is fine).
func (r *Registry) DropWorkflowEventFence(wf, key string) error {
	err := r.s.del(r.p.workflowAlertFences(wf)+"/"+key, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// ReadWorkflowAlertState reads a workflow's alert state and its version (nil, -1: none yet).
func (r *Registry) ReadWorkflowAlertState(wf string) ([]byte, int32, error) {
	return r.readState(r.p.workflowAlertState(wf))
}

// WriteWorkflowAlertState writes a workflow's alert state if it still has version (-1: create it);
// ErrStateChanged if not.
func (r *Registry) WriteWorkflowAlertState(wf string, data []byte, version int32) error {
	return r.writeState(r.p.workflowAlertState(wf), data, version)
}

// DropWorkflowAlerts deletes a workflow's alert state and fences (a deleted workflow's; idempotent).
func (r *Registry) DropWorkflowAlerts(wf string) error {
	if err := r.s.del(r.p.workflowAlertState(wf), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	kids, err := r.WorkflowEventFences(wf)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := r.DropWorkflowEventFence(wf, k); err != nil {
			return err
		}
	}
	if err := r.s.del(r.p.workflowAlertFences(wf), -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
		return err
	}
	return nil
}
