package wfalert

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/alert"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/notify"
	"github.com/ejserver/ejserver/internal/workflow"
	"github.com/ejserver/ejserver/internal/workflow/engine"
)

// Registry is what the workflows' alerts need of ZooKeeper (cluster.Registry satisfies it).
type Registry interface {
	GetWorkflow(name string) ([]byte, int32, error)
	ReadRun(wf, id string) ([]byte, int32, error)
	FenceWorkflowEvent(wf, key string) (bool, error)
	WorkflowEventFences(wf string) ([]string, error)
	DropWorkflowEventFence(wf, key string) error
	ReadWorkflowAlertState(wf string) ([]byte, int32, error)
	WriteWorkflowAlertState(wf string, data []byte, version int32) error
}

var (
	_ Registry           = (*cluster.Registry)(nil)
	_ engine.RunListener = (*Service)(nil)
)

// Config configures a Service.
type Config struct {
	Registry  Registry
	Deliverer notify.Deliverer
	Namespace string
	// ConsoleURL is the console's base URL for the notifications' links ("": no link).
	ConsoleURL string
	Clock      clock.Clock
	Logger     *slog.Logger
	// Tick is how often due digests and long runs are looked at (default 1 s).
	Tick time.Duration
	// Queue bounds the runs waiting to be looked at (default 1024): past it, they are dropped and logged.
	Queue int
}

// Service tells workflow runs' events through the workflows' alert rules, on the peer that holds the engine
// duty (it is the engine's RunListener). Work goes through a bounded queue served by one goroutine.
type Service struct {
	cfg Config
	reg Registry
	clk clock.Clock
	log *slog.Logger

	// owned by the worker goroutine
	active    map[string]workflow.Run // runs going on, by workflow/id, whose workflow has a RUNNING_LONG rule
	digestDue map[string]time.Time    // workflows whose state holds a quiet-period digest, and when it is due
	swept     map[string]time.Time    // workflows whose old fences were dropped, and when

	queue               chan func()
	startOnce, stopOnce sync.Once
	stop                chan struct{}
	wg                  sync.WaitGroup
}

// New returns a service; Start runs it.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 1024
	}
	return &Service{cfg: cfg, reg: cfg.Registry, clk: cfg.Clock, log: cfg.Logger,
		active: map[string]workflow.Run{}, digestDue: map[string]time.Time{}, swept: map[string]time.Time{},
		queue: make(chan func(), cfg.Queue), stop: make(chan struct{})}
}

// Start starts the worker.
func (s *Service) Start() {
	s.startOnce.Do(func() {
		s.wg.Add(1)
		go s.work()
	})
}

// Stop ends the worker (work still queued is dropped); safe twice and before Start.
func (s *Service) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.startOnce.Do(func() {}) // a Start after Stop starts nothing
	s.wg.Wait()
}

// RunChanged takes a run the engine wrote or loaded (engine.RunListener); it never blocks.
func (s *Service) RunChanged(r workflow.Run) {
	select {
	case s.queue <- func() { s.run(r) }:
	default:
		s.log.Warn("workflow alerts: queue full, a run's change is not looked at", "workflow", r.Workflow, "run", r.ID)
	}
}

func (s *Service) work() {
	defer s.wg.Done()
	t := s.clk.NewTimer(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case fn := <-s.queue:
			fn()
		case <-t.C():
			s.tick(s.clk.Now())
			t.Reset(s.cfg.Tick)
		}
	}
}

// policy reads a workflow's alert policy now (false: the workflow is gone or has no rules).
func (s *Service) policy(wf string) (alert.Policy, bool) {
	data, _, err := s.reg.GetWorkflow(wf)
	if err != nil {
		return alert.Policy{}, false
	}
	var w workflow.Workflow
	if json.Unmarshal(data, &w) != nil {
		return alert.Policy{}, false
	}
	p := alert.WorkflowPolicy(s.cfg.Namespace, wf, w.Alerts)
	return p, p.Active()
}

func (s *Service) run(r workflow.Run) {
	k := r.Workflow + "/" + r.ID
	if !r.State.Ended() {
		if p, ok := s.policy(r.Workflow); ok && p.RunningLonger > 0 && p.Wants(notify.KindRunningLong) {
			s.active[k] = r
		}
		return
	}
	delete(s.active, k)
	e, key, ok := End(r, s.cfg.ConsoleURL)
	if !ok || s.clk.Now().Sub(r.EndedAt) > TellWithin {
		return
	}
	p, ok := s.policy(r.Workflow)
	if !ok || !p.Wants(e.Kind) {
		return
	}
	s.tell(p, e, key)
}

// tell fences an event (one peer of the cluster wins) and decides it under the workflow's alert state.
func (s *Service) tell(p alert.Policy, e alert.Event, key string) {
	won, err := s.reg.FenceWorkflowEvent(p.Workflow, key)
	if err != nil {
		s.log.Warn("workflow alerts: could not fence an event", "workflow", p.Workflow, "kind", string(e.Kind), "err", err)
		return
	}
	if !won {
		return // told already, by this peer or another
	}
	s.apply(p, func(st alert.State, now time.Time) (alert.State, []alert.Outgoing) {
		return alert.Decide(p, st, e, now)
	})
	s.dropOldFences(p.Workflow)
}

func (s *Service) apply(p alert.Policy, fn func(alert.State, time.Time) (alert.State, []alert.Outgoing)) {
	node := alert.StateNode{
		Read:  func() ([]byte, int32, error) { return s.reg.ReadWorkflowAlertState(p.Workflow) },
		Write: func(data []byte, v int32) error { return s.reg.WriteWorkflowAlertState(p.Workflow, data, v) },
	}
	next, out, err := alert.Commit(node, s.clk.Now, fn)
	if err != nil {
		s.log.Warn("workflow alerts: could not apply an event", "workflow", p.Workflow, "err", err)
		return
	}
	if due := alert.NextFlush(next); due.IsZero() {
		delete(s.digestDue, p.Workflow)
	} else {
		s.digestDue[p.Workflow] = due
	}
	for _, o := range out {
		n := o.Notification
		run := ""
		if n.Workflow != nil {
			run = n.Workflow.RunID
		}
		s.log.Info("notification", "workflow", p.Workflow, "run", run, "rule", n.Rule, "kind", string(n.Kind),
			"id", n.ID, "channels", o.Channels, "folded", n.Folded)
		if s.cfg.Deliverer != nil {
			s.cfg.Deliverer.Deliver(n, o.Channels)
		}
	}
}

// tick sends due digests and tells the runs that passed their RUNNING_LONG threshold.
func (s *Service) tick(now time.Time) {
	for wf, due := range s.digestDue {
		if now.Before(due) {
			continue
		}
		p, ok := s.policy(wf)
		if !ok {
			delete(s.digestDue, wf)
			continue
		}
		s.apply(p, func(st alert.State, now time.Time) (alert.State, []alert.Outgoing) { return alert.Flush(p, st, now) })
	}
	for k, r := range s.active {
		p, ok := s.policy(r.Workflow)
		if !ok || p.RunningLonger <= 0 {
			delete(s.active, k)
			continue
		}
		due := LongDue(r, p.RunningLonger)
		if due.IsZero() || now.Before(due) {
			continue
		}
		delete(s.active, k) // told (or not to be told) once per attempt: a retry is told to us again
		// the run as ZooKeeper has it now: it may have ended on another peer since this one followed it
		data, _, err := s.reg.ReadRun(r.Workflow, r.ID)
		var cur workflow.Run
		if err != nil || json.Unmarshal(data, &cur) != nil || cur.Attempt != r.Attempt {
			continue
		}
		if e, key, ok := Long(cur, p.RunningLonger, now, s.cfg.ConsoleURL); ok {
			s.tell(p, e, key)
		}
	}
}

// dropOldFences drops, at most every 10 minutes per workflow, the workflow's fences older than FenceAge.
func (s *Service) dropOldFences(wf string) {
	now := s.clk.Now()
	if last, ok := s.swept[wf]; ok && now.Sub(last) < 10*time.Minute {
		return
	}
	s.swept[wf] = now
	keys, err := s.reg.WorkflowEventFences(wf)
	if err != nil {
		return
	}
	for _, k := range keys {
		if at, ok := FenceTime(k); ok && now.Sub(at) > FenceAge {
			_ = s.reg.DropWorkflowEventFence(wf, k)
		}
	}
}
