package alert

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/notify"
)

// Registry is what the alert edges need from ZooKeeper (cluster.Registry satisfies it).
type Registry interface {
	Job(name string) *cluster.JobSnapshot
	Me() cluster.Identity
	RecordFireStart(job, fire, peer string, expected int, items []int, data []byte, guarantee bool, claim *cluster.TriggerClaim) (string, error)
	RecordFireEnd(job, fire, peer string, items []int, data []byte, guarantee bool) (string, error)
	TallyFire(job, fire string) (cluster.FireTally, error)
	FireRecordData(job, fire string, names []string) ([][]byte, error)
	FenceFire(job, fire, fence string) (bool, error)
	CloseFire(job, fire string, t cluster.FireTally, report []byte) error
	FenceEvent(job, key string) (bool, error)
	EventFences(job string) ([]string, error)
	DropEventFence(job, key string) error
	ClearGuarantee(job, which string) error
	ReadAlertState(job string) ([]byte, int32, error)
	WriteAlertState(job string, data []byte, version int32) error
	DropAlertState(job string) error
	ReadAlertDefaults() ([]byte, error)
	WriteAlertDefaults(data []byte) error
}

var (
	_ Registry          = (*cluster.Registry)(nil)
	_ dispatch.Follower = (*Service)(nil)
)

// ServiceConfig configures a Service.
type ServiceConfig struct {
	Registry  Registry
	Deliverer notify.Deliverer
	Namespace string
	// DefaultChannel finds the cluster's default channel of a kind (for jobErrorHandlerType EMAIL, DINGTALK,
	// WECHAT); nil: none.
	DefaultChannel DefaultChannel
	// Hooks posts the once-per-fire hooks; nil: hooks are not sent.
	Hooks  *HookPoster
	Clock  clock.Clock
	Logger *slog.Logger
	// Tick is how often quiet-period digests, partial notifications, RUNNING_LONG and fires waiting on
	// vanished peers are looked at (default 1 s).
	Tick time.Duration
	// SweepEvery is how often a fire whose items here have all ended, but not the whole fire, is looked up
	// in ZooKeeper (default 2 s).
	SweepEvery time.Duration
	// LostGrace is how long a fire waits for failover to end the items of a vanished peer (failover on), or
	// for items nobody started, before they are reported LOST (default 30 s).
	LostGrace time.Duration
	// Queue bounds the work waiting for ZooKeeper (default 4096): past it, events are dropped and counted.
	Queue int
}

// Service is the alert edge of one peer: it follows the fires of jobs with alert rules or hooks (the
// dispatch.Follower and async.Follower), keeps each fire's ledger in ZooKeeper, fences each event so that
// one peer of the cluster decides it, applies the rules (Decide) to the job's state under a version check
// and hands the notifications to the Deliverer and the hooks to the HookPoster. Nothing here blocks
// dispatch: work goes through a bounded queue served by one goroutine.
type Service struct {
	cfg ServiceConfig
	reg Registry
	log *slog.Logger
	clk clock.Clock

	defaults atomic.Pointer[ejserver.Alerts]
	out      atomic.Pointer[outlets]

	peer string // this peer's tag in the fire ledger's record names

	mu          sync.Mutex
	fires       map[string]*localFire // by job + "/" + key
	digestDue   map[string]time.Time  // jobs whose state holds a quiet-period digest, and when it is due
	fencesSwept map[string]time.Time  // jobs whose old event fences this peer dropped, and when

	queue   chan func()
	dropped atomic.Int64
	undeliv atomic.Int64
	sent    atomic.Int64

	startOnce, stopOnce sync.Once
	stop                chan struct{}
	wg                  sync.WaitGroup
}

// NewService returns a service; Start runs it.
func NewService(cfg ServiceConfig) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = 2 * time.Second
	}
	if cfg.LostGrace <= 0 {
		cfg.LostGrace = 30 * time.Second
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 4096
	}
	s := &Service{cfg: cfg, reg: cfg.Registry, log: cfg.Logger, clk: cfg.Clock, fires: map[string]*localFire{},
		digestDue: map[string]time.Time{}, fencesSwept: map[string]time.Time{}, peer: peerTag(cfg.Registry.Me().InstanceID),
		queue: make(chan func(), cfg.Queue), stop: make(chan struct{})}
	s.defaults.Store(&ejserver.Alerts{})
	s.out.Store(&outlets{deliver: cfg.Deliverer, defaultChannel: cfg.DefaultChannel})
	return s
}

// outlets are where decisions go: set with the config, or by Use once the channels exist.
type outlets struct {
	deliver        notify.Deliverer
	defaultChannel DefaultChannel
}

// Use sets the Deliverer and the default-channel lookup (the channels start after dispatch, which the
// service follows from the start).
func (s *Service) Use(d notify.Deliverer, dc DefaultChannel) {
	s.out.Store(&outlets{deliver: d, defaultChannel: dc})
}

// Start loads the cluster's default rules and starts the worker and the ticker.
func (s *Service) Start() error {
	err := s.loadDefaults()
	s.startOnce.Do(func() {
		s.wg.Add(2)
		go s.work()
		go s.ticker()
	})
	return err
}

// Stop ends the worker and the ticker (work still queued is dropped); safe twice and before Start.
func (s *Service) Stop() {
	s.stopOnce.Do(func() { close(s.stop) })
	s.startOnce.Do(func() {}) // a Start after Stop starts nothing
	s.wg.Wait()
}

// Stats are counts for tests and logs: events dropped on a full queue, notifications that had no channel
// to go to (an error handler without a default channel of its kind), notifications handed to the Deliverer.
func (s *Service) Stats() (dropped, undeliverable, sent int64) {
	return s.dropped.Load(), s.undeliv.Load(), s.sent.Load()
}

func (s *Service) work() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case fn := <-s.queue:
			fn()
		}
	}
}

func (s *Service) ticker() {
	defer s.wg.Done()
	t := s.clk.NewTimer(s.cfg.Tick)
	defer t.Stop()
	refresh := s.clk.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C():
		}
		now := s.clk.Now()
		s.enqueue(func() { s.tick(now) })
		if now.Sub(refresh) >= 10*time.Second {
			refresh = now
			s.enqueue(func() { _ = s.loadDefaults() })
		}
		t.Reset(s.cfg.Tick)
	}
}

// enqueue hands work to the worker without ever blocking the caller.
func (s *Service) enqueue(fn func()) {
	select {
	case s.queue <- fn:
	default:
		if s.dropped.Add(1)%100 == 1 {
			s.log.Warn("alert work queue full: events dropped", "dropped", s.dropped.Load())
		}
	}
}

// Defaults returns the cluster's default alert rules.
func (s *Service) Defaults() ejserver.Alerts { return *s.defaults.Load() }

// SetDefaults validates and stores the cluster's default alert rules (every peer reads them within 10 s).
func (s *Service) SetDefaults(a ejserver.Alerts) error {
	if err := a.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := s.reg.WriteAlertDefaults(b); err != nil {
		return fmt.Errorf("store the default alert rules: %w", err)
	}
	a = a.Clone()
	s.defaults.Store(&a)
	return nil
}

func (s *Service) loadDefaults() error {
	b, err := s.reg.ReadAlertDefaults()
	if err != nil {
		return fmt.Errorf("read the default alert rules: %w", err)
	}
	var a ejserver.Alerts
	if len(b) > 0 {
		if err := json.Unmarshal(b, &a); err != nil {
			return fmt.Errorf("default alert rules are not readable: %w", err)
		}
	}
	s.defaults.Store(&a)
	return nil
}

// Follows reports whether a job's fires are followed: it has rules or hooks, or the cluster has default
// rules, or its jobErrorHandlerType sends mail or chat.
func (s *Service) Follows(cfg *ejserver.JobConfig) bool {
	return len(cfg.Alerts.Rules) > 0 || !cfg.Hooks.IsZero() || len(s.defaults.Load().Rules) > 0 ||
		ejserver.ErrorHandlerChannelKind(cfg.JobErrorHandlerType) != ""
}

// policy resolves a job's alert policy now (nil snapshot: the job is gone).
func (s *Service) policy(job string) (Policy, *cluster.JobSnapshot) {
	snap := s.reg.Job(job)
	if snap == nil || snap.ConfigErr != nil {
		return Policy{Namespace: s.cfg.Namespace, Job: job}, nil
	}
	return PolicyFor(s.cfg.Namespace, *snap.Config, *s.defaults.Load(), s.out.Load().defaultChannel), snap
}

// apply runs fn on the job's alert state under a version check (again on a concurrent write) and delivers
// what it decided once the state is written: whoever writes the state sends, and only them.
func (s *Service) apply(p Policy, fn func(State, time.Time) (State, []Outgoing)) {
	node := StateNode{
		Read:  func() ([]byte, int32, error) { return s.reg.ReadAlertState(p.Job) },
		Write: func(data []byte, version int32) error { return s.reg.WriteAlertState(p.Job, data, version) },
	}
	next, out, err := Commit(node, s.clk.Now, fn)
	if err != nil {
		s.log.Warn("could not apply an alert event", "job", p.Job, "err", err)
		return
	}
	s.mu.Lock()
	if due := NextFlush(next); due.IsZero() {
		delete(s.digestDue, p.Job)
	} else {
		s.digestDue[p.Job] = due
	}
	s.mu.Unlock()
	s.deliver(out)
}

func (s *Service) deliver(out []Outgoing) {
	for _, o := range out {
		n := o.Notification
		if o.Undeliverable {
			// still handed on: the Deliverer counts it (outcome unknown) and records it in the history
			s.undeliv.Add(1)
			s.log.Warn("notification has no channel to go to (no default channel of its kind)", "job", n.Job,
				"rule", n.Rule, "kind", string(n.Kind), "channels", o.Channels)
		}
		s.sent.Add(1)
		s.log.Info("notification", "job", n.Job, "rule", n.Rule, "kind", string(n.Kind), "id", n.ID,
			"channels", o.Channels, "folded", n.Folded, "partial", n.Partial)
		if d := s.out.Load().deliver; d != nil {
			d.Deliver(n, o.Channels)
		}
	}
}

// peerTag names this peer in the fire ledger's record names: 8 hex digits of its instance id.
func peerTag(instance string) string {
	sum := sha256.Sum256([]byte(instance))
	return hex.EncodeToString(sum[:4])
}

// single decides an event not tied to a fire's end, fenced so that one peer of the cluster decides it:
// at most one per (job, fire, kind).
func (s *Service) single(job, fire string, e Event) {
	p, snap := s.policy(job)
	if snap == nil || !p.Wants(e.Kind) {
		return
	}
	won, err := s.reg.FenceEvent(job, fire+"-"+string(e.Kind))
	if err != nil {
		s.log.Warn("could not fence an alert event", "job", job, "kind", string(e.Kind), "err", err)
		return
	}
	if !won {
		return // another peer decides it
	}
	e.Type, e.Fire = Single, fire
	s.apply(p, func(st State, now time.Time) (State, []Outgoing) { return Decide(p, st, e, now) })
}

// tick flushes due digests and looks after the fires followed here.
func (s *Service) tick(now time.Time) {
	s.mu.Lock()
	var due []string
	for job, at := range s.digestDue {
		if !now.Before(at) {
			due = append(due, job)
		}
	}
	s.mu.Unlock()
	for _, job := range due {
		p, snap := s.policy(job)
		if snap == nil {
			s.mu.Lock()
			delete(s.digestDue, job)
			s.mu.Unlock()
			continue
		}
		s.apply(p, func(st State, now time.Time) (State, []Outgoing) { return Flush(p, st, now) })
	}
	s.sweep(now)
}

// ForgetJob drops a deleted job's alert state and event fences (any peer may: it is idempotent). The fires
// in flight close as usual, without notifications or hooks: the job is gone.
func (s *Service) ForgetJob(job string) {
	s.enqueue(func() {
		if err := s.reg.DropAlertState(job); err != nil {
			s.log.Debug("could not drop a deleted job's alert state", "job", job, "err", err)
		}
		s.mu.Lock()
		delete(s.digestDue, job)
		delete(s.fencesSwept, job)
		s.mu.Unlock()
	})
}

// LeaseEnded records the end of an accepted item in its fire's ledger (async.Follower), and tells an
// expiry as LEASE_EXPIRED.
func (s *Service) LeaseEnded(l lease.Lease) {
	r := ItemResult{Item: l.ShardingItem, Outcome: string(l.State), Status: l.StatusCode, Error: l.Cause,
		ExecutionID: l.ExecutionID, Instance: l.InstanceID, Source: l.Source, StartedAt: l.StartedAt,
		DurationMs: l.EndedAt.Sub(l.StartedAt).Milliseconds()}
	if l.Source == string(ejserver.SourceWorkflow) || l.Source == string(ejserver.SourceFailover) {
		r.Output = asyncOutput(l.Output)
	}
	s.itemEnded(l.JobName, l.Fire, r)
	if l.State == lease.Expired {
		s.enqueue(func() {
			s.single(l.JobName, l.Fire, Event{Kind: notify.KindLeaseExpired, ScheduledAt: l.ScheduledAt,
				Items: []notify.Sample{r.sample()}, Detail: l.Cause})
		})
	}
}
