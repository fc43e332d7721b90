package workflow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ejserver/ejserver"
)

// RunState is a run's state.
type RunState string

// The run states.
const (
	RunPending   RunState = "PENDING"
	RunRunning   RunState = "RUNNING"
	RunSucceeded RunState = "SUCCEEDED"
	RunFailed    RunState = "FAILED"
	RunCancelled RunState = "CANCELLED"
	RunSkipped   RunState = "SKIPPED" // a scheduled run skipped by the overlap policy or left out by its calendars
)

// Ended reports whether the state is final (a FAILED or CANCELLED run may still be retried).
func (s RunState) Ended() bool { return s != RunPending && s != RunRunning }

// NodeState is a node's state in a run.
type NodeState string

// The node states.
const (
	NodePending   NodeState = "PENDING"
	NodeRunning   NodeState = "RUNNING"
	NodeSucceeded NodeState = "SUCCEEDED"
	NodeFailed    NodeState = "FAILED"
	NodeSkipped   NodeState = "SKIPPED"
	NodeCancelled NodeState = "CANCELLED"
)

// Ended reports whether the node is done in this attempt.
func (s NodeState) Ended() bool { return s != NodePending && s != NodeRunning }

// How a run was started.
const (
	TriggerSchedule = "SCHEDULE"
	TriggerManual   = "MANUAL"
)

// Run is one run of a workflow: its nodes (the definition as it was when the run was made) and their states.
type Run struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	// Trigger is SCHEDULE or MANUAL; ScheduledAt the due time (SCHEDULE) or the request's time.
	Trigger     string    `json:"trigger"`
	ScheduledAt time.Time `json:"scheduledAt"`
	// Parameters are the caller's JSON for the whole run, passed to every node's items.
	Parameters json.RawMessage `json:"parameters,omitempty" swaggertype:"object"`
	State      RunState        `json:"state"`
	// Attempt is 1, plus one per retry from the failed nodes.
	Attempt   int       `json:"attempt"`
	CreatedAt time.Time `json:"createdAt"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	Nodes     []NodeRun `json:"nodes"`
}

// NodeRun is a node's state in a run.
type NodeRun struct {
	Node
	State NodeState `json:"state"`
	// Attempt is the run attempt the node last fired in (0: not yet).
	Attempt int `json:"attempt,omitempty"`
	// Fire is the key of the node's fire (the engine sets it when it fires the job).
	Fire    string          `json:"fire,omitempty"`
	FiredAt time.Time       `json:"firedAt,omitzero"`
	EndedAt time.Time       `json:"endedAt,omitzero"`
	Items   int             `json:"items,omitempty"`
	Failed  int             `json:"failedItems,omitempty"`
	Error   string          `json:"error,omitempty"`
	Output  json.RawMessage `json:"output,omitempty" swaggertype:"object"`
}

// NewRun makes a PENDING run of a validated workflow.
func NewRun(w Workflow, id, trigger string, scheduledAt, now time.Time, params json.RawMessage) Run {
	r := Run{ID: id, Workflow: w.Name, Trigger: trigger, ScheduledAt: scheduledAt, Parameters: params,
		State: RunPending, Attempt: 1, CreatedAt: now, Nodes: make([]NodeRun, len(w.Nodes))}
	for i, n := range w.Nodes {
		r.Nodes[i] = NodeRun{Node: n, State: NodePending}
	}
	return r
}

// EventKind names an event of a run.
type EventKind string

// The events.
const (
	EventStart       EventKind = "start"        // a PENDING run starts: its roots fire
	EventSkip        EventKind = "skip"         // a PENDING run is skipped (overlap policy, calendars)
	EventNodeEnded   EventKind = "node-ended"   // a node's fire ended (or could not be made)
	EventCancel      EventKind = "cancel"       // the run is cancelled
	EventRetryFailed EventKind = "retry-failed" // a FAILED or CANCELLED run runs again from its failed nodes
)

// Event is what happens to a run.
type Event struct {
	Kind EventKind
	// NodeEnded: the node, the fire it ended (must be the node's current one), how.
	Node      string
	Fire      string
	Succeeded bool
	Items     int
	Failed    int
	Output    json.RawMessage
	Error     string
	// Skip, Cancel: why.
	Reason string
}

// EffectKind names an effect of a run's step.
type EffectKind string

// The effects.
const (
	EffectFire  EffectKind = "fire"  // fire Node's job once, with its parents' ends
	EffectEnded EffectKind = "ended" // the run ended in State
)

// Effect is what the engine must do after a step.
type Effect struct {
	Kind    EffectKind
	Node    string
	Parents []ParentEnd
	State   RunState
}

// ParentEnd is how a parent of a firing node ended: it goes into the node's items' bodies.
type ParentEnd struct {
	Node    string          `json:"node"`
	Job     string          `json:"job"`
	Outcome NodeState       `json:"outcome"`
	Output  json.RawMessage `json:"output,omitempty" swaggertype:"object"`
}

// Apply is one step of a run: the next run and its effects. An event that no longer applies (the end of a
// fire the node does not wait for, a cancel of an ended run) changes nothing and has no effect; a request
// the run's state forbids (retry of a run that did not fail) is an ECONFLICT error.
func Apply(r Run, e Event, now time.Time) (Run, []Effect, error) {
	r = r.clone()
	switch e.Kind {
	case EventStart:
		if r.State != RunPending {
			return r, nil, nil
		}
		r.State, r.StartedAt = RunRunning, now
		return r.advance(now)
	case EventSkip:
		if r.State != RunPending {
			return r, nil, nil
		}
		r.State, r.EndedAt, r.Reason = RunSkipped, now, e.Reason
		for i := range r.Nodes {
			r.Nodes[i].State = NodeSkipped
		}
		return r, []Effect{{Kind: EffectEnded, State: RunSkipped}}, nil
	case EventNodeEnded:
		i := r.node(e.Node)
		if r.State != RunRunning || i < 0 || r.Nodes[i].State != NodeRunning || r.Nodes[i].Fire != e.Fire {
			return r, nil, nil // a stale end: the run or the node moved on
		}
		n := &r.Nodes[i]
		n.State, n.EndedAt, n.Items, n.Failed, n.Error, n.Output = NodeFailed, now, e.Items, e.Failed, e.Error, nil
		if e.Succeeded {
			n.State, n.Error = NodeSucceeded, ""
		}
		if len(e.Output) > 0 && len(e.Output) <= MaxOutputSize && json.Valid(e.Output) {
			n.Output = e.Output
		}
		return r.advance(now)
	case EventCancel:
		if r.State.Ended() {
			return r, nil, nil
		}
		r.State, r.EndedAt, r.Reason = RunCancelled, now, e.Reason
		for i := range r.Nodes {
			if !r.Nodes[i].State.Ended() {
				r.Nodes[i].State, r.Nodes[i].EndedAt = NodeCancelled, now
			}
		}
		return r, []Effect{{Kind: EffectEnded, State: RunCancelled}}, nil
	case EventRetryFailed:
		if r.State != RunFailed && r.State != RunCancelled {
			return r, nil, ejserver.Errorf(ejserver.ECONFLICT, "run %s is %s: only a FAILED or CANCELLED run can be retried", r.ID, r.State)
		}
		r.Attempt++
		r.State, r.EndedAt, r.Reason = RunRunning, time.Time{}, ""
		// the nodes that did not succeed run again, and so does everything below them (their parents' ends
		// change): a succeeded node elsewhere is not repeated
		again := make([]bool, len(r.Nodes))
		defs := make([]Node, len(r.Nodes))
		for i, n := range r.Nodes {
			defs[i] = n.Node
		}
		order, _ := topoOrder(defs)
		for _, i := range order {
			again[i] = r.Nodes[i].State != NodeSucceeded
			for _, e := range r.Nodes[i].After {
				again[i] = again[i] || again[r.node(e.Node)]
			}
		}
		for i := range r.Nodes {
			n := &r.Nodes[i]
			if again[i] {
				n.State, n.Fire, n.FiredAt, n.EndedAt, n.Error, n.Output, n.Items, n.Failed =
					NodePending, "", time.Time{}, time.Time{}, "", nil, 0, 0
			}
		}
		return r.advance(now)
	}
	return r, nil, fmt.Errorf("unknown workflow event %q", e.Kind)
}

// advance fires every pending node whose parents all ended as its edges require, skips those whose parents
// ended otherwise (in parents-first order, so skips go down at once), and ends the run when every node ended.
func (r Run) advance(now time.Time) (Run, []Effect, error) {
	defs := make([]Node, len(r.Nodes))
	for i, n := range r.Nodes {
		defs[i] = n.Node
	}
	order, cyc := topoOrder(defs)
	if cyc >= 0 {
		return r, nil, fmt.Errorf("run %s: node %q is on a cycle", r.ID, defs[cyc].Name)
	}
	var effects []Effect
	for _, i := range order {
		n := &r.Nodes[i]
		if n.State != NodePending {
			continue
		}
		ready, ok := true, true
		parents := make([]ParentEnd, 0, len(n.After))
		for _, e := range n.After {
			p := r.Nodes[r.node(e.Node)]
			if !p.State.Ended() {
				ready = false
				break
			}
			if !satisfied(e.On, p.State) {
				ok = false
			}
			parents = append(parents, ParentEnd{Node: p.Name, Job: p.Job, Outcome: p.State, Output: p.Output})
		}
		switch {
		case !ready:
		case ok:
			n.State, n.Attempt, n.FiredAt, n.Fire = NodeRunning, r.Attempt, now, ""
			effects = append(effects, Effect{Kind: EffectFire, Node: n.Name, Parents: parents})
		default:
			n.State, n.EndedAt = NodeSkipped, now
		}
	}
	done, failed := true, false
	for _, n := range r.Nodes {
		done = done && n.State.Ended()
		failed = failed || n.State == NodeFailed
	}
	if done {
		r.State, r.EndedAt = RunSucceeded, now
		if failed {
			r.State = RunFailed
		}
		effects = append(effects, Effect{Kind: EffectEnded, State: r.State})
	}
	return r, effects, nil
}

// satisfied reports whether a parent's end satisfies an edge.
func satisfied(on On, s NodeState) bool {
	switch on {
	case OnFailure:
		return s == NodeFailed
	case OnAlways:
		return s.Ended()
	}
	return s == NodeSucceeded
}

// node returns the index of the named node, or -1.
func (r Run) node(name string) int {
	for i := range r.Nodes {
		if r.Nodes[i].Name == name {
			return i
		}
	}
	return -1
}

// Node returns the named node's state (false: the run has no such node).
func (r Run) Node(name string) (NodeRun, bool) {
	if i := r.node(name); i >= 0 {
		return r.Nodes[i], true
	}
	return NodeRun{}, false
}

// SetFire records the key of a node's fire (the engine, right after Apply fired it).
func (r *Run) SetFire(node, fire string) {
	if i := r.node(node); i >= 0 {
		r.Nodes[i].Fire = fire
	}
}

func (r Run) clone() Run {
	r.Nodes = append([]NodeRun(nil), r.Nodes...)
	return r
}

// StartDelay is how long node waited to fire at now after it could: since the last of its parents ended, or
// for a root since the run started (created, when it has not). Never negative; 0 for a node not in r.
func StartDelay(r Run, node string, now time.Time) time.Duration {
	n, ok := r.Node(node)
	if !ok {
		return 0
	}
	from := r.StartedAt
	if from.IsZero() {
		from = r.CreatedAt
	}
	if len(n.After) > 0 {
		from = time.Time{}
		for _, a := range n.After {
			if p, ok := r.Node(a.Node); ok && p.EndedAt.After(from) {
				from = p.EndedAt
			}
		}
	}
	if from.IsZero() || now.Before(from) {
		return 0
	}
	return now.Sub(from)
}
