package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/workflow"
)

// ServiceRegistry is what the workflow service needs from the registry (cluster.Registry satisfies it).
type ServiceRegistry interface {
	CreateWorkflow(name string, data []byte) error
	ReplaceWorkflow(name string, data []byte, version int32) (int32, error)
	GetWorkflow(name string) ([]byte, int32, error)
	WorkflowNames() ([]string, error)
	DeleteWorkflow(name string) error
	CreateRun(fence any, wf, id string, run, msg []byte) error
	ReadRun(wf, id string) ([]byte, int32, error)
	RunIDs(wf string) ([]string, error)
	PostInbox(msg []byte) error
	JobExists(name string) bool
}

var (
	_ Registry        = (*cluster.Registry)(nil)
	_ ServiceRegistry = (*cluster.Registry)(nil)
)

// MaxParametersSize caps a run's parameters (they go into every item's body).
const MaxParametersSize = 4096

// Service is the workflows' API: definitions, runs and run controls. It writes to ZooKeeper; the engine on
// the duty holder does the rest.
type Service struct {
	reg       ServiceRegistry
	clk       clock.Clock
	calendars Calendars // nil: calendars are not checked (calendars.go)
}

// NewService returns the workflow service.
func NewService(reg ServiceRegistry, clk clock.Clock) *Service {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Service{reg: reg, clk: clk}
}

// Stored is a workflow with its version (the ETag).
type Stored struct {
	workflow.Workflow
	Version int32 `json:"-"`
}

func (s *Service) check(w *workflow.Workflow) error {
	w.Normalize()
	if err := workflow.Validate(*w, s.reg.JobExists); err != nil {
		return err
	}
	return s.checkCalendars(context.Background(), *w)
}

// Create stores a new workflow.
func (s *Service) Create(_ context.Context, w workflow.Workflow) (Stored, error) {
	if err := s.check(&w); err != nil {
		return Stored{}, err
	}
	data, _ := json.Marshal(w)
	if err := s.reg.CreateWorkflow(w.Name, data); err != nil {
		return Stored{}, err
	}
	return Stored{Workflow: w}, nil
}

// Replace replaces a workflow (version -1: any); runs going on keep the nodes they were made with.
func (s *Service) Replace(_ context.Context, name string, w workflow.Workflow, version int32) (Stored, error) {
	if w.Name == "" {
		w.Name = name
	}
	if w.Name != name {
		return Stored{}, ejserver.Invalid("name", "is %q but the path names %q: a workflow cannot be renamed", w.Name, name)
	}
	if err := s.check(&w); err != nil {
		return Stored{}, err
	}
	data, _ := json.Marshal(w)
	v, err := s.reg.ReplaceWorkflow(name, data, version)
	if err != nil {
		return Stored{}, err
	}
	return Stored{Workflow: w, Version: v}, nil
}

// Get reads a workflow.
func (s *Service) Get(_ context.Context, name string) (Stored, error) {
	if ejserver.ValidateJobName(name) != nil {
		return Stored{}, ejserver.Errorf(ejserver.ENOTFOUND, "workflow %q not found", name)
	}
	data, v, err := s.reg.GetWorkflow(name)
	if err != nil {
		return Stored{}, err
	}
	var w workflow.Workflow
	if err := json.Unmarshal(data, &w); err != nil {
		return Stored{}, ejserver.Errorf(ejserver.EINTERNAL, "workflow %q is not readable", name)
	}
	return Stored{Workflow: w, Version: v}, nil
}

// List reads every workflow, by name.
func (s *Service) List(ctx context.Context) ([]workflow.Workflow, error) {
	names, err := s.reg.WorkflowNames()
	if err != nil {
		return nil, err
	}
	out := make([]workflow.Workflow, 0, len(names))
	for _, n := range names {
		st, err := s.Get(ctx, n)
		if ejserver.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st.Workflow)
	}
	return out, nil
}

// Delete deletes a workflow and the runs ZooKeeper holds; running nodes' fires go on.
func (s *Service) Delete(_ context.Context, name string) error {
	if ejserver.ValidateJobName(name) != nil {
		return ejserver.Errorf(ejserver.ENOTFOUND, "workflow %q not found", name)
	}
	return s.reg.DeleteWorkflow(name)
}

// TriggerRequest starts a run by hand: optional parameters (a JSON object, up to 4 KB) for every node.
type TriggerRequest struct {
	Parameters json.RawMessage `json:"parameters,omitempty" swaggertype:"object"`
}

// Trigger makes a run of the workflow and asks the engine to start it; the run is PENDING until it does.
func (s *Service) Trigger(ctx context.Context, name string, req TriggerRequest) (workflow.Run, error) {
	st, err := s.Get(ctx, name)
	if err != nil {
		return workflow.Run{}, err
	}
	if st.Disabled {
		return workflow.Run{}, ejserver.Errorf(ejserver.ECONFLICT, "workflow %q is disabled", name)
	}
	params := bytes.TrimSpace(req.Parameters)
	if len(params) > 0 && !bytes.Equal(params, []byte("null")) {
		if len(params) > MaxParametersSize {
			return workflow.Run{}, ejserver.Invalid("parameters", "is %d bytes, more than %d", len(params), MaxParametersSize)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(params, &obj) != nil {
			return workflow.Run{}, ejserver.Invalid("parameters", "must be a JSON object")
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, params)
		params = buf.Bytes()
	} else {
		params = nil
	}
	now := s.clk.Now().UTC()
	id := ejserver.NewExecutionID()
	r := workflow.NewRun(st.Workflow, id, workflow.TriggerManual, now, now, params)
	data, _ := json.Marshal(r)
	msg, _ := json.Marshal(workflow.Message{Kind: workflow.MsgStart, Workflow: name, Run: id})
	if err := s.reg.CreateRun(nil, name, id, data, msg); err != nil {
		return workflow.Run{}, err
	}
	return r, nil
}

// GetRun reads a run.
func (s *Service) GetRun(_ context.Context, name, id string) (workflow.Run, error) {
	if ejserver.ValidateJobName(name) != nil || !cluster.ValidExecutionID(id) {
		return workflow.Run{}, ejserver.Errorf(ejserver.ENOTFOUND, "run %q of workflow %q not found", id, name)
	}
	data, _, err := s.reg.ReadRun(name, id)
	if err != nil {
		return workflow.Run{}, err
	}
	var r workflow.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return workflow.Run{}, ejserver.Errorf(ejserver.EINTERNAL, "run %q is not readable", id)
	}
	return r, nil
}

// ListRuns reads the runs ZooKeeper holds of a workflow (the active ones and the last ended ones), newest
// first.
func (s *Service) ListRuns(ctx context.Context, name string) ([]workflow.Run, error) {
	if _, err := s.Get(ctx, name); err != nil {
		return nil, err
	}
	ids, err := s.reg.RunIDs(name)
	if err != nil {
		return nil, err
	}
	slices.Reverse(ids)
	out := make([]workflow.Run, 0, len(ids))
	for _, id := range ids {
		r, err := s.GetRun(ctx, name, id)
		if ejserver.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Cancel asks the engine to cancel a run (it answers with the run as it is now: the cancel is applied in a
// moment). The items of nodes whose fire is going on are stopped on every peer (cancel.go).
func (s *Service) Cancel(ctx context.Context, name, id string) (workflow.Run, error) {
	r, err := s.GetRun(ctx, name, id)
	if err != nil {
		return r, err
	}
	if r.State.Ended() {
		return r, ejserver.Errorf(ejserver.ECONFLICT, "run %s already ended (%s)", id, r.State)
	}
	msg, _ := json.Marshal(workflow.Message{Kind: workflow.MsgCancel, Workflow: name, Run: id, Reason: "cancelled through the API"})
	return r, s.reg.PostInbox(msg)
}

// Retry asks the engine to run a FAILED or CANCELLED run again from its failed nodes.
func (s *Service) Retry(ctx context.Context, name, id string) (workflow.Run, error) {
	r, err := s.GetRun(ctx, name, id)
	if err != nil {
		return r, err
	}
	if r.State != workflow.RunFailed && r.State != workflow.RunCancelled {
		return r, ejserver.Errorf(ejserver.ECONFLICT, "run %s is %s: only a FAILED or CANCELLED run can be retried", id, r.State)
	}
	msg, _ := json.Marshal(workflow.Message{Kind: workflow.MsgRetry, Workflow: name, Run: id})
	return r, s.reg.PostInbox(msg)
}
