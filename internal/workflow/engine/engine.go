// Package engine advances workflow runs: the one peer that holds the engine duty applies the inbox (runs to
// start, cancels, retries, node fires that ended) to the runs with workflow.Apply, and writes each next run
// with the triggers of the nodes it fires in one fenced ZooKeeper transaction.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/workflow"
)

// Registry is what the engine needs from the ZooKeeper registry (cluster.Registry satisfies it).
type Registry interface {
	Lease() bool
	EngineDuty(mine string) (held bool, node string, fence any, changed <-chan struct{}, err error)
	ResignEngine(node string)
	Inbox() ([]string, <-chan struct{}, error)
	InboxNames() ([]string, error)
	ReadInboxMany(names []string) ([][]byte, error)
	DropInbox(fence any, names ...string) error
	WatchWorkflows() ([]string, <-chan struct{}, error)
	WorkflowNames() ([]string, error)
	GetWorkflow(name string) ([]byte, int32, error)
	RunIDs(wf string) ([]string, error)
	ReadRun(wf, id string) ([]byte, int32, error)
	CreateRun(fence any, wf, id string, run, msg []byte) error
	AdvanceRun(fence any, wf, id string, version int32, run []byte, fires []cluster.NodeFire, cancels []cluster.FireCancel) (int32, error)
	DropRun(fence any, wf, id string) error
	Job(name string) *cluster.JobSnapshot
	FireOpen(job, fire string) (bool, error)
	TriggerWaiting(job, instance string) (bool, error)
	handOnRegistry
	cancelRegistry
}

// Recorder keeps runs in the history (the history store satisfies it); it is told every run the engine
// writes that started or ended, and may be told one twice.
type Recorder interface {
	RecordRun(r workflow.Run) error
}

// Observer counts runs and node fires (metrics); may be nil. NodeFired's delay is how long the node waited
// after it could fire (workflow.StartDelay); RunEnded's d is from the run's creation to its end; RunSkipped
// counts a SKIPPED run (after its RunEnded) by why: SkipCalendar or SkipOverlap.
type Observer interface {
	RunStarted(wf string)
	RunEnded(wf string, state workflow.RunState, d time.Duration)
	RunSkipped(wf string, why string)
	NodeFired(wf string, delay time.Duration)
}

// EngineConfig configures the engine.
type EngineConfig struct {
	Registry Registry
	Recorder Recorder // may be nil
	Observer Observer // may be nil
	Clock    clock.Clock
	Logger   *slog.Logger
	// LostGrace is how long a node's fire may show no ledger and no waiting trigger before the node fails as
	// lost (its fire never started, e.g. its instance vanished before picking up the trigger). Default 30 s.
	LostGrace time.Duration
	// KeepRuns is how many ended runs of each workflow stay in ZooKeeper (the history keeps them all).
	// Default 20.
	KeepRuns int
	// Fault, if set, is told of each fault point the engine passes (faults.go; a test's: cmd/ejserver's
	// EJ_TEST_KILL_AT kills the peer at one). It runs on the engine's goroutine and must not block.
	Fault func(FaultPoint)
	// Listener is told of the runs the duty holder writes and loads (listener.go); may be nil.
	Listener RunListener
	// Calendars steer scheduled runs by the workflows' excludeCalendars/includeCalendars (calendars.go); nil:
	// none do.
	Calendars Calendars
}

// Engine advances workflow runs on the one peer that holds the engine duty.
type Engine struct {
	cfg  EngineConfig
	reg  Registry
	clk  clock.Clock
	log  *slog.Logger
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	started bool
	stopped bool
	holder  bool
}

// NewEngine returns an engine; Start it.
func NewEngine(cfg EngineConfig) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LostGrace <= 0 {
		cfg.LostGrace = 30 * time.Second
	}
	if cfg.KeepRuns <= 0 {
		cfg.KeepRuns = 20
	}
	return &Engine{cfg: cfg, reg: cfg.Registry, clk: cfg.Clock, log: cfg.Logger, stop: make(chan struct{})}
}

// The engine's pace: it looks at lost fires, its duty and the schedules every tick, and stands again for the
// duty retryPause after an error.
const (
	tick       = time.Second
	retryPause = time.Second
)

// Start stands this peer for the engine duty; Stop ends it.
func (e *Engine) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.stopped {
		return nil
	}
	e.started = true
	e.wg.Add(1)
	go e.run()
	return nil
}

// Stop stops the engine and waits for it; safe twice and before Start.
func (e *Engine) Stop() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.stopped = true
	close(e.stop)
	e.mu.Unlock()
	e.wg.Wait()
}

// Holder reports whether this peer advances the runs now.
func (e *Engine) Holder() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holder
}

func (e *Engine) setHolder(h bool) {
	e.mu.Lock()
	e.holder = h
	e.mu.Unlock()
}

// run campaigns for the duty and advances runs while it holds it.
func (e *Engine) run() {
	defer e.wg.Done()
	node := ""
	defer func() { e.reg.ResignEngine(node) }()
	for {
		var (
			held    bool
			fence   any
			changed <-chan struct{}
			err     error
		)
		if e.reg.Lease() {
			held, node, fence, changed, err = e.reg.EngineDuty(node)
		}
		switch {
		case err != nil:
			e.log.Warn("workflow engine: could not stand for the duty", "err", err)
			fallthrough
		case !e.reg.Lease():
			if !clock.Sleep(e.clk, retryPause, e.stop) {
				return
			}
		case held:
			e.log.Info("workflow engine duty taken")
			e.setHolder(true)
			d := &duty{e: e, node: node, fence: fence, runs: map[string]*loaded{}, fires: map[string]string{}, due: map[string]time.Time{}}
			stopped := d.hold()
			e.setHolder(false)
			if stopped {
				return
			}
			e.log.Info("workflow engine duty lost")
		default:
			t := e.clk.NewTimer(30 * time.Second)
			select {
			case <-e.stop:
				t.Stop()
				return
			case <-changed:
			case <-t.C():
			}
			t.Stop()
		}
	}
}

// loaded is a run the duty holder follows, with the version of its node.
type loaded struct {
	run     workflow.Run
	version int32
}

// duty is the engine's state while it holds the duty.
type duty struct {
	e     *Engine
	node  string
	fence any
	runs  map[string]*loaded   // active runs by workflow/id
	fires map[string]string    // job/fire -> workflow/id of the running node that fired it
	due   map[string]time.Time // workflow -> its next scheduled run
	dueAt map[string]time.Time // workflow -> when its due time was computed (calendars.go)
	defs  map[string]workflow.Workflow
	lost  map[string]time.Time // job/fire -> when first seen without a ledger or a trigger
	// orphans are the triggers (job/fire@instance) found waiting for a vanished instance on the last tick
	orphans map[string]bool
	// endedIn are the workflows a run of which ended since their last prune; prunedAt when the last was
	endedIn  map[string]bool
	prunedAt time.Time
	// cancelsAt is when old fire cancels were last dropped
	cancelsAt time.Time
}

func runKey(wf, id string) string { return wf + "/" + id }

// hold advances runs until the duty is lost (false) or the engine stops (true).
func (d *duty) hold() bool {
	if err := d.load(); err != nil {
		d.e.log.Warn("workflow engine: could not load the runs", "err", err)
		return !clock.Sleep(d.e.clk, retryPause, d.e.stop)
	}
	// a watch is armed again only after it fired: each arming adds a waiter that only its firing removes
	var inboxChanged, defsChanged <-chan struct{}
	backlog := false
	// the definitions are read again after their watch is armed, never before: a workflow made between a read
	// and the arming would fire no event and stay unknown to the duty until the next change of the list
	reloadDefs := true
	for {
		if inboxChanged == nil {
			names, ch, err := d.e.reg.Inbox()
			if err != nil {
				d.e.log.Warn("workflow engine: could not read its inbox", "err", err)
				return !clock.Sleep(d.e.clk, retryPause, d.e.stop)
			}
			inboxChanged = ch
			backlog = !d.inbox(names)
		}
		if defsChanged == nil {
			names, ch, err := d.e.reg.WatchWorkflows()
			if err != nil {
				return !clock.Sleep(d.e.clk, retryPause, d.e.stop)
			}
			defsChanged = ch
			if reloadDefs {
				d.setDefs(names) // the list read as the watch was armed
				reloadDefs = false
			}
		}
		t := d.e.clk.NewTimer(tick)
		select {
		case <-d.e.stop:
			t.Stop()
			return true
		case <-inboxChanged:
			inboxChanged = nil
		case <-defsChanged:
			defsChanged, reloadDefs = nil, true
		case <-t.C():
			if !d.still() {
				t.Stop()
				return false
			}
			if backlog { // messages left for later (a trigger still pending): try them again
				if names, err := d.e.reg.InboxNames(); err == nil {
					backlog = !d.inbox(names)
				}
			}
			d.schedule()
			d.pruneEnded()
			d.dropOldCancels()
			d.sweep()
		}
		t.Stop()
	}
}

// still reports whether this peer still holds the duty.
func (d *duty) still() bool {
	if !d.e.reg.Lease() {
		return false
	}
	held, node, fence, _, err := d.e.reg.EngineDuty(d.node)
	if err != nil || !held || node != d.node {
		return false
	}
	d.fence = fence
	return true
}

// load reads the workflows and their active runs, re-records ended ones (a holder may have died before its
// history write) and drops the oldest ended ones beyond KeepRuns.
func (d *duty) load() error {
	d.loadDefs()
	d.lost = map[string]time.Time{}
	for name := range d.defs {
		ids, err := d.e.reg.RunIDs(name)
		if err != nil {
			return err
		}
		var ended []string
		for _, id := range ids {
			r, v, err := d.read(name, id)
			if err != nil {
				if ejserver.IsNotFound(err) {
					continue
				}
				return err
			}
			d.tell(r)
			if r.State.Ended() {
				ended = append(ended, id)
				continue
			}
			d.follow(r, v)
		}
		d.prune(name, ended)
	}
	return nil
}

func (d *duty) loadDefs() {
	names, err := d.e.reg.WorkflowNames()
	if err != nil {
		return
	}
	d.setDefs(names)
}

// setDefs reads the definitions of the workflows names lists; a workflow whose schedule changed is due anew.
func (d *duty) setDefs(names []string) {
	defs := map[string]workflow.Workflow{}
	for _, n := range names {
		data, _, err := d.e.reg.GetWorkflow(n)
		var w workflow.Workflow
		if err != nil || json.Unmarshal(data, &w) != nil {
			continue
		}
		defs[n] = w
		if old, ok := d.defs[n]; !ok || old.Cron != w.Cron || old.TimeZone != w.TimeZone || old.Disabled != w.Disabled {
			delete(d.due, n)
		}
	}
	d.defs = defs
}

func (d *duty) read(wf, id string) (workflow.Run, int32, error) {
	data, v, err := d.e.reg.ReadRun(wf, id)
	if err != nil {
		return workflow.Run{}, 0, err
	}
	var r workflow.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return workflow.Run{}, 0, err
	}
	return r, v, nil
}

// follow keeps an active run and indexes its running nodes' fires.
func (d *duty) follow(r workflow.Run, v int32) {
	k := runKey(r.Workflow, r.ID)
	if r.State.Ended() {
		delete(d.runs, k)
	} else {
		d.runs[k] = &loaded{run: r, version: v}
	}
	for _, n := range r.Nodes {
		if n.Fire == "" {
			continue
		}
		fk := n.Job + "/" + n.Fire
		if n.State == workflow.NodeRunning && !r.State.Ended() {
			d.fires[fk] = k
		} else {
			delete(d.fires, fk)
			delete(d.lost, fk)
		}
	}
}

// inbox applies the inbox's messages in order; a message is dropped once applied or found stale. False:
// some are left for later.
func (d *duty) inbox(names []string) bool {
	// the ends of node fires are applied to their run together: one transaction per run for a burst of
	// ends (a layer of a wide DAG ending at once), in the inbox's order; other messages go one by one
	var order []string
	ends := map[string][]workflow.Event{}
	done := map[string][]string{}
	flush := func() bool {
		for _, k := range order {
			lr := d.runs[k]
			if lr != nil && !d.steps(lr.run.Workflow, lr.run.ID, ends[k]) {
				return false
			}
			if err := d.e.reg.DropInbox(d.fence, done[k]...); err != nil {
				return false
			}
		}
		order, ends, done = nil, map[string][]workflow.Event{}, map[string][]string{}
		return true
	}
	msgs, err := d.e.reg.ReadInboxMany(names)
	if err != nil {
		return false
	}
	for i, name := range names {
		data := msgs[i]
		var m workflow.Message
		if data == nil || json.Unmarshal(data, &m) != nil {
			_ = d.e.reg.DropInbox(d.fence, name)
			continue
		}
		if m.Kind == workflow.MsgFire {
			k, ev, ok := d.fireEnd(m)
			if !ok {
				_ = d.e.reg.DropInbox(d.fence, name) // not a fire a running node waits for (cancelled, a repeat)
				continue
			}
			d.fault(FaultInboxRead, d.runs[k].run, []string{ev.Node})
			if _, seen := ends[k]; !seen {
				order = append(order, k)
			}
			ends[k], done[k] = append(ends[k], ev), append(done[k], name)
			continue
		}
		if !flush() || !d.apply(m) {
			return false // try again on the next tick, in order
		}
		if err := d.e.reg.DropInbox(d.fence, name); err != nil {
			return false
		}
	}
	return flush()
}

// fireEnd is the node end a fire's report tells, and the run it belongs to (false: no running node waits
// for that fire).
func (d *duty) fireEnd(m workflow.Message) (string, workflow.Event, bool) {
	k, ok := d.fires[m.Job+"/"+m.Fire]
	if !ok || d.runs[k] == nil {
		return "", workflow.Event{}, false
	}
	nodeName := ""
	for _, n := range d.runs[k].run.Nodes {
		if n.Job == m.Job && n.Fire == m.Fire {
			nodeName = n.Name
		}
	}
	return k, workflow.Event{Kind: workflow.EventNodeEnded, Node: nodeName, Fire: m.Fire,
		Succeeded: m.Items > 0 && m.Succeeded == m.Items, Items: m.Items, Failed: m.Items - m.Succeeded,
		Output: m.Output, Error: m.Error}, true
}

// apply applies one message; false: not now (the registry failed, or a trigger still waits), try again.
func (d *duty) apply(m workflow.Message) bool {
	switch m.Kind {
	case workflow.MsgFire:
		k, ev, ok := d.fireEnd(m)
		if !ok {
			return true
		}
		return d.step(d.runs[k].run.Workflow, d.runs[k].run.ID, ev)
	case workflow.MsgStart:
		r, _, err := d.read(m.Workflow, m.Run)
		if ejserver.IsNotFound(err) {
			return true
		}
		if err != nil {
			return false
		}
		if r.State != workflow.RunPending {
			return true
		}
		w := d.defs[m.Workflow]
		if r.Trigger == workflow.TriggerSchedule && w.Overlap != workflow.OverlapAllow {
			var others []*loaded
			for _, o := range d.runs {
				if o.run.Workflow == m.Workflow && o.run.ID != m.Run && o.run.State == workflow.RunRunning {
					others = append(others, o)
				}
			}
			if len(others) > 0 && w.Overlap != workflow.OverlapReplace {
				return d.step(m.Workflow, m.Run, workflow.Event{Kind: workflow.EventSkip, Reason: "an earlier run was still going (overlap: skip)"})
			}
			for _, o := range others {
				if !d.step(o.run.Workflow, o.run.ID, workflow.Event{Kind: workflow.EventCancel, Reason: "replaced by run " + m.Run + " (overlap: replace)"}) {
					return false
				}
			}
		}
		return d.step(m.Workflow, m.Run, workflow.Event{Kind: workflow.EventStart})
	case workflow.MsgCancel:
		return d.step(m.Workflow, m.Run, workflow.Event{Kind: workflow.EventCancel, Reason: m.Reason})
	case workflow.MsgRetry:
		return d.step(m.Workflow, m.Run, workflow.Event{Kind: workflow.EventRetryFailed})
	}
	return true
}

// step applies an event to a run and writes the result with the triggers of the nodes it fires; on a
// version conflict it reads the run again and decides again. False: try again later.
func (d *duty) step(wf, id string, ev workflow.Event) bool {
	return d.steps(wf, id, []workflow.Event{ev})
}

// steps applies events to a run in order and writes the result once (see step).
func (d *duty) steps(wf, id string, evs []workflow.Event) bool {
	for range 3 {
		lr := d.runs[runKey(wf, id)]
		if lr == nil {
			r, v, err := d.read(wf, id)
			if ejserver.IsNotFound(err) {
				return true
			}
			if err != nil {
				return false
			}
			lr = &loaded{run: r, version: v}
		}
		next, fires, err := d.decide(lr.run, evs)
		if err != nil {
			d.e.log.Info("workflow run: request refused", "workflow", wf, "run", id, "err", err)
			return true
		}
		if next.State == lr.run.State && next.Attempt == lr.run.Attempt && len(fires) == 0 && sameNodes(next, lr.run) {
			return true // nothing changed (a stale event)
		}
		data, err := json.Marshal(next)
		if err != nil {
			return true
		}
		stops := stoppedFires(lr.run, next, d.e.clk.Now())
		d.endingFaults(lr.run, next, evs)
		v, err := d.e.reg.AdvanceRun(d.fence, wf, id, lr.version, data, fires, stops)
		switch {
		case err == nil:
			d.dropTriggers(stops)
			d.follow(next, v)
			d.ended(lr.run, next, len(fires))
			d.writtenFaults(lr.run, next, evs)
			return true
		case errors.Is(err, cluster.ErrRunChanged):
			delete(d.runs, runKey(wf, id)) // read it again
			continue
		case errors.Is(err, cluster.ErrTriggerPending):
			d.e.log.Info("workflow node waits: its job still has a trigger pending", "workflow", wf, "run", id)
			return false
		default:
			d.e.log.Warn("workflow engine: could not write a run", "workflow", wf, "run", id, "err", err)
			return false
		}
	}
	return false
}

// decide applies ev and then the fires its effects ask for: a node whose job cannot be fired (gone,
// disabled, no online instance, no enabled item) fails at once, which may fire or skip more nodes.
func (d *duty) decide(r workflow.Run, evs []workflow.Event) (workflow.Run, []cluster.NodeFire, error) {
	now := d.e.clk.Now()
	var fires []cluster.NodeFire
	events := slices.Clone(evs)
	for len(events) > 0 {
		next, effects, err := workflow.Apply(r, events[0], now)
		if err != nil {
			return r, nil, err
		}
		events = events[1:]
		r = next
		for _, ef := range effects {
			if ef.Kind != workflow.EffectFire {
				continue
			}
			nf, why := d.nodeFire(r, ef, now)
			if why != "" {
				events = append(events, workflow.Event{Kind: workflow.EventNodeEnded, Node: ef.Node, Error: why})
				continue
			}
			r.SetFire(ef.Node, dispatch.FireKey(nf.Request.RequestedAt, "t"+nf.Request.ID))
			fires = append(fires, nf)
		}
	}
	return r, fires, nil
}

// body is a node's items' `workflow` object.
type body struct {
	Name       string               `json:"name"`
	RunID      string               `json:"runId"`
	Node       string               `json:"node"`
	Attempt    int                  `json:"attempt"`
	Parameters json.RawMessage      `json:"parameters,omitempty"`
	Parents    []workflow.ParentEnd `json:"parents"`
}

// nodeFire makes the trigger of a node's fire, or says why the job cannot be fired.
func (d *duty) nodeFire(r workflow.Run, ef workflow.Effect, now time.Time) (cluster.NodeFire, string) {
	n, _ := r.Node(ef.Node)
	snap := d.e.reg.Job(n.Job)
	switch {
	case snap == nil || snap.ConfigErr != nil:
		return cluster.NodeFire{}, "job " + n.Job + " not found"
	case snap.Config.Disabled:
		return cluster.NodeFire{}, "job " + n.Job + " is disabled"
	}
	avail := snap.Available()
	if len(avail) == 0 {
		return cluster.NodeFire{}, "job " + n.Job + " has no online instance (or every server of it is disabled)"
	}
	enabled := 0
	for i := range snap.Config.ShardingTotalCount {
		if !snap.Item(i).Disabled {
			enabled++
		}
	}
	if enabled == 0 {
		return cluster.NodeFire{}, "every item of job " + n.Job + " is disabled"
	}
	parents := ef.Parents
	if parents == nil {
		parents = []workflow.ParentEnd{}
	}
	b, _ := json.Marshal(body{Name: r.Workflow, RunID: r.ID, Node: n.Name, Attempt: r.Attempt, Parameters: r.Parameters, Parents: parents})
	if d.e.cfg.Observer != nil {
		d.e.cfg.Observer.NodeFired(r.Workflow, workflow.StartDelay(r, n.Name, now))
	}
	return cluster.NodeFire{Job: n.Job, Instances: avail, Request: cluster.TriggerRequest{ID: ejserver.NewExecutionID(),
		JobParameter: n.JobParameter, RequestedAt: now.UTC().Truncate(time.Millisecond), Instances: avail, Workflow: b}}, ""
}

// ended records a run that started or ended in this step.
func (d *duty) ended(before, after workflow.Run, fired int) {
	started := before.State == workflow.RunPending && after.State != workflow.RunPending
	finished := !before.State.Ended() && after.State.Ended()
	retried := before.State.Ended() && !after.State.Ended()
	if (started || finished || retried) && d.e.cfg.Recorder != nil {
		if err := d.e.cfg.Recorder.RecordRun(after); err != nil {
			d.e.log.Warn("could not record a workflow run in the history", "workflow", after.Workflow, "run", after.ID, "err", err)
		}
	}
	if started || finished || retried {
		d.tell(after)
	}
	if started && d.e.cfg.Observer != nil {
		d.e.cfg.Observer.RunStarted(after.Workflow)
	}
	if finished {
		if d.endedIn == nil {
			d.endedIn = map[string]bool{}
		}
		d.endedIn[after.Workflow] = true
		lvl := slog.LevelInfo
		if after.State == workflow.RunSkipped && skipWhy(after.Reason) == SkipCalendar {
			lvl = slog.LevelDebug // a per-second workflow on an excluded day: its runs and the metric say it
		}
		d.e.log.Log(context.Background(), lvl, "workflow run ended", "workflow", after.Workflow, "run", after.ID, "state", after.State,
			"reason", after.Reason)
		if d.e.cfg.Observer != nil {
			d.e.cfg.Observer.RunEnded(after.Workflow, after.State, after.EndedAt.Sub(after.CreatedAt))
			if after.State == workflow.RunSkipped {
				d.e.cfg.Observer.RunSkipped(after.Workflow, skipWhy(after.Reason))
			}
		}
	}
}

// firedNodes names the nodes of after whose fire is new since before.
func firedNodes(before, after workflow.Run) []string {
	var out []string
	for _, n := range after.Nodes {
		if p, ok := before.Node(n.Name); n.Fire != "" && (!ok || p.Fire != n.Fire) {
			out = append(out, n.Name)
		}
	}
	return out
}

func sameNodes(a, b workflow.Run) bool {
	return slices.EqualFunc(a.Nodes, b.Nodes, func(x, y workflow.NodeRun) bool { return x.State == y.State && x.Fire == y.Fire })
}
