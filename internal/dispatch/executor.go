package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/async"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/ratelog"
	"github.com/ejserver/ejserver/internal/schedule"
	"github.com/ejserver/ejserver/internal/tracing"
	"github.com/ejserver/ejserver/internal/webhook"
)

// Registry is what the executor needs from the ZooKeeper registry (cluster.Registry satisfies it).
type Registry interface {
	Job(name string) *cluster.JobSnapshot
	// JobAt is Job read through the job's registry entry (cluster.JobRef), when the caller kept it
	JobAt(name string, ref cluster.JobRef) *cluster.JobSnapshot
	Wait(ctx context.Context, name string, cond func(*cluster.JobSnapshot) bool) (*cluster.JobSnapshot, error)
	// PendingReads names the job's reads deciding its items that are queued or running (for a log line)
	PendingReads(job string, items int) string
	BeginItem(job string, item int, ownerVersion int32, run cluster.Running, persistent bool) error
	// BeginItemThen is BeginItem without waiting: then gets its outcome, without blocking, maybe before it returns
	BeginItemThen(job string, item int, ownerVersion int32, run cluster.Running, persistent bool, then func(error))
	EndItem(job string, item int, runningVersion int32, done cluster.Completed, clearFailover bool) error
	// EndItemThen is EndItem without waiting: then gets its outcome, without blocking, maybe before it returns
	EndItemThen(job string, item int, runningVersion int32, done cluster.Completed, clearFailover bool, then func(error))
	SetMisfire(job string, item int) error
	ClearMisfire(job string, item int) error
	ReadRunning(job string, item int) (cluster.Running, int32, bool, error)
	InstanceOnline(job, id string) (bool, error)
	ClearStaleRunning(job string, item int, version int32) error
	EndStaleRunning(job string, item int, version int32, run cluster.Running, now time.Time) error
	LeaseLive(executionID string) (bool, error)
	PeekTrigger(job string) (cluster.TriggerRequest, *cluster.TriggerClaim, bool, error)
	DropTrigger(job string, c *cluster.TriggerClaim) (gone bool, err error)
	CreateTriggers(job string, instances []string, req cluster.TriggerRequest) error
	LastCompleted(job string, item int) (cluster.Completed, bool, error)
	ClockOffset() (time.Duration, bool)
	Peers // ownergone.go
	Lease() bool
	SessionStanding() (cluster.SessionStanding, <-chan struct{})
	Me() cluster.Identity
}

// Sender delivers one item to its webhook (webhook.Sender satisfies it): Prepare before the scheduled time
// does the work that does not depend on when it is sent, so only the request is left for that moment.
type Sender interface {
	Prepare(d webhook.Delivery) *webhook.Prepared
	Send(ctx context.Context, p *webhook.Prepared) webhook.Result
}

// Recorder keeps execution history without blocking (history.Writer satisfies it). EnqueueCommittedThen is
// for an item's end record, which must be in the store before the item's end is acknowledged in ZooKeeper
// (docs/reliability.md): then gets, once and without blocking, the batch's commit (nil) or why it is not known
// to be committed (ctx ended, the record was dropped, or the store is failing: then at once).
type Recorder interface {
	Enqueue(e ejserver.Execution) bool
	EnqueueCommittedThen(ctx context.Context, e ejserver.Execution, then func(error))
	EnqueueTrace(t ejserver.StatusTrace) bool
}

// Async records items whose receiver answered 202 Accepted under a lease, and gives every request its
// callback URL and token (async.Manager satisfies it).
type Async interface {
	Callback(executionID string) func(iteration, attempt int) (url, token string)
	Accept(req async.AcceptRequest) error
}

// LostRecorder records an execution whose instance is gone as ended with an unknown outcome, unless its end
// is in the history already (failover.Lost satisfies it).
type LostRecorder interface {
	Record(job string, item, total int, run cluster.Running) error
}

// Resharder runs the leader's side of resharding (sharding.Coordinator satisfies it). Hold tells it that a
// scheduled fire waits for the job's sharding until release is called: a resharding meanwhile gives items
// only to instances that hold that fire too.
type Resharder interface {
	Reshard(ctx context.Context, job string) error
	Hold(job string, fire time.Time) (release func())
}

// Observer is told what the executor does, for metrics. Methods must be cheap and safe for concurrent use.
type Observer interface {
	Fired(job string, source ejserver.Source)
	Skipped(job string, reason string)
	ItemDone(job string, source ejserver.Source, success bool, lateness, duration time.Duration)
	Misfired(job string)
	// SessionWaited: a fire (or a prepared item) waited for a ZooKeeper session in doubt, then went on
	// (fired) or was skipped (sessionwait.go).
	SessionWaited(job string, waited time.Duration, fired bool)
}

type nopObserver struct{}

func (nopObserver) Fired(string, ejserver.Source)                                        {}
func (nopObserver) Skipped(string, string)                                               {}
func (nopObserver) ItemDone(string, ejserver.Source, bool, time.Duration, time.Duration) {}
func (nopObserver) Misfired(string)                                                      {}
func (nopObserver) SessionWaited(string, time.Duration, bool)                            {}

type nopRecorder struct{}

func (nopRecorder) Enqueue(ejserver.Execution) bool        { return true }
func (nopRecorder) EnqueueTrace(ejserver.StatusTrace) bool { return true }

func (nopRecorder) EnqueueCommittedThen(_ context.Context, _ ejserver.Execution, then func(error)) {
	then(nil)
}

// outcomeWait bounds how long an item whose response has arrived waits for the rest of its burst to leave
// before recording its outcome (Activity.awaitQuiet). A burst of this peer's concurrency bound (256 requests
// by default) leaves in well under that on a small machine; and an item's end is recorded long before a
// 1-second job's next fire is prepared, half a second ahead of it.
const outcomeWait = 250 * time.Millisecond

// DefaultReshardWait is ExecutorConfig.ReshardWait's default.
const DefaultReshardWait = 30 * time.Second

// commitWait bounds how long an item's end waits for its history record to commit before it is acknowledged
// in ZooKeeper all the same (the store answers slowly; a store that fails is not waited for at all).
const commitWait = 5 * time.Second

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	Registry  Registry
	Sender    Sender
	Recorder  Recorder
	Resharder Resharder
	// Async, if set, takes the items a receiver accepted (202) and signs their callbacks; without it a 202 is
	// a success like any 2xx.
	Async Async
	// Lost, if set, records the execution of a stale running node (its instance is gone) as ended with an
	// unknown outcome before the node is cleared; with it, running nodes outlive their peer in every job
	// (failover.Lost satisfies it).
	Lost LostRecorder
	// Activity, if set, is told when requests leave and which prepared items wait for what time.
	Activity *Activity
	Observer Observer
	// Follower, if set, follows the fires of jobs with alert rules or hooks (follow.go).
	Follower Follower
	// NextFire returns a job's next scheduled time (retries never run into it); nil: no bound.
	NextFire func(job string) time.Time
	// ScheduleOf returns a job's schedule (for replayMissedFires); nil disables replaying.
	ScheduleOf func(job string) Schedule
	Clock      clock.Clock
	Logger     *slog.Logger
	// ReshardWait is how long a fire waits for its job's resharding (DefaultReshardWait): a fire of a job that
	// takes late fires waits until its next fire's hand-off when that is later, within
	// schedule.MaxShardingWait; one of a job that refuses them never past its next fire (shardingWait).
	ReshardWait time.Duration
	// FireLead is how long before its scheduled time a fire may be handed off (Scheduler.SetMaxLead): a
	// previous owner may have begun an item that much early.
	FireLead time.Duration
	// SessionGrace is how long past its scheduled time a fire waits for a suspended ZooKeeper session to
	// come back before it is skipped (default 10 s; the peer sets its session timeout), never into the
	// job's next fire (sessionwait.go).
	SessionGrace time.Duration
	// Tracer records spans of fires and items (tracing.Off if nil).
	Tracer *tracing.Tracer
	// Steering and Counters, if set, apply calendars, pause, endAt and remainingFires (steer.go).
	Steering Steering
	Counters FireCounters
	// TriggerRead, if set, is told of each trigger this peer read, before it runs it (a test's fault point).
	TriggerRead func(job string, req cluster.TriggerRequest)
}

// Executor runs fires: for each item this peer owns it records the item as running in the registry,
// POSTs it, records the outcome, and follows up with a misfire catch-up or a queued manual trigger. Every
// item run is a goroutine tracked by the executor; Drain waits for them.
type Executor struct {
	cfg    ExecutorConfig
	tracer *tracing.Tracer
	reg    Registry
	log    *slog.Logger
	clk    clock.Clock
	me     cluster.Identity
	// unrecorded is recordEnd's warning, once per 10 s at most: a saturated history store makes it every item's
	unrecorded *ratelog.Warning
	// statusTracer is the Recorder, if it says whether it takes a task's status traces (StatusTracer): when it
	// does not, a fire builds no task (newTask)
	statusTracer StatusTracer

	mu      sync.Mutex
	running map[itemKey]*itemRun
	jobCtx  map[string]*jobContext // jobctx.go
	status  map[string]*JobStatus
	// marks holds, per job with catchUp all and item, the latest scheduled fire this peer ran or queued, so
	// that items it gains and fires it skipped are looked at (catchup.go).
	marks    map[string]map[int]time.Time
	latest   map[itemKey]time.Time // the latest scheduled fire of each item ended here (Completed.Latest)
	owed     map[itemKey][]time.Time
	closed   bool
	triggers triggerGuard // triggerclaim.go

	wg         sync.WaitGroup
	soft       context.Context // cancelled when draining starts: start nothing new
	softCancel context.CancelFunc
	hard       context.Context // cancelled when the drain bound is reached: abort requests
	hardCancel context.CancelFunc
}

type itemKey struct {
	job  string
	item int
}

// itemRun is an item in flight on this peer and what must follow it.
type itemRun struct {
	misfireAt time.Time // a fire found it running: one catch-up for the latest such fire
	triggers  []fireRequest
	// accepted: the receiver took the work (202); its lease, not this peer, says when it ends
	accepted bool
	// cancel ends the run's requests (CANCEL_PREVIOUS, overlap.go; a workflow run's cancel, cancelfire.go);
	// cancelled: that happened, for cause; fire is the key of the followed fire the run belongs to
	cancel      context.CancelCauseFunc
	executionID string
	cancelled   bool
	cause       error
	fire        string
}

// JobStatus is what this peer knows of a job's firing that the registry does not hold.
type JobStatus struct {
	LastFireAt  time.Time
	ClockError  string // set while the clock check refuses to fire
	SkipReason  string // why the last fire did nothing here, if it did nothing
	Misfires    int64
	SkippedRuns int64 // fires skipped because an item still ran and misfire is off
	// PlannedSkips counts scheduled fires the job's pause, endAt, calendars or remainingFires skipped here.
	PlannedSkips int64

	// decided is the last scheduled fire decided here and the items owned then; pickingUp: its gained items
	// are being looked at; pickAgain: an item node changed meanwhile (gained.go)
	decided              decidedFire
	pickingUp, pickAgain bool
	// replayed: the job's first fire on this peer has looked for fires missed while the whole cluster was
	// down (catchUp last; catchup.go)
	replayed bool
}

// fireRequest is one fire of one job on this peer.
type fireRequest struct {
	job         string
	scheduledAt time.Time
	source      ejserver.Source
	param       *string                 // manual trigger's jobParameter override
	items       []int                   // manual trigger's subset; nil = all of this peer's items
	trigger     *cluster.TriggerRequest // the manual trigger this fire runs, if any
	claim       *cluster.TriggerClaim   // its node, while this peer has not consumed it (triggerclaim.go)
	workflow    json.RawMessage         // a workflow node's fire: its items' `workflow` object
	taskID      string
	task        *task             // the fire's task on this peer, for status traces
	untraced    bool              // the fire's task is not traced (newTask was nil): its items make no task of their own
	params      *itemParams       // the job's shardingItemParameters, parsed once for all the fire's items
	follow      *Fire             // set when the Follower follows the fire
	span        trace.SpanContext // the fire's span: the parent of its items' spans (see startFire)
	jitter      time.Duration     // jitterMs's offset: the requests leave at scheduledAt+jitter (sendAt)
	overlap     bool              // an ALLOW run beside the item's fenced run (overlap.go)
	// session is the ZooKeeper session's standing when the fire began (sessionwait.go)
	session *cluster.SessionStanding
	// ref and next are the scheduler's (Due) for a fire it handed off (scheduled): the job's registry entry,
	// and the job's next fire then (zero: none)
	ref       cluster.JobRef
	next      time.Time
	scheduled bool
}

// NewExecutor returns an executor; it needs no Start.
func NewExecutor(cfg ExecutorConfig) *Executor {
	if cfg.Tracer == nil {
		cfg.Tracer = tracing.Off
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.ReshardWait <= 0 {
		cfg.ReshardWait = DefaultReshardWait
	}
	if cfg.SessionGrace <= 0 {
		cfg.SessionGrace = defaultSessionGrace
	}
	e := &Executor{
		cfg: cfg, tracer: cfg.Tracer, reg: cfg.Registry, log: cfg.Logger, clk: cfg.Clock, me: cfg.Registry.Me(),
		running: map[itemKey]*itemRun{}, jobCtx: map[string]*jobContext{}, status: map[string]*JobStatus{},
		marks: map[string]map[int]time.Time{}, latest: map[itemKey]time.Time{}, owed: map[itemKey][]time.Time{},
	}
	e.unrecorded = ratelog.New(e.log, e.clk, 10*time.Second, "item's end acknowledged before its history record was committed")
	e.statusTracer, _ = cfg.Recorder.(StatusTracer)
	e.hard, e.hardCancel = context.WithCancel(context.Background())
	e.soft, e.softCancel = context.WithCancel(e.hard)
	return e
}

// Fire starts a scheduled fire of job: in the background, or at once on the caller's goroutine when it has
// nothing to run or wait for here (fireHere).
func (e *Executor) Fire(d Due) {
	req := fireRequest{job: d.Job, scheduledAt: d.At, source: ejserver.SourceNormal, ref: d.Ref, next: d.Next, scheduled: true}
	if e.fireHere(&req) {
		return
	}
	spawned := req // the goroutine's own: a capture of req would move it to the heap at every fire
	e.spawn(func() { e.fire(spawned) })
}

// RunFailover re-runs an item this peer claimed from a crashed peer, with the interrupted execution's id.
func (e *Executor) RunFailover(job string, item int, run cluster.Running, runningVersion int32) {
	e.spawn(func() {
		growStack() // the item's run: it sends from this goroutine
		snap := e.reg.Job(job)
		if snap == nil {
			return
		}
		key := itemKey{job, item}
		e.mu.Lock()
		if _, busy := e.running[key]; busy || e.closed {
			e.mu.Unlock()
			e.log.Warn("failover item already running here; leaving it to that run", "job", job, "item", item)
			return
		}
		e.running[key] = &itemRun{}
		e.mu.Unlock()
		req := fireRequest{job: job, scheduledAt: run.ScheduledAt, source: ejserver.SourceFailover,
			taskID: ejserver.TaskID(job, []int{item}, true, e.me.InstanceID), workflow: run.Workflow}
		if run.JobParameter != "" {
			p := run.JobParameter
			req.param = &p
		}
		req.follow = e.followFailover(snap, item, run)
		e.runItem(snap, req, item, run.ExecutionID, runningVersion)
	})
}

// CancelJob stops the job's deliveries between requests (the job was disabled or deleted): no retry, streaming
// iteration or wait for a slot follows; a request already sent runs to its answer.
func (e *Executor) CancelJob(job string) {
	e.mu.Lock()
	jc := e.jobCtx[job]
	delete(e.jobCtx, job)
	delete(e.marks, job) // enabled again, its config's change bounds what counts as missed
	for k := range e.latest {
		if k.job == job {
			delete(e.latest, k)
		}
	}
	e.mu.Unlock()
	if jc != nil {
		jc.cancel(errJobHalted)
	}
}

// Status returns this peer's firing status of job.
func (e *Executor) Status(job string) JobStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.status[job]; st != nil {
		return *st
	}
	return JobStatus{}
}

// Running lists the items of job in flight on this peer.
func (e *Executor) Running(job string) []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []int
	for k := range e.running {
		if k.job == job {
			out = append(out, k.item)
		}
	}
	slices.Sort(out)
	return out
}

// Drain stops starting work, waits up to bound for in-flight items to finish, then aborts the rest and
// waits for them to record their outcome.
func (e *Executor) Drain(bound time.Duration) {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.softCancel()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	if clock.Sleep(e.clk, bound, done) { // the bound passed first
		e.log.Warn("in-flight webhooks did not finish within the shutdown bound; aborting them", "bound", bound)
		e.hardCancel()
		<-done
	}
	e.hardCancel()
}

func (e *Executor) spawn(fn func()) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		growDecideStack()
		fn()
	}()
}

// nextFire is the job's next scheduled time (ExecutorConfig.NextFire), zero when it is not known.
func (e *Executor) nextFire(job string) time.Time {
	if e.cfg.NextFire == nil {
		return time.Time{}
	}
	return e.cfg.NextFire(job)
}

// nextAfter is nextFire(req.job) known without asking the scheduler while it can't have moved on from the fire
// it handed off with req: it does so only when it hands that next fire off, at most FireLead (its max lead)
// before the fire's time. A schedule changed since the hand-off is seen from the next fire on.
func (e *Executor) nextAfter(req *fireRequest) time.Time {
	if req.scheduled && (req.next.IsZero() || e.clk.Now().Before(req.next.Add(-e.cfg.FireLead))) {
		return req.next
	}
	return e.nextFire(req.job)
}

// job is the current snapshot of req's job, read through the scheduler's ref when the fire has one.
func (e *Executor) job(req *fireRequest) *cluster.JobSnapshot { return e.reg.JobAt(req.job, req.ref) }

func (e *Executor) jobStatus(job string) *JobStatus {
	st := e.status[job]
	if st == nil {
		st = &JobStatus{}
		e.status[job] = st
	}
	return st
}

func (e *Executor) skip(req fireRequest, reason string, args ...any) {
	e.skipAt(slog.LevelInfo, req, reason, args...)
}

// skipAt skips the fire and logs it at level: a warning for a fire lost to a fault (its sharding not ready in
// time), which a peer logging warnings only (ejbench's) still shows; information for one the job's own settings
// or the peer's stop skip (skip).
func (e *Executor) skipAt(level slog.Level, req fireRequest, reason string, args ...any) {
	job := req.job
	e.followSkipped(req, reason)
	e.mu.Lock()
	e.jobStatus(job).SkipReason = reason
	e.mu.Unlock()
	e.log.Log(context.Background(), level, "fire skipped: "+reason, append([]any{"job", job, "scheduled_at", req.scheduledAt}, args...)...)
	e.cfg.Observer.Skipped(job, reason)
}

// clockCheck compares this peer's clock with ZooKeeper's, when the job asks for it.
func (e *Executor) clockCheck(maxDiffSeconds int) string {
	if maxDiffSeconds < 0 {
		return ""
	}
	off, ok := e.reg.ClockOffset()
	if !ok {
		return "the clock difference with ZooKeeper is not measured yet"
	}
	if off.Abs() > time.Duration(maxDiffSeconds)*time.Second {
		return fmt.Sprintf("this peer's clock differs from ZooKeeper's by %s, more than maxTimeDiffSeconds=%d", off.Round(time.Millisecond), maxDiffSeconds)
	}
	return ""
}

// startItem runs item unless it is still in flight here: then a scheduled fire becomes a misfire (one
// catch-up follows) and a manual trigger is queued to run right after.
func (e *Executor) startItem(snap *cluster.JobSnapshot, req fireRequest, item int) {
	key := itemKey{req.job, item}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.taskItemEnded(req.task, item, false, false)
		e.followNotRun(req, item, OutcomeNotRun)
		return
	}
	if _, busy := e.running[key]; busy && req.source == ejserver.SourceNormal && req.scheduledAt.After(e.clk.Now()) {
		// handed off ahead of its time (Scheduler.SetMaxLead): the run in flight may still end before then,
		// so whether this fire is a misfire is decided at the scheduled time
		e.wg.Add(1)
		e.mu.Unlock()
		req := req // the goroutine's own: a capture of the parameter moves it to the heap at every call
		go func() {
			defer e.wg.Done()
			if clock.Sleep(e.clk, req.scheduledAt.Sub(e.clk.Now()), e.soft.Done()) {
				e.startItem(snap, req, item)
				return
			}
			e.taskItemEnded(req.task, item, false, false)
			e.followNotRun(req, item, OutcomeNotRun)
		}()
		return
	}
	if r, busy := e.running[key]; busy {
		e.onBusy(snap, req, item, r) // as the job's overlapPolicy says (overlap.go)
		return
	}
	e.running[key] = &itemRun{}
	e.wg.Add(1)
	e.mu.Unlock()
	e.launch(snap, req, item)
}

// runItem runs one item: executionID and runningVersion are given for a failover run (already claimed),
// otherwise a new execution begins here (runningVersion -2). The item's run may end after runItem returns
// (deliver).
func (e *Executor) runItem(snap *cluster.JobSnapshot, req fireRequest, item int, executionID string, runningVersion int32) {
	executionID, param := e.prepareRun(snap, &req, item, executionID)
	finish := e.runFinish(req, item, executionID)
	if runningVersion == -2 {
		runningVersion = -1
		if snap.Config.MonitorExecution && !req.overlap {
			b := e.beginningOf(snap, req, item, executionID, param)
			var ok bool
			if runningVersion, ok = e.begun(snap, &req, item, b, e.reg.BeginItem(req.job, item, b.version, b.run, b.persistent)); !ok {
				finish()
				return
			}
		}
	}
	e.deliver(snap, req, item, executionID, param, runningVersion, finish)
}

// runFinish is what ends a run of item begun with req: the item finished here (finishRun), with req as it
// was before the run's begin.
func (e *Executor) runFinish(req fireRequest, item int, executionID string) func() {
	return func() { e.finishRun(req, item, executionID) }
}

// deliver sends a run whose begin is done (runningVersion: 0 when it holds the running node it created, -1
// when it holds none, else the version of the node a failover claimed) and records its outcome. finish runs
// once when the run is over: before deliver returns, or at the end of its tail (itemTail), which holds a
// count of e.wg until then.
func (e *Executor) deliver(snap *cluster.JobSnapshot, req fireRequest, item int, executionID, param string, runningVersion int32, finish func()) {
	cfg := snap.Config
	var deadline time.Time
	if !req.source.OnRequest() {
		deadline = e.nextAfter(&req)
	}
	halt, release := e.ctxFor(req.job)
	over := func() { release(); finish() }
	tail := false
	defer func() {
		if !tail {
			over()
		}
	}()
	dep := e.cfg.Activity.departure()
	d := webhook.Delivery{
		Payload: webhook.Payload{
			JobName: req.job, TaskID: req.taskID, ExecutionID: executionID, ShardingItem: item,
			ShardingParameter: req.params.of(cfg, item), ShardingTotalCount: cfg.ShardingTotalCount, JobParameter: param,
			Source: string(req.source), ScheduledAt: req.scheduledAt, InstanceID: e.me.InstanceID,
			JitterMs: int(req.jitter.Milliseconds()), DueAt: dueAt(cfg, req),
			Workflow: req.workflow,
		},
		Webhook: cfg.Webhook, Retry: cfg.Retry, MaxConcurrentPerJob: cfg.MaxConcurrentRequests,
		Streaming: cfg.JobType == ejserver.JobTypeDataflow && cfg.StreamingProcess, Deadline: deadline,
		Sent: dep.sent, Halt: halt,
	}
	if e.cfg.Async != nil {
		d.Callback, d.Payload.LeaseSeconds = e.cfg.Async.Callback(executionID), cfg.Async.LeaseSeconds
	}
	prep := e.cfg.Sender.Prepare(d)
	send, waited := e.awaitScheduledTime(req, item, runningVersion)
	if !send {
		e.taskItemEnded(req.task, item, false, false)
		e.followNotRun(req, item, OutcomeNotRun)
		return
	}
	started := e.clk.Now()
	dep.leave(req.sendAt(), waited, started)
	e.taskStarted(req.task, started)
	e.followLeft(req, item, executionID, started)
	rec := ejserver.Execution{
		ID: executionID, JobName: req.job, TaskID: req.taskID, ShardingItem: item,
		ShardingTotalCount: cfg.ShardingTotalCount, Source: req.source, InstanceID: e.me.InstanceID,
		IP: e.me.ServerIP, Hostname: e.me.Hostname, ScheduledAt: req.scheduledAt, StartedAt: started,
	}
	ctx, endSpan, cancelled, stop := e.itemContext(req, item, executionID)
	over = func() { stop(); release(); finish() }
	rec.TraceID = trace.SpanContextFromContext(ctx).TraceID().String()
	e.cfg.Recorder.Enqueue(rec)
	res := e.cfg.Sender.Send(ctx, prep)
	done := e.clk.Now()
	dep.left()
	endSpan(res, started.Sub(req.sendAt()))
	// The rest of the burst goes first: recording the outcome (history, ZooKeeper, metrics, the log) costs
	// more CPU than the request did, and the requests still leaving would wait for it.
	if res.Accepted && e.cfg.Async != nil {
		// at once, not after the burst: until its lease is recorded, the item looks in flight on this peer,
		// and a failover would POST it again if this peer died
		e.accepted(snap, req, item, rec, res, param, runningVersion, deadline, trace.SpanContextFromContext(ctx))
		return
	}
	e.cfg.Activity.awaitQuiet(e.soft.Done(), outcomeWait)
	rec.CompletedAt, rec.Success, rec.StatusCode, rec.Attempts = done, res.Success, res.StatusCode, res.Attempts
	rec.DurationMs, rec.FailureCause, rec.ResponseExcerpt, rec.Permanent = done.Sub(started).Milliseconds(), res.FailureCause, res.ResponseExcerpt, res.Permanent
	if cause, ok := cancelled(); ok {
		markCancelled(&rec, cause)
	}
	e.taskItemEnded(req.task, item, true, res.Success) // first: its trace joins the end record's commit
	t := &itemTail{e: e, req: req, item: item, rec: rec, res: res, started: started, runningVersion: runningVersion}
	if (cfg.MonitorExecution || req.source == ejserver.SourceFailover) && !req.overlap {
		t.hasEnd = true
		t.end = cluster.Completed{
			ExecutionID: executionID, InstanceID: e.me.InstanceID, Source: req.source, Success: res.Success,
			StatusCode: res.StatusCode, ScheduledAt: req.scheduledAt, FinishedAt: done, Permanent: res.Permanent,
			Latest: e.ended(req, item),
		}
	}
	tail = true
	e.wg.Add(1)
	t.finish = func() {
		over()
		e.wg.Done()
	}
	t.run()
}

// finishItem ends an item's run here and starts what waited for it: one misfire catch-up, or the next
// queued manual trigger.
func (e *Executor) finishItem(job string, item int, executionID string) {
	key := itemKey{job, item}
	e.mu.Lock()
	r := e.running[key]
	delete(e.running, key)
	closed := e.closed
	e.mu.Unlock()
	if r == nil || closed {
		return
	}
	snap := e.reg.Job(job)
	if snap == nil {
		return
	}
	if r.accepted && e.followAccepted(snap, job, item, r, executionID) {
		return
	}
	if !r.misfireAt.IsZero() && !r.cancelled {
		if err := e.reg.ClearMisfire(job, item); err != nil {
			e.log.Warn("could not clear a misfire", "job", job, "item", item, "err", err)
		}
		// A resharding flagged meanwhile does not drop the catch-up: the item is still this peer's until the
		// leader commits one, and that commit waits for it (its fence refuses while the item runs, and the
		// catch-up's begin is fenced by the item's owner node). ElasticJob keeps such a misfire for the
		// item's next owner; dropped, it was a fire run by no peer: a survivor's run of a fire held ~45 s
		// through a restart at 100,000 jobs ended while the leader had flagged the resharding that gave the
		// new process its items (docs/benchmarks.md, run 18).
		wanted := snap.Config.Misfire || snap.Config.CatchUpMode() != schedule.CatchUpNone // catch-up sets misfireAt itself
		if wanted && snap.IsMyItem(item) && !snap.Config.Disabled && !snap.ServerDisabled(snap.MyIP) {
			req := fireRequest{job: job, scheduledAt: r.misfireAt, source: ejserver.SourceMisfire,
				taskID: ejserver.TaskID(job, []int{item}, false, e.me.InstanceID)}
			e.startFollowUp(snap, req, item, r.triggers)
			return
		}
	}
	if len(r.triggers) > 0 {
		next := r.triggers[0]
		next.taskID = ejserver.TaskID(job, []int{item}, false, e.me.InstanceID)
		e.startFollowUp(snap, next, item, r.triggers[1:])
	}
}

// startFollowUp runs item again at once, carrying the triggers still queued.
func (e *Executor) startFollowUp(snap *cluster.JobSnapshot, req fireRequest, item int, queued []fireRequest) {
	if !e.reg.Lease() {
		e.log.Info("follow-up run dropped: ZooKeeper session in doubt", "job", req.job, "item", item, "source", string(req.source))
		e.owe(snap, item, append([]fireRequest{req}, queued...)...)
		return
	}
	key := itemKey{req.job, item}
	e.mu.Lock()
	if _, busy := e.running[key]; busy || e.closed {
		if busy {
			e.running[key].triggers = append(e.running[key].triggers, queued...)
		}
		e.mu.Unlock()
		return
	}
	e.running[key] = &itemRun{triggers: queued}
	e.wg.Add(1)
	e.mu.Unlock()
	e.launch(snap, req, item)
}
