package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
)

// Workflows live outside the namespace's job children:
//
//	/{ns}.ejserver/workflows/{name}                 a workflow's definition (JSON)
//	/{ns}.ejserver/workflow-runs/{name}/{runId}     a run's state (JSON), written only with its version
//	/{ns}.ejserver/workflow-inbox/m-{seq}           the engine's inbox: runs to start, cancels, retries,
//	                                                and the ends of node fires (written with the fire's close)
//	/{ns}.ejserver/workflow-engines/w-{seq}         the peers standing for the engine duty (ephemeral)
//	/{ns}.ejserver/workflow-cancels/c-{seq}         node fires a cancelled run stops (workflow_cancels.go)
//
// The peer whose engine node is lowest advances runs; each of its writes carries a check that its node
// still exists, and the run's version.

func (p Paths) workflows() string                  { return p.Meta() + "/workflows" }
func (p Paths) workflow(name string) string        { return p.workflows() + "/" + name }
func (p Paths) workflowRuns(name string) string    { return p.Meta() + "/workflow-runs/" + name }
func (p Paths) workflowRun(name, id string) string { return p.workflowRuns(name) + "/" + id }
func (p Paths) workflowInbox() string              { return p.Meta() + "/workflow-inbox" }
func (p Paths) workflowEngines() string            { return p.Meta() + "/workflow-engines" }

// ErrRunChanged: the run was written since it was read (or is gone): read it again and decide again.
var ErrRunChanged = errors.New("the workflow run changed meanwhile")

// ErrTriggerPending: a node's job still has a trigger waiting for an instance: fire it a moment later.
var ErrTriggerPending = errors.New("a trigger of the job is still waiting to be picked up")

// CreateWorkflow stores a new workflow's definition (ECONFLICT if it exists).
func (r *Registry) CreateWorkflow(name string, data []byte) error {
	if err := r.s.ensurePath(r.p.workflows()); err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	err := r.s.create(r.p.workflow(name), data, 0)
	if errors.Is(err, zk.ErrNodeExists) {
		return ejserver.Errorf(ejserver.ECONFLICT, "workflow %q already exists", name)
	}
	if err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	return nil
}

// ReplaceWorkflow replaces a workflow's definition if it still has version (-1: any); it returns the new
// version.
func (r *Registry) ReplaceWorkflow(name string, data []byte, version int32) (int32, error) {
	st, err := r.s.set(r.p.workflow(name), data, version)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, ejserver.Errorf(ejserver.ENOTFOUND, "workflow %q not found", name)
	case errors.Is(err, zk.ErrBadVersion):
		return 0, ejserver.Errorf(ejserver.EPRECONDITION, "workflow %q changed since version %d", name, version)
	case err != nil:
		return 0, ejserver.Unavailable(err, "registry unavailable")
	}
	return st.Version, nil
}

// GetWorkflow reads a workflow's definition and its version.
func (r *Registry) GetWorkflow(name string) ([]byte, int32, error) {
	data, st, err := r.s.get(r.p.workflow(name))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, ejserver.Errorf(ejserver.ENOTFOUND, "workflow %q not found", name)
	}
	if err != nil {
		return nil, 0, ejserver.Unavailable(err, "registry unavailable")
	}
	return data, st.Version, nil
}

// WorkflowNames lists the workflows, sorted.
func (r *Registry) WorkflowNames() ([]string, error) {
	kids, _, err := r.s.children(r.p.workflows())
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, ejserver.Unavailable(err, "registry unavailable")
	}
	slices.Sort(kids)
	return kids, nil
}

// WatchWorkflows lists the workflows and arms a watch: the channel is closed when the list changes.
func (r *Registry) WatchWorkflows() ([]string, <-chan struct{}, error) {
	return r.watchChildren(r.p.workflows())
}

// DeleteWorkflow deletes a workflow's definition and its runs' states (history keeps the runs).
func (r *Registry) DeleteWorkflow(name string) error {
	err := r.s.del(r.p.workflow(name), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return ejserver.Errorf(ejserver.ENOTFOUND, "workflow %q not found", name)
	}
	if err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	ids, _ := r.RunIDs(name)
	for _, id := range ids {
		_ = r.s.del(r.p.workflowRun(name, id), -1)
	}
	_ = r.s.del(r.p.workflowRuns(name), -1)
	_ = r.DropWorkflowAlerts(name) // best effort: a later workflow of the name starts its alerts afresh
	return nil
}

// CreateRun stores a new run and posts its start to the engine's inbox, in one transaction (fenced by the
// engine's node when fence is not nil: a scheduled run). Without msg it posts nothing: the run is stored as
// it is (one that ended already, e.g. SKIPPED by the workflow's calendars).
func (r *Registry) CreateRun(fence any, workflow, id string, run, msg []byte) error {
	for _, p := range []string{r.p.workflowRuns(workflow), r.p.workflowInbox()} {
		if err := r.s.ensurePath(p); err != nil {
			return ejserver.Unavailable(err, "registry unavailable")
		}
	}
	ops := []any{opCheck(r.p.workflow(workflow), -1), r.s.opCreate(r.p.workflowRun(workflow, id), run, 0)}
	if msg != nil {
		ops = append(ops, r.s.opCreate(r.p.workflowInbox()+"/m-", msg, zk.FlagSequence))
	}
	if fence != nil {
		ops = append(ops, fence)
	}
	_, err := r.s.multi(ops...)
	if errors.Is(err, zk.ErrNoNode) {
		return ejserver.Errorf(ejserver.ENOTFOUND, "workflow %q not found", workflow)
	}
	if err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	return nil
}

// ReadRun reads a run's state and its version.
func (r *Registry) ReadRun(workflow, id string) ([]byte, int32, error) {
	data, st, err := r.s.get(r.p.workflowRun(workflow, id))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, ejserver.Errorf(ejserver.ENOTFOUND, "run %q of workflow %q not found", id, workflow)
	}
	if err != nil {
		return nil, 0, ejserver.Unavailable(err, "registry unavailable")
	}
	return data, st.Version, nil
}

// RunIDs lists the runs of a workflow the registry holds, oldest first (run ids sort by creation).
func (r *Registry) RunIDs(workflow string) ([]string, error) {
	kids, _, err := r.s.children(r.p.workflowRuns(workflow))
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, ejserver.Unavailable(err, "registry unavailable")
	}
	slices.Sort(kids)
	return kids, nil
}

// DropRun deletes an ended run's state, fenced (the engine keeps the last few of each workflow).
func (r *Registry) DropRun(fence any, workflow, id string) error {
	_, err := r.s.multi(fence, opDelete(r.p.workflowRun(workflow, id), -1))
	if errors.Is(err, zk.ErrNoNode) && fence != nil {
		return nil
	}
	return err
}

// PostInbox posts a message to the workflow engine's inbox.
func (r *Registry) PostInbox(msg []byte) error {
	err := r.s.create(r.p.workflowInbox()+"/m-", msg, zk.FlagSequence)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(r.p.workflowInbox()); err == nil {
			err = r.s.create(r.p.workflowInbox()+"/m-", msg, zk.FlagSequence)
		}
	}
	if err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	return nil
}

// Inbox lists the engine's inbox, oldest first, and arms a watch: the channel is closed when it changes.
func (r *Registry) Inbox() ([]string, <-chan struct{}, error) {
	kids, ch, err := r.watchChildren(r.p.workflowInbox())
	slices.Sort(kids) // sequence numbers are zero-padded
	return kids, ch, err
}

// InboxNames lists the engine's inbox, oldest first, without a watch.
func (r *Registry) InboxNames() ([]string, error) {
	kids, _, err := r.s.children(r.p.workflowInbox())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(kids)
	return kids, err
}

// ReadInbox reads an inbox message (nil, nil: gone).
func (r *Registry) ReadInbox(name string) ([]byte, error) {
	data, _, err := r.s.get(r.p.workflowInbox() + "/" + name)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return data, err
}

// ReadInboxMany reads inbox messages at once (pipelined on the session: about one round trip for a burst of
// node ends, not one each); a message gone meanwhile is nil.
func (r *Registry) ReadInboxMany(names []string) ([][]byte, error) {
	out := make([][]byte, len(names))
	err := concurrently(len(names), func(i int) error {
		data, err := r.ReadInbox(names[i])
		out[i] = data
		return err
	})
	return out, err
}

// DropInbox deletes inbox messages the engine applied (gone already is fine), fenced: all in one
// transaction, or one by one when one of them went meanwhile.
func (r *Registry) DropInbox(fence any, names ...string) error {
	if len(names) > 1 {
		ops := []any{fence}
		for _, n := range names {
			ops = append(ops, opDelete(r.p.workflowInbox()+"/"+n, -1))
		}
		if _, err := r.s.multi(ops...); err == nil || !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	for _, n := range names {
		_, err := r.s.multi(fence, opDelete(r.p.workflowInbox()+"/"+n, -1))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// NodeFire is the trigger of one node's fire: the job, the instances to run it, the request.
type NodeFire struct {
	Job       string
	Instances []string
	Request   TriggerRequest
}

// AdvanceRun writes a run's next state if it still has version, with the triggers of the nodes it fires and
// the cancels of the node fires it stops, in one transaction fenced by the engine's node: ErrRunChanged if
// the run moved (or the fence went), ErrTriggerPending if a job still has an earlier trigger waiting. It
// returns the run's new version.
func (r *Registry) AdvanceRun(fence any, workflow, id string, version int32, run []byte, fires []NodeFire, cancels []FireCancel) (int32, error) {
	ops := []any{fence, opSet(r.p.workflowRun(workflow, id), run, version)}
	stops, err := r.cancelOps(cancels)
	if err != nil {
		return 0, err
	}
	ops = append(ops, stops...)
	for _, f := range fires {
		data, err := json.Marshal(f.Request)
		if err != nil {
			return 0, err
		}
		ops = append(ops, opCheck(r.p.Config(f.Job), -1))
		for _, inst := range f.Instances {
			ops = append(ops, r.s.opCreate(r.p.Trigger(f.Job, inst), data, 0))
		}
	}
	resps, err := r.b.submit(ops...)
	var oe *OpError
	switch {
	case err == nil:
		return resps[1].Stat.Version, nil
	case errors.As(err, &oe) && oe.Op > 1 && errors.Is(err, zk.ErrNodeExists):
		return 0, ErrTriggerPending
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return 0, ErrRunChanged // the run moved, the fence went, or a job went meanwhile: decide again
	}
	return 0, fmt.Errorf("advance run %s of workflow %q: %w", id, workflow, err)
}

// EngineDuty stands this peer for the workflow engine duty, as WatcherDuty does for the lease watcher.
func (r *Registry) EngineDuty(mine string) (held bool, node string, fence any, changed <-chan struct{}, err error) {
	return r.duty(r.p.workflowEngines(), mine)
}

// ResignEngine deletes this peer's engine node (shutdown: the next peer takes the duty at once).
func (r *Registry) ResignEngine(node string) { r.ResignWatcher(node) }

// TriggerWaiting reports whether a trigger node of job for instance is still waiting.
func (r *Registry) TriggerWaiting(job, instance string) (bool, error) {
	ok, _, err := r.s.exists(r.p.Trigger(job, instance))
	return ok, err
}

// FireOpen reports whether a fire's ledger exists.
func (r *Registry) FireOpen(job, fire string) (bool, error) {
	ok, _, err := r.s.exists(r.p.fire(job, fire))
	return ok, err
}

// watchChildren lists a folder's children (making the folder if missing) and arms a watch.
func (r *Registry) watchChildren(pth string) ([]string, <-chan struct{}, error) {
	ch := r.addWaiter(pth)
	kids, _, err := r.s.childrenW(pth)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(pth); err == nil {
			kids, _, err = r.s.childrenW(pth)
		}
	}
	if err != nil {
		r.dropWaiter(pth, ch)
		return nil, nil, err
	}
	return kids, ch, nil
}

// inboxOp is the op that posts a fire's end to the workflow engine's inbox (CloseFire's, with the close).
func (r *Registry) inboxOp(report []byte) (any, error) {
	if _, ok := r.firesMade.Load(inboxMade); !ok {
		if err := r.s.ensurePath(r.p.workflowInbox()); err != nil {
			return nil, err
		}
		r.firesMade.Store(inboxMade, struct{}{})
	}
	return r.s.opCreate(r.p.workflowInbox()+"/m-", report, zk.FlagSequence), nil
}

// inboxMade is the firesMade key that says the inbox folder exists (no job is named with a slash).
const inboxMade = "/workflow-inbox"

// JobExists reports whether a job's config node exists (read now: a job created a moment ago counts).
func (r *Registry) JobExists(name string) bool {
	if ejserver.ValidateJobName(name) != nil {
		return false
	}
	ok, _, err := r.s.exists(r.p.Config(name))
	return err == nil && ok
}
