package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Workflow is a DAG of nodes, each firing a job once per run (README "Workflows").
type Workflow struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Cron        string         `json:"cron,omitempty"`
	TimeZone    string         `json:"timeZone,omitempty"`
	Overlap     string         `json:"overlap,omitempty"`
	Disabled    bool           `json:"disabled,omitempty"`
	Nodes       []WorkflowNode `json:"nodes"`
	// ETag is the version (from the ETag header), for ReplaceWorkflow's If-Match.
	ETag string `json:"-"`
}

// WorkflowNode is a node of a workflow.
type WorkflowNode struct {
	Name         string         `json:"name"`
	Job          string         `json:"job"`
	JobParameter *string        `json:"jobParameter,omitempty"`
	After        []WorkflowEdge `json:"after,omitempty"`
}

// WorkflowEdge makes a node wait for a parent: On is success, failure or always.
type WorkflowEdge struct {
	Node string `json:"node"`
	On   string `json:"on,omitempty"`
}

// WorkflowList is every workflow.
type WorkflowList struct {
	Items []Workflow `json:"items"`
}

// WorkflowRun is one run of a workflow and its nodes' states.
type WorkflowRun struct {
	ID          string            `json:"id"`
	Workflow    string            `json:"workflow"`
	Trigger     string            `json:"trigger"`
	ScheduledAt time.Time         `json:"scheduledAt"`
	Parameters  json.RawMessage   `json:"parameters,omitempty"`
	State       string            `json:"state"`
	Attempt     int               `json:"attempt"`
	CreatedAt   time.Time         `json:"createdAt"`
	StartedAt   time.Time         `json:"startedAt,omitzero"`
	EndedAt     time.Time         `json:"endedAt,omitzero"`
	Reason      string            `json:"reason,omitempty"`
	Nodes       []WorkflowNodeRun `json:"nodes"`
}

// WorkflowNodeRun is a node's state in a run.
type WorkflowNodeRun struct {
	WorkflowNode
	State       string          `json:"state"`
	Attempt     int             `json:"attempt,omitempty"`
	Fire        string          `json:"fire,omitempty"`
	FiredAt     time.Time       `json:"firedAt,omitzero"`
	EndedAt     time.Time       `json:"endedAt,omitzero"`
	Items       int             `json:"items,omitempty"`
	FailedItems int             `json:"failedItems,omitempty"`
	Error       string          `json:"error,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
}

// WorkflowRunList is the runs ZooKeeper holds of a workflow, newest first.
type WorkflowRunList struct {
	Items []WorkflowRun `json:"items"`
}

func workflowPath(name string, rest ...string) string {
	p := "/api/v1/workflows/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

func (c *Client) workflowCall(ctx context.Context, rq request) (*Workflow, error) {
	var out Workflow
	rq.out = &out
	resp, err := c.do(ctx, rq)
	if err != nil {
		return nil, err
	}
	out.ETag = resp.Header().Get("ETag")
	return &out, nil
}

// CreateWorkflow creates a workflow (a Workflow or raw JSON); 409 (IsConflict) if it exists.
func (c *Client) CreateWorkflow(ctx context.Context, body any) (*Workflow, error) {
	return c.workflowCall(ctx, request{method: http.MethodPost, path: "/api/v1/workflows", body: rawBody(body)})
}

// ListWorkflows lists every workflow.
func (c *Client) ListWorkflows(ctx context.Context) (*WorkflowList, error) {
	var out WorkflowList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/workflows", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetWorkflow reads a workflow; Workflow.ETag is its version.
func (c *Client) GetWorkflow(ctx context.Context, name string) (*Workflow, error) {
	return c.workflowCall(ctx, request{method: http.MethodGet, path: workflowPath(name)})
}

// ReplaceWorkflow replaces a workflow; with ifMatch (a Workflow.ETag) it fails with 412 if it changed since.
func (c *Client) ReplaceWorkflow(ctx context.Context, name string, body any, ifMatch string) (*Workflow, error) {
	rq := request{method: http.MethodPut, path: workflowPath(name), body: rawBody(body)}
	if ifMatch != "" {
		rq.header = map[string]string{"If-Match": ifMatch}
	}
	return c.workflowCall(ctx, rq)
}

// DeleteWorkflow deletes a workflow.
func (c *Client) DeleteWorkflow(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: workflowPath(name)})
	return err
}

func (c *Client) runCall(ctx context.Context, rq request) (*WorkflowRun, error) {
	var out WorkflowRun
	rq.out = &out
	if _, err := c.do(ctx, rq); err != nil {
		return nil, err
	}
	return &out, nil
}

// TriggerWorkflow makes a run (PENDING until the engine starts it); parameters (a JSON object) may be nil.
func (c *Client) TriggerWorkflow(ctx context.Context, name string, parameters json.RawMessage) (*WorkflowRun, error) {
	rq := request{method: http.MethodPost, path: workflowPath(name, "runs")}
	if len(parameters) > 0 {
		rq.body = map[string]json.RawMessage{"parameters": parameters}
	}
	return c.runCall(ctx, rq)
}

// WorkflowRuns lists the runs ZooKeeper holds of a workflow (the active ones and the last 20 ended).
func (c *Client) WorkflowRuns(ctx context.Context, name string) (*WorkflowRunList, error) {
	var out WorkflowRunList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: workflowPath(name, "runs"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetWorkflowRun reads one run.
func (c *Client) GetWorkflowRun(ctx context.Context, name, id string) (*WorkflowRun, error) {
	return c.runCall(ctx, request{method: http.MethodGet, path: workflowPath(name, "runs", id)})
}

// CancelWorkflowRun asks for a run's cancel (409 if it ended).
func (c *Client) CancelWorkflowRun(ctx context.Context, name, id string) (*WorkflowRun, error) {
	return c.runCall(ctx, request{method: http.MethodPost, path: workflowPath(name, "runs", id, "cancel")})
}

// RetryWorkflowRun asks for a FAILED or CANCELLED run to run again from its failed nodes.
func (c *Client) RetryWorkflowRun(ctx context.Context, name, id string) (*WorkflowRun, error) {
	return c.runCall(ctx, request{method: http.MethodPost, path: workflowPath(name, "runs", id, "retry")})
}
