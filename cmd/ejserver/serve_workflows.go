package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/workflow"
)

// workflowHistory keeps the workflow engine's runs in the history store (engine.Recorder).
type workflowHistory struct{ store history.Store }

// RecordRun upserts the run (a few seconds at most: the engine waits for it between steps).
func (h workflowHistory) RecordRun(r workflow.Run) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.store.WriteWorkflowRun(ctx, history.WorkflowRun{ID: r.ID, Workflow: r.Workflow, State: string(r.State),
		Trigger: r.Trigger, Attempt: r.Attempt, Created: r.CreatedAt, Ended: r.EndedAt, Run: data})
}
