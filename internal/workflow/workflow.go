package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cronexpr"
)

// Workflow is a DAG of nodes, each firing an existing job, run on a schedule or only when triggered.
type Workflow struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Cron and TimeZone schedule runs as a job's do (empty Cron: runs only when triggered).
	Cron     string `json:"cron,omitempty"`
	TimeZone string `json:"timeZone,omitempty"`
	// Overlap says what a scheduled run does when an earlier run of the workflow is still going.
	Overlap  Overlap `json:"overlap,omitempty"`
	Disabled bool    `json:"disabled,omitempty"`
	// ExcludeCalendars and IncludeCalendars steer the schedule as a job's do: no scheduled run on a day of
	// an excluded calendar; with includeCalendars, scheduled runs only on a day of one of them. Triggered
	// runs are never held back.
	ExcludeCalendars []string `json:"excludeCalendars,omitempty"`
	IncludeCalendars []string `json:"includeCalendars,omitempty"`
	// Alerts are the workflow's alert rules, in the model of a job's, on WORKFLOW_FAILED, RUNNING_LONG (a
	// run still going after runningLongerThanSeconds) and RECOVERED.
	Alerts ejserver.Alerts `json:"alerts,omitzero"`
	Nodes  []Node          `json:"nodes"`
}

// Node fires one job once per run, after its parents ended as its edges require.
type Node struct {
	Name string `json:"name"`
	Job  string `json:"job"`
	// JobParameter, if set, overrides the job's jobParameter for this node's fire.
	JobParameter *string `json:"jobParameter,omitempty"`
	After        []Edge  `json:"after,omitempty"`
}

// Edge makes a node wait for a parent's end.
type Edge struct {
	Node string `json:"node"`
	On   On     `json:"on,omitempty"` // default success
}

// On is the parent end an edge requires.
type On string

// The edge conditions.
const (
	OnSuccess On = "success" // the parent succeeded
	OnFailure On = "failure" // the parent failed
	OnAlways  On = "always"  // the parent ended in any way (succeeded, failed or skipped)
)

// Overlap is a workflow's overlap policy.
type Overlap string

// The overlap policies.
const (
	OverlapSkip  Overlap = "skip"  // the due run is recorded as SKIPPED (default)
	OverlapAllow Overlap = "allow" // the due run starts beside the running one
	// OverlapReplace cancels the running runs and starts the due one.
	OverlapReplace Overlap = "replace"
)

// Limits of a workflow.
const (
	MaxNodes      = 500
	MaxEdges      = 32 // per node
	MaxOutputSize = 4096
	maxNameLen    = 100
	maxDescLen    = 1000
)

var nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// JobLookup reports whether a job exists (the caller's registry).
type JobLookup func(name string) bool

// Normalize fills defaults: an edge's On (success) and the overlap policy (skip).
func (w *Workflow) Normalize() {
	if w.Overlap == "" {
		w.Overlap = OverlapSkip
	}
	for i := range w.Nodes {
		for j := range w.Nodes[i].After {
			if w.Nodes[i].After[j].On == "" {
				w.Nodes[i].After[j].On = OnSuccess
			}
		}
	}
}

// Validate checks a normalized workflow: every offending field is listed (the first one first), a node's
// error names it (nodes[2] "settle": ...). jobs may be nil to skip the jobs' existence.
func Validate(w Workflow, jobs JobLookup) error {
	v := &fieldErrs{}
	if err := ejserver.ValidateJobName(w.Name); err != nil || len(w.Name) > maxNameLen {
		v.add("name", "must be 1-%d characters of letters, digits, '_', '.' and '-', starting with a letter or digit", maxNameLen)
	}
	if len(w.Description) > maxDescLen {
		v.add("description", "is longer than %d bytes", maxDescLen)
	}
	loc, err := cronexpr.LoadLocation(w.TimeZone)
	if err != nil {
		v.add("timeZone", "%v", err)
	}
	if w.Cron != "" && err == nil {
		if _, err := cronexpr.Parse(w.Cron, loc); err != nil {
			v.add("cron", "%v", err)
		}
	}
	switch w.Overlap {
	case OverlapSkip, OverlapAllow, OverlapReplace:
	default:
		v.add("overlap", "must be skip, allow or replace, not %q", w.Overlap)
	}
	v.from(ejserver.ValidateCalendarRefs(w.ExcludeCalendars, w.IncludeCalendars))
	if len(w.ExcludeCalendars)+len(w.IncludeCalendars) > 0 && w.Cron == "" {
		f := "excludeCalendars"
		if len(w.ExcludeCalendars) == 0 {
			f = "includeCalendars"
		}
		v.add(f, "steers scheduled runs: a workflow without a cron has none")
	}
	v.from(w.Alerts.ValidateWorkflow())
	switch {
	case len(w.Nodes) == 0:
		v.add("nodes", "must list at least one node")
	case len(w.Nodes) > MaxNodes:
		v.add("nodes", "has %d nodes, more than %d", len(w.Nodes), MaxNodes)
	}
	index := map[string]int{}
	for i, n := range w.Nodes {
		f := nodeField(i, "name")
		switch {
		case !nodeNameRE.MatchString(n.Name) || len(n.Name) > maxNameLen:
			v.add(f, "node %q: must be 1-%d characters of letters, digits, '_', '.' and '-', starting with a letter or digit", n.Name, maxNameLen)
		case index[n.Name] > 0:
			v.add(f, "node %q is named twice (also nodes[%d])", n.Name, index[n.Name]-1)
		default:
			index[n.Name] = i + 1
		}
	}
	for i, n := range w.Nodes {
		switch {
		case n.Job == "":
			v.add(nodeField(i, "job"), "node %q names no job", n.Name)
		case jobs != nil && !jobs(n.Job):
			v.add(nodeField(i, "job"), "node %q: job %q not found", n.Name, n.Job)
		}
		if n.JobParameter != nil && len(*n.JobParameter) > ejserver.MaxJobParameterLen {
			v.add(nodeField(i, "jobParameter"), "node %q: longer than %d bytes", n.Name, ejserver.MaxJobParameterLen)
		}
		if len(n.After) > MaxEdges {
			v.add(nodeField(i, "after"), "node %q has %d edges, more than %d", n.Name, len(n.After), MaxEdges)
		}
		seen := map[string]On{}
		for j, e := range n.After {
			f := nodeField(i, "after["+strconv.Itoa(j)+"]")
			switch {
			case index[e.Node] == 0:
				v.add(f+".node", "node %q waits for node %q, which the workflow does not have", n.Name, e.Node)
			case e.Node == n.Name:
				v.add(f+".node", "node %q waits for itself", n.Name)
			}
			switch e.On {
			case OnSuccess, OnFailure, OnAlways:
			default:
				v.add(f+".on", "node %q: on must be success, failure or always, not %q", n.Name, e.On)
			}
			if prev, ok := seen[e.Node]; ok {
				if prev == e.On {
					v.add(f, "node %q waits for node %q twice", n.Name, e.Node)
				} else {
					v.add(f, "node %q waits for node %q both on %s and on %s: it could never run", n.Name, e.Node, prev, e.On)
				}
			}
			seen[e.Node] = e.On
		}
	}
	if len(v.errs) > 0 {
		return v.err()
	}
	if order, cyc := topoOrder(w.Nodes); cyc >= 0 {
		v.add(nodeField(cyc, "after"), "node %q is on a cycle: %s", w.Nodes[cyc].Name, cycleText(w.Nodes, cyc))
	} else {
		for _, i := range unreachable(w.Nodes, order) {
			v.add(nodeField(i, "after"), "node %q can never run: its edges need one ancestor both to succeed and to fail (or a parent that can never run)", w.Nodes[i].Name)
		}
	}
	return v.err()
}

func nodeField(i int, f string) string { return "nodes[" + strconv.Itoa(i) + "]." + f }

// topoOrder returns the nodes' indexes parents first (Kahn's algorithm, ties in definition order), or the
// index of a node on a cycle.
func topoOrder(nodes []Node) ([]int, int) {
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.Name] = i
	}
	indeg := make([]int, len(nodes))
	kids := make([][]int, len(nodes))
	for i, n := range nodes {
		for _, e := range n.After {
			p := index[e.Node]
			kids[p] = append(kids[p], i)
			indeg[i]++
		}
	}
	var queue, order []int
	for i := range nodes {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		order = append(order, i)
		for _, k := range kids[i] {
			if indeg[k]--; indeg[k] == 0 {
				queue = append(queue, k)
			}
		}
	}
	if len(order) == len(nodes) {
		return order, -1
	}
	// a node left with parents is on a cycle or below one: walk up its unfinished parents until one repeats
	i := slices.IndexFunc(indeg, func(d int) bool { return d > 0 })
	seen := map[int]bool{}
	for !seen[i] {
		seen[i] = true
		for _, e := range nodes[i].After {
			if p := index[e.Node]; indeg[p] > 0 {
				i = p
				break
			}
		}
	}
	return nil, i
}

// cycleText spells the cycle through node i: "a -> b -> a" (parents before children).
func cycleText(nodes []Node, i int) string {
	index := make(map[string]int, len(nodes))
	for j, n := range nodes {
		index[n.Name] = j
	}
	// follow parents from i until i comes back (each node on the cycle has a parent on it)
	path := []int{i}
	seen := map[int]bool{i: true}
	var walk func(j int) bool
	walk = func(j int) bool {
		for _, e := range nodes[j].After {
			p := index[e.Node]
			if p == i {
				return true
			}
			if !seen[p] {
				seen[p] = true
				path = append(path, p)
				if walk(p) {
					return true
				}
				path = path[:len(path)-1]
			}
		}
		return false
	}
	walk(i)
	s := nodes[i].Name
	for k := len(path) - 1; k >= 0; k-- {
		s += " -> " + nodes[path[k]].Name
	}
	return s
}

// unreachable lists the nodes that can never run. A node runs when each edge it has on success or failure
// finds its parent run and end so: a conjunction of "node X ended so" over its ancestors (an edge on always
// adds nothing). Outcomes of nodes that run are independent, so the node can run unless that conjunction
// asks one ancestor for both success and failure (e.g. waits on success for a child of X on success and a
// child of X on failure), or a parent it needs can never run. order is a topological order.
func unreachable(nodes []Node, order []int) []int {
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.Name] = i
	}
	never := make([]bool, len(nodes))
	needs := make([]map[int]On, len(nodes))
	var out []int
	for _, i := range order {
		need := map[int]On{}
		for _, e := range nodes[i].After {
			p := index[e.Node]
			if e.On == OnAlways {
				continue
			}
			if never[p] {
				never[i] = true
				break
			}
			for a, on := range needs[p] {
				if prev, ok := need[a]; ok && prev != on {
					never[i] = true
				}
				need[a] = on
			}
			if prev, ok := need[p]; ok && prev != e.On {
				never[i] = true
			}
			need[p] = e.On
		}
		needs[i] = need
		if never[i] {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// fieldErrs collects field errors into one EINVALID error.
type fieldErrs struct{ errs []ejserver.FieldError }

func (v *fieldErrs) add(field, format string, args ...any) {
	v.errs = append(v.errs, ejserver.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// from adds the field errors of an EINVALID error (nil adds none).
func (v *fieldErrs) from(err error) {
	var e *ejserver.Error
	if errors.As(err, &e) {
		v.errs = append(v.errs, e.Fields...)
	}
}

func (v *fieldErrs) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	msg := v.errs[0].Field + ": " + v.errs[0].Message
	if len(v.errs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(v.errs)-1)
	}
	return &ejserver.Error{Code: ejserver.EINVALID, Message: msg, Fields: v.errs}
}
