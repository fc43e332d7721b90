// Package async runs long-running items: it records an item whose receiver answered 202 Accepted under a
// lease, applies the receiver's heartbeats and completions (any peer takes them), and, as one cluster-wide
// duty, watches the leases, POSTs an item again when its lease runs out and ends it when no attempt is left.
// Every decision is lease.Apply's; this package reads and writes the leases (version-checked, so two peers
// can't both apply a change) and carries out what Apply decided.
package async

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/tracing"
	"github.com/ejserver/ejserver/internal/webhook"
)

// Registry is what the manager needs of the ZooKeeper registry (cluster.Registry satisfies it).
type Registry interface {
	Job(name string) *cluster.JobSnapshot
	Me() cluster.Identity
	Lease() bool
	AcceptItem(l lease.Lease, run cluster.Running, runningVersion int32, monitored bool) error
	ReadLease(executionID string) (lease.Lease, int32, error)
	WriteLease(l lease.Lease, version int32, fence any) (itemEnded bool, err error)
	DeleteEnded(executionID string) error
	EndedLeases() ([]string, error)
	WaitLease(ctx context.Context, executionID string) error
	CatchUp(job string, item int, executionID string) (bool, error)
	EndItem(job string, item int, runningVersion int32, done cluster.Completed, clearFailover bool) error
	Leases() ([]string, <-chan struct{}, error)
	JobGone(job string) (bool, error)
	WatcherDuty(mine string) (held bool, node string, fence any, changed <-chan struct{}, err error)
	ResignWatcher(node string)
}

var _ Registry = (*cluster.Registry)(nil)

// Sender delivers an item again (webhook.Sender satisfies it).
type Sender interface {
	Prepare(d webhook.Delivery) *webhook.Prepared
	Send(ctx context.Context, p *webhook.Prepared) webhook.Result
}

// Recorder keeps execution history without blocking (history.Writer satisfies it).
// EnqueueCommitted waits for the record's commit (ended leases' records go from ZooKeeper only after it).
type Recorder interface {
	Enqueue(e ejserver.Execution) bool
	EnqueueCommitted(ctx context.Context, e ejserver.Execution) error
	EnqueueTrace(t ejserver.StatusTrace) bool
}

// History looks an execution up once its lease record is gone (nil: no look-up).
type History interface {
	GetExecution(ctx context.Context, id string) (ejserver.Execution, error)
}

// Observer is told what happens to accepted items, for metrics. Methods must be cheap.
type Observer interface {
	Accepted(job string)
	Callback(kind, outcome string)
	Ended(job string, state lease.State)
	Expired(job string)
	Running(n int)
}

// Follower follows the ends of accepted items whose fire is followed (Lease.Fire set).
type Follower interface {
	LeaseEnded(l lease.Lease)
}

type nopObserver struct{}

func (nopObserver) Accepted(string)           {}
func (nopObserver) Callback(string, string)   {}
func (nopObserver) Ended(string, lease.State) {}
func (nopObserver) Expired(string)            {}
func (nopObserver) Running(int)               {}

type nopRecorder struct{}

func (nopRecorder) Enqueue(ejserver.Execution) bool        { return true }
func (nopRecorder) EnqueueTrace(ejserver.StatusTrace) bool { return true }

func (nopRecorder) EnqueueCommitted(context.Context, ejserver.Execution) error { return nil }

// Config configures a Manager.
type Config struct {
	Registry Registry
	Sender   Sender
	Recorder Recorder
	History  History
	Observer Observer
	// Follower, if set, hears every lease end that names a fire (the job's fires are followed for alerts or
	// hooks: alert.Service satisfies it). It must return at once.
	Follower Follower
	// Secret keys the callback tokens; every peer of the cluster must hold the same one.
	Secret []byte
	// AdvertiseURL is this peer's API base URL as receivers reach it (callbacks go to {AdvertiseURL}/api/v1/executions/{id}).
	AdvertiseURL string
	// Retention is how long an ended lease's record stays in ZooKeeper (in a folder of its own, apart from the
	// live leases the watcher lists) so that a repeated completion gets the same answer from any peer (default
	// 10 minutes); after it the history store answers.
	Retention time.Duration
	// EarlyWait bounds how long a callback waits for the lease of a 202 it overtook (default 5 s).
	EarlyWait time.Duration
	// Resends bounds the re-POSTs in flight at once on the watcher (default 64).
	Resends int
	// Tracer records the callbacks' spans (nil: tracing.Off).
	Tracer *tracing.Tracer
	Clock  clock.Clock
	Logger *slog.Logger
}

// Manager is this peer's side of long-running items: Accept (from the executor), Heartbeat and Complete
// (from the API), and the lease watcher (Start/Stop), which runs while this peer holds the duty.
type Manager struct {
	cfg Config
	reg Registry
	clk clock.Clock
	log *slog.Logger
	me  cluster.Identity

	tokens      *lease.Minter // of cfg.Secret
	resendSlots chan struct{}

	mu      sync.Mutex
	started bool
	stopped bool
	stop    chan struct{}
	wg      sync.WaitGroup
	holder  bool
}

// New returns a manager. Its watcher runs from Start to Stop; Accept and the callbacks work without it.
func New(cfg Config) (*Manager, error) {
	if len(cfg.Secret) < lease.MinSecretLen {
		return nil, fmt.Errorf("callback secret: at least %d bytes", lease.MinSecretLen)
	}
	if cfg.AdvertiseURL == "" {
		return nil, errors.New("advertise URL: needed for the callback URLs")
	}
	cfg.AdvertiseURL = strings.TrimRight(cfg.AdvertiseURL, "/")
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 10 * time.Minute
	}
	if cfg.EarlyWait <= 0 {
		cfg.EarlyWait = 5 * time.Second
	}
	if cfg.Resends <= 0 {
		cfg.Resends = 64
	}
	return &Manager{cfg: cfg, reg: cfg.Registry, clk: cfg.Clock, log: cfg.Logger, me: cfg.Registry.Me(),
		tokens: lease.NewMinter(cfg.Secret), resendSlots: make(chan struct{}, cfg.Resends), stop: make(chan struct{})}, nil
}

// CallbackURL is the base of an execution's callbacks.
func (m *Manager) CallbackURL(executionID string) string {
	return m.cfg.AdvertiseURL + "/api/v1/executions/" + executionID
}

// Callback returns a function that gives each request of an execution its callback URL and token.
func (m *Manager) Callback(executionID string) func(iteration, attempt int) (string, string) {
	base := m.CallbackURL(executionID)
	return func(iteration, attempt int) (string, string) {
		return base, m.tokens.Token(executionID, iteration, attempt)
	}
}

// AcceptRequest is an item whose request the receiver answered 202 Accepted.
type AcceptRequest struct {
	// Lease holds the execution's identity, the request's Iteration and Attempt, and its Deadline.
	Lease lease.Lease
	// Started is when the item's first request started.
	Started    time.Time
	Policy     ejserver.AsyncPolicy
	StatusCode int
	// Run is the item's running node, RunningVersion its version (0: created by this run) and Monitored
	// whether there is one (monitorExecution).
	Run            cluster.Running
	RunningVersion int32
	Monitored      bool
}

// Accept records an accepted item under its lease: from now on the lease, not this peer, decides when the
// item ends. It reports whether the lease was recorded.
func (m *Manager) Accept(req AcceptRequest) error {
	now := m.clk.Now()
	l := lease.Accept(lease.Accepted{Lease: req.Lease, At: now, Started: req.Started,
		LeaseFor: req.Policy.Lease(), MaxDuration: req.Policy.MaxDuration()})
	l.StatusCode = req.StatusCode
	err := m.reg.AcceptItem(l, req.Run, req.RunningVersion, req.Monitored)
	var oe *cluster.OpError
	if errors.As(err, &oe) && oe.Op > 0 {
		// the running node is no longer this run's (a failover took the item while the request was out):
		// keep the lease all the same, so the receiver's callbacks are heard
		m.log.Warn("accepted item's running node changed meanwhile; recording its lease alone", "job", l.JobName,
			"item", l.ShardingItem, "execution_id", l.ExecutionID, "err", err)
		err = m.reg.AcceptItem(l, req.Run, req.RunningVersion, false)
	}
	if err != nil {
		return fmt.Errorf("record the lease of execution %s: %w", l.ExecutionID, err)
	}
	m.cfg.Observer.Accepted(l.JobName)
	m.cfg.Recorder.Enqueue(Record(l))
	return nil
}

// Record is the history record of a lease: running (CompletedAt zero) until it ends.
func Record(l lease.Lease) ejserver.Execution {
	e := ejserver.Execution{
		ID: l.ExecutionID, JobName: l.JobName, TaskID: l.TaskID, ShardingItem: l.ShardingItem,
		ShardingTotalCount: l.ShardingTotalCount, Source: ejserver.Source(l.Source), InstanceID: l.InstanceID,
		IP: l.IP, Hostname: l.Hostname, ScheduledAt: l.ScheduledAt, StartedAt: l.StartedAt,
		StatusCode: l.StatusCode, Attempts: l.Attempt, Async: true, State: string(l.State), Message: l.Message,
		HeartbeatAt: l.HeartbeatAt, Output: l.Output,
	}
	if l.Progress != nil {
		p := *l.Progress
		e.Progress = &p
	}
	if !l.State.Ended() {
		// the history keeps the running record with the latest HeartbeatAt: a state change without a
		// heartbeat (a re-POST) must order after the heartbeat before it
		e.LeaseExpiresAt = l.DueAt()
		if l.UpdatedAt.After(e.HeartbeatAt) {
			e.HeartbeatAt = l.UpdatedAt
		}
		return e
	}
	e.CompletedAt, e.Success = l.EndedAt, l.State == lease.Succeeded
	e.DurationMs = l.EndedAt.Sub(l.StartedAt).Milliseconds()
	e.FailureCause = l.Cause
	e.HeartbeatAt = l.EndedAt
	return e
}

// policy reads what the job says of a lease's retries now.
func (m *Manager) policy(l lease.Lease) lease.Policy {
	snap := m.reg.Job(l.JobName)
	if snap == nil || snap.ConfigErr != nil {
		return lease.Policy{MaxAttempts: 1, Paused: true}
	}
	cfg := snap.Config
	window := cfg.Webhook.ConnectTimeout() + cfg.Webhook.Timeout()
	if cfg.Retry.MaxAttempts > 1 {
		window += time.Duration(cfg.Retry.MaxAttempts) * (cfg.Webhook.ConnectTimeout() + cfg.Webhook.Timeout() +
			time.Duration(cfg.Retry.MaxBackoffMs)*time.Millisecond)
	}
	return lease.Policy{
		MaxAttempts:  cfg.Retry.MaxAttempts,
		Streaming:    cfg.JobType == ejserver.JobTypeDataflow && cfg.StreamingProcess,
		Paused:       cfg.Disabled,
		ResendWindow: window + cfg.Async.Lease(),
	}
}

// apply reads the lease, applies ev and writes the result, again on a conflict, and carries out the
// effects. It returns the decision that was written (or refused).
func (m *Manager) apply(executionID string, ev func() lease.Event, fence any) (lease.Decision, error) {
	return m.applyRead(executionID, nil, -1, ev, fence)
}

// applyRead is apply starting from a lease already read (read nil: read it first).
func (m *Manager) applyRead(executionID string, read *lease.Lease, version int32, ev func() lease.Event, fence any) (lease.Decision, error) {
	for range 8 {
		var l lease.Lease
		if read != nil {
			l, read = *read, nil
		} else {
			var err error
			if l, version, err = m.reg.ReadLease(executionID); err != nil {
				return lease.Decision{}, err
			}
		}
		d := lease.Apply(l, ev(), m.policy(l))
		if d.Refusal != lease.Applied || !d.Changed {
			if l.State.Ended() {
				m.rerecord(l)
			}
			return d, nil
		}
		itemEnded, err := m.reg.WriteLease(d.Lease, version, fence)
		if errors.Is(err, cluster.ErrLeaseChanged) || errors.Is(err, cluster.ErrNoLease) {
			continue // written or ended by another peer meanwhile: decide again on what it wrote
		} else if err != nil {
			return d, err
		}
		m.effects(d, itemEnded)
		return d, nil
	}
	return lease.Decision{}, fmt.Errorf("lease of execution %s: it keeps changing", executionID)
}

// rerecord writes an ended lease's history record again, when an event finds the lease ended already. The
// write that ended it may have landed in ZooKeeper while its answer was lost with the connection: the peer
// that made it then saw an error and carried out none of the effects, and the receiver, told 503, sends its
// completion again, to this peer or another. Without this the end would be silently missing from the
// history, the execution RUNNING there for ever (found by the nemesis soak). The record is an idempotent
// upsert, so a plain repeat costs one write.
func (m *Manager) rerecord(l lease.Lease) {
	m.cfg.Recorder.Enqueue(Record(l))
}

// effects carries out what a written decision asks for (itemEnded: the lease's write recorded the item's end).
func (m *Manager) effects(d lease.Decision, itemEnded bool) {
	l := d.Lease
	switch {
	case d.Ended:
		m.finish(l, itemEnded)
	case d.Resend:
		m.cfg.Recorder.Enqueue(Record(l)) // RETRYING, with the attempt being sent
		m.resend(l)
	default:
		m.cfg.Recorder.Enqueue(Record(l))
	}
}

// finish records an ended lease: the item's completed node and history, its running node released and, if
// fires found the item running meanwhile, one MISFIRE catch-up handed to the item's owner. itemEnded: the
// lease's write released the running node and wrote the completed node (WriteLease); a failover run's
// failover nodes are still to clear.
func (m *Manager) finish(l lease.Lease, itemEnded bool) {
	m.cfg.Recorder.Enqueue(Record(l))
	m.cfg.Observer.Ended(l.JobName, l.State)
	if l.State == lease.Expired {
		m.cfg.Observer.Expired(l.JobName)
	}
	if l.Fire != "" && m.cfg.Follower != nil {
		m.cfg.Follower.LeaseEnded(l)
	}
	snap := m.reg.Job(l.JobName)
	if snap == nil {
		return // the job is gone, and its nodes with it
	}
	if failover := l.Source == string(ejserver.SourceFailover); !itemEnded || failover {
		if err := m.reg.EndItem(l.JobName, l.ShardingItem, -1, cluster.CompletedOf(l), failover); err != nil {
			m.log.Warn("could not record the end of an accepted item", "job", l.JobName, "item", l.ShardingItem,
				"execution_id", l.ExecutionID, "err", err)
		}
	}
	// its running node went with the lease's end (WriteLease); a fire that found it running meanwhile gets
	// its one catch-up now
	misfire := false
	if snap.Config.Misfire && !snap.Config.Disabled {
		var err error
		if misfire, err = m.reg.CatchUp(l.JobName, l.ShardingItem, l.ExecutionID); err != nil {
			m.log.Warn("could not hand on the catch-up of an accepted item", "job", l.JobName, "item", l.ShardingItem,
				"execution_id", l.ExecutionID, "err", err)
		}
	}
	level := slog.LevelInfo
	if l.State != lease.Succeeded {
		level = slog.LevelWarn
	}
	m.log.Log(context.Background(), level, "accepted item ended", "job", l.JobName, "item", l.ShardingItem,
		"execution_id", l.ExecutionID, "state", string(l.State), "attempt", l.Attempt, "cause", l.Cause,
		"misfire_catch_up", misfire)
}

// ErrNotFound: no execution of that id is known.
var ErrNotFound = errors.New("no such execution")
