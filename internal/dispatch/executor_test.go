package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/webhook"
)

// fakeRegistry is an in-memory registry for the executor: one job whose items all belong to "me".
type fakeRegistry struct {
	mu       sync.Mutex
	snap     *cluster.JobSnapshot
	running  map[int]cluster.Running
	misfires map[int]bool
	ended    []cluster.Completed
	notOwner map[int]bool
	offset   time.Duration
	lease    bool
	// expired: the session expired (no new one yet); epoch counts expiries; changed is closed by every set
	expired        bool
	epoch          int64
	changed        chan struct{}
	trigger        *cluster.TriggerRequest
	triggerVersion int32
	completed      map[int]cluster.Completed
	handedOn       map[string]cluster.TriggerRequest // triggers created for other instances
	late           map[string]bool                   // instances in ZooKeeper that the snapshot does not list yet
	// endFailures fails that many EndItem calls; endCalls counts them all
	endFailures, endCalls int
	// beginLost makes that many BeginItem calls land and answer an error all the same
	beginLost int
	// clearFailures fails that many ClearStaleRunning calls; clearCalls counts them all
	clearFailures, clearCalls int
	// gone and left: the instances without a peer node (PeerGone), those whose node went (PeerLeft)
	gone, left map[string]bool
	// askedGone, when set, is called (without the lock) at the first PeerGone: a change that lands while a fire
	// is deciding
	askedGone func(id string)
	// readingCompleted, when set, is called (without the lock) as LastCompleted begins: a run that starts
	// while a fire reads the registry
	readingCompleted func(item int)
	// ends, when set, is sent every item end EndItem records
	ends chan cluster.Completed
	// onJob, when set, is called (under the lock) at every Job
	onJob func()
}

func newFakeRegistry(total int) *fakeRegistry {
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Cron = "j", total, "* * * * * ?"
	items := make([]cluster.ItemState, total)
	for i := range items {
		items[i] = cluster.ItemState{Exists: true, Owner: "me", OwnerVersion: 1}
	}
	return &fakeRegistry{
		snap: &cluster.JobSnapshot{Name: "j", Config: &cfg, Instances: map[string]string{"me": "10.0.0.1"},
			Servers: map[string]string{}, Leader: "me", Items: items, Me: "me", MyIP: "10.0.0.1", Registered: true, Settled: true, ItemsSettled: true},
		running: map[int]cluster.Running{}, misfires: map[int]bool{}, notOwner: map[int]bool{}, lease: true, changed: make(chan struct{}),
		completed: map[int]cluster.Completed{}, handedOn: map[string]cluster.TriggerRequest{},
	}
}

func (f *fakeRegistry) JobAt(name string, _ cluster.JobRef) *cluster.JobSnapshot { return f.Job(name) }

func (f *fakeRegistry) Job(string) *cluster.JobSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onJob != nil {
		f.onJob()
	}
	return f.snap
}

// Wait returns the snapshot once cond holds, looking again at each change made through set.
func (f *fakeRegistry) Wait(ctx context.Context, _ string, cond func(*cluster.JobSnapshot) bool) (*cluster.JobSnapshot, error) {
	for {
		f.mu.Lock()
		s, changed := f.snap, f.changed
		f.mu.Unlock()
		if cond(s) {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return f.Job(""), ctx.Err()
		}
	}
}

func (f *fakeRegistry) BeginItem(_ string, item int, _ int32, run cluster.Running, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notOwner[item] {
		return cluster.ErrNotOwner
	}
	if _, ok := f.running[item]; ok {
		return cluster.ErrItemRunning
	}
	f.running[item] = run
	if f.beginLost > 0 { // the write landed, its answer was lost
		f.beginLost--
		return errors.New("zk: connection closed")
	}
	return nil
}

// BeginItemThen answers at once, as the registry does when its batcher is closed.
func (f *fakeRegistry) BeginItemThen(job string, item int, version int32, run cluster.Running, persistent bool, then func(error)) {
	then(f.BeginItem(job, item, version, run, persistent))
}

// EndItemThen answers at once, as the registry does when the item's completed node is not known.
func (f *fakeRegistry) EndItemThen(job string, item int, version int32, done cluster.Completed, clearFailover bool, then func(error)) {
	then(f.EndItem(job, item, version, done, clearFailover))
}

func (f *fakeRegistry) EndItem(_ string, item int, _ int32, done cluster.Completed, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endCalls++
	if f.endFailures > 0 {
		f.endFailures--
		return errors.New("zk: connection closed")
	}
	delete(f.running, item)
	f.ended = append(f.ended, done)
	f.completed[item] = done
	if f.ends != nil {
		f.ends <- done
	}
	return nil
}

func (f *fakeRegistry) endedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ended)
}

func (f *fakeRegistry) SetMisfire(_ string, item int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.misfires[item] = true
	return nil
}

func (f *fakeRegistry) ClearMisfire(_ string, item int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.misfires, item)
	return nil
}

func (f *fakeRegistry) ReadRunning(_ string, item int) (cluster.Running, int32, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.running[item]
	return r, 0, ok, nil
}

func (f *fakeRegistry) LeaseLive(string) (bool, error) { return false, nil }

func (f *fakeRegistry) EndStaleRunning(_ string, item int, _ int32, run cluster.Running, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, item)
	f.completed[item] = cluster.Completed{ExecutionID: run.ExecutionID, InstanceID: run.InstanceID, Source: run.Source,
		ScheduledAt: run.ScheduledAt, FinishedAt: now, State: cluster.CompletedLost}
	return nil
}

func (f *fakeRegistry) ClearStaleRunning(_ string, item int, _ int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clearCalls++
	if f.clearFailures > 0 {
		f.clearFailures--
		return errors.New("zk: could not connect to a server")
	}
	delete(f.running, item)
	return nil
}

func (f *fakeRegistry) CreateTriggers(_ string, instances []string, req cluster.TriggerRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range instances {
		if _, ok := f.handedOn[id]; ok {
			return fmt.Errorf("trigger/%s exists", id)
		}
		f.handedOn[id] = req
	}
	return nil
}

func (f *fakeRegistry) LastCompleted(_ string, item int) (cluster.Completed, bool, error) {
	f.mu.Lock()
	reading := f.readingCompleted
	f.mu.Unlock()
	if reading != nil {
		reading(item)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.completed[item]
	return c, ok, nil
}

func (f *fakeRegistry) ClockOffset() (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.offset, true
}

// set changes the fake under its lock.
func (f *fakeRegistry) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
	close(f.changed) // the session's standing may have changed
	f.changed = make(chan struct{})
}

// update replaces the job's snapshot by a copy that fn changes (under the fake's lock), as the Registry replaces
// a job's snapshot at every change.
func (f *fakeRegistry) update(fn func(s *cluster.JobSnapshot)) {
	f.set(func() {
		s := *f.snap
		fn(&s)
		f.snap = &s
	})
}

// resharded commits a resharding that leaves the owners as they are: the necessary flag goes.
func (f *fakeRegistry) resharded() { f.update(func(s *cluster.JobSnapshot) { s.Necessary = false }) }

// suspend (true) drops the session's connection, as a network blip does; false resumes the same session.
func (f *fakeRegistry) suspend(on bool) { f.set(func() { f.lease = !on }) }

// expire ends the session: it is in doubt until renew starts a new one.
func (f *fakeRegistry) expire() { f.set(func() { f.lease, f.expired = false, true; f.epoch++ }) }
func (f *fakeRegistry) renew()  { f.set(func() { f.lease, f.expired = true, false }) }

func (f *fakeRegistry) SessionStanding() (cluster.SessionStanding, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cluster.SessionStanding{Healthy: f.lease, Lease: f.lease, Expired: f.expired, Epoch: f.epoch}, f.changed
}

// PendingReads: the fake's snapshots are set whole; no read is queued
func (f *fakeRegistry) PendingReads(string, int) string { return "" }

func (f *fakeRegistry) Lease() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease
}

func (f *fakeRegistry) Me() cluster.Identity {
	return cluster.Identity{InstanceID: "me", ServerIP: "10.0.0.1"}
}

// fakeSender records deliveries; a delivery of an item listed in hold blocks until released, one listed in
// stall blocks before its request counts as written.
type fakeSender struct {
	mu      sync.Mutex
	got     []webhook.Payload
	halts   []context.Context // each delivery's Halt, in the order of got
	hold    map[int]chan struct{}
	stall   map[int]chan struct{}
	arrived chan webhook.Payload
}

func newFakeSender() *fakeSender {
	return &fakeSender{hold: map[int]chan struct{}{}, stall: map[int]chan struct{}{}, arrived: make(chan webhook.Payload, 100)}
}

// preparer prepares the fakes' deliveries as the executor's real sender would.
var preparer = webhook.New(webhook.Config{})

func (s *fakeSender) Prepare(d webhook.Delivery) *webhook.Prepared { return preparer.Prepare(d) }

func (s *fakeSender) Send(ctx context.Context, p *webhook.Prepared) webhook.Result {
	d := p.Delivery()
	s.mu.Lock()
	s.got = append(s.got, d.Payload)
	s.halts = append(s.halts, d.Halt)
	h, st := s.hold[d.Payload.ShardingItem], s.stall[d.Payload.ShardingItem]
	s.mu.Unlock()
	if st != nil {
		<-st
	}
	if d.Sent != nil {
		d.Sent() // written, as the real sender reports it
	}
	s.arrived <- d.Payload
	if h != nil {
		select {
		case <-h:
		case <-ctx.Done():
			return webhook.Result{FailureCause: "cancelled"}
		}
	}
	return webhook.Result{Success: true, StatusCode: 200, Attempts: 1}
}

// holdItem keeps item's delivery from returning until the returned channel closes.
func (s *fakeSender) holdItem(item int) chan struct{} { return s.gate(s.hold, item) }

// stallItem keeps item's request from being written until the returned channel closes.
func (s *fakeSender) stallItem(item int) chan struct{} { return s.gate(s.stall, item) }

func (s *fakeSender) gate(gates map[int]chan struct{}, item int) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	gates[item] = ch
	return ch
}

func (s *fakeSender) next(t *testing.T) webhook.Payload {
	t.Helper()
	select {
	case p := <-s.arrived:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
		return webhook.Payload{}
	}
}

func (s *fakeSender) none(t *testing.T) {
	t.Helper()
	select {
	case p := <-s.arrived:
		t.Fatalf("unexpected delivery %+v", p)
	case <-time.After(200 * time.Millisecond):
	}
}

func newTestExecutor(reg *fakeRegistry, send *fakeSender) *Executor {
	return NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func TestExecutorRunsEachItemOnce(t *testing.T) {
	reg, send := newFakeRegistry(3), newFakeSender()
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	at := time.Unix(100, 0)
	e.Fire(Due{Job: "j", At: at})
	seen := map[int]bool{}
	for range 3 {
		p := send.next(t)
		if p.Source != string(ejserver.SourceNormal) || !p.ScheduledAt.Equal(at) || seen[p.ShardingItem] || p.ExecutionID == "" {
			t.Fatalf("payload %+v", p)
		}
		seen[p.ShardingItem] = true
	}
	send.none(t)
}

func TestExecutorMisfiresCollapseIntoOneCatchUp(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	first := send.next(t)
	for s := int64(101); s <= 104; s++ { // four fires find the item running
		e.Fire(Due{Job: "j", At: time.Unix(s, 0)})
	}
	waitFor(t, func() bool { return e.Status("j").Misfires == 4 })
	reg.mu.Lock()
	marked := reg.misfires[0]
	reg.mu.Unlock()
	if !marked {
		t.Fatal("no misfire node")
	}
	send.mu.Lock()
	delete(send.hold, 0)
	send.mu.Unlock()
	close(release)
	catchUp := send.next(t)
	if catchUp.Source != string(ejserver.SourceMisfire) || !catchUp.ScheduledAt.Equal(time.Unix(104, 0)) || catchUp.ExecutionID == first.ExecutionID {
		t.Fatalf("catch-up %+v", catchUp)
	}
	send.none(t)
	waitFor(t, func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return !reg.misfires[0] })
}

// misfireEndingAfter runs item 0 of a one-item job at 100 s, fires it again at 160 s while it runs (a
// misfire), applies change to the job's snapshot, and lets the run end: the sender then holds what followed.
func misfireEndingAfter(t *testing.T, change func(s *cluster.JobSnapshot)) *fakeSender {
	t.Helper()
	reg, send := newFakeRegistry(1), newFakeSender()
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	t.Cleanup(func() { e.Drain(time.Second) })
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	e.Fire(Due{Job: "j", At: time.Unix(160, 0)}) // finds the item running
	waitFor(t, func() bool { return e.Status("j").Misfires == 1 })
	reg.update(change)
	send.mu.Lock()
	delete(send.hold, 0)
	send.mu.Unlock()
	close(release)
	return send
}

// A resharding flagged while the item runs (a peer joined: the leader will rebalance at the next fire) does
// not drop the catch-up: the item is still this peer's. Dropped, the missed fire ran on no peer.
func TestExecutorCatchUpRunsWhileAReshardingIsFlagged(t *testing.T) {
	send := misfireEndingAfter(t, func(s *cluster.JobSnapshot) { s.Necessary = true })
	catchUp := send.next(t)
	if catchUp.Source != string(ejserver.SourceMisfire) || !catchUp.ScheduledAt.Equal(time.Unix(160, 0)) {
		t.Fatalf("catch-up %+v", catchUp)
	}
	send.none(t)
}

// The catch-up of a peer whose server an operator disabled meanwhile does not run (the flagged resharding
// that disabling sets gives its items to the others), as a fire of it would not.
func TestExecutorCatchUpSkippedOnADisabledServer(t *testing.T) {
	send := misfireEndingAfter(t, func(s *cluster.JobSnapshot) {
		s.Necessary = true
		s.Servers = map[string]string{s.MyIP: cluster.ServerDisabled}
	})
	send.none(t)
}

func TestExecutorMisfireOffSkips(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.snap.Config.Misfire = false
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	e.Fire(Due{Job: "j", At: time.Unix(101, 0)})
	waitFor(t, func() bool { return e.Status("j").SkippedRuns == 1 })
	send.mu.Lock()
	delete(send.hold, 0)
	send.mu.Unlock()
	close(release)
	send.none(t)
}

func TestExecutorQueuesATriggerBehindARunningItem(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	send.next(t) // item 1 finishes at once
	param := "override"
	reg.mu.Lock()
	reg.trigger = &cluster.TriggerRequest{ID: "t1", JobParameter: &param, Items: []int{0}}
	reg.mu.Unlock()
	e.Trigger("j")
	send.none(t) // item 0 still runs: the trigger waits
	send.mu.Lock()
	delete(send.hold, 0)
	send.mu.Unlock()
	close(release)
	p := send.next(t)
	if p.Source != string(ejserver.SourceManual) || p.ShardingItem != 0 || p.JobParameter != "override" {
		t.Fatalf("queued trigger ran as %+v", p)
	}
}

// Each item gets its own shardingItemParameters entry, parsed once per fire; a run that starts under a
// changed config (a trigger queued behind a running item) gets the entry of that config.
func TestExecutorSendsEachItemItsParameter(t *testing.T) {
	reg, send := newFakeRegistry(3), newFakeSender()
	withParams := func(params string) {
		reg.set(func() {
			s := copySnap(reg.snap)
			s.Config.ShardingItemParameters = params
			reg.snap = &s
		})
	}
	withParams("0=Beijing, 1 = Shanghai ,2=Guangzhou")
	release := send.holdItem(0)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	got := map[int]string{}
	for range 3 {
		p := send.next(t)
		got[p.ShardingItem] = p.ShardingParameter
	}
	if got[0] != "Beijing" || got[1] != "Shanghai" || got[2] != "Guangzhou" {
		t.Fatalf("parameters %v", got)
	}
	reg.set(func() { reg.trigger = &cluster.TriggerRequest{ID: "t1", Items: []int{0}} })
	e.Trigger("j")
	send.none(t) // item 0 still runs: the trigger waits behind it, parsed under the old parameters
	withParams("0=Shenzhen,1=Hangzhou,2=Chengdu")
	send.mu.Lock()
	delete(send.hold, 0)
	send.mu.Unlock()
	close(release)
	if p := send.next(t); p.ShardingItem != 0 || p.ShardingParameter != "Shenzhen" {
		t.Fatalf("the queued trigger ran as %+v", p)
	}
}

func TestExecutorNeverPostsAnItemItNoLongerOwns(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.notOwner[1] = true
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	if p := send.next(t); p.ShardingItem != 0 {
		t.Fatalf("posted item %d", p.ShardingItem)
	}
	send.none(t)
}

func TestExecutorRefusesWithAnExpiredSessionOrWithABadClock(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	reg.expire()
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.none(t)
	reg.renew()
	reg.set(func() {
		reg.offset = 1500 * time.Millisecond
		snap := copySnap(reg.snap)
		snap.Config.MaxTimeDiffSeconds = 1
		reg.snap = &snap
	})
	e.Fire(Due{Job: "j", At: time.Unix(101, 0)})
	send.none(t)
	if st := e.Status("j"); st.ClockError == "" {
		t.Fatal("no clock error in the status")
	}
	reg.set(func() { reg.offset = 500 * time.Millisecond })
	e.Fire(Due{Job: "j", At: time.Unix(102, 0)})
	send.next(t)
	waitFor(t, func() bool { return e.Status("j").ClockError == "" })
}

func TestExecutorDrainAbortsAfterTheBound(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	send.holdItem(0)
	e := newTestExecutor(reg, send)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	done := make(chan struct{})
	go func() { e.Drain(50 * time.Millisecond); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not abort the hung request")
	}
	reg.mu.Lock()
	ended := slices.Clone(reg.ended)
	reg.mu.Unlock()
	if len(ended) != 1 || ended[0].Success {
		t.Fatalf("the aborted item's end was not recorded as a failure: %+v", ended)
	}
	e.Fire(Due{Job: "j", At: time.Unix(101, 0)}) // after a drain nothing starts
}

// waitFor polls cond until it holds, failing after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatal("condition not met")
		case <-tick.C:
		}
	}
}

// recorder captures history records.
type recorder struct {
	mu     sync.Mutex
	execs  []ejserver.Execution
	traces []ejserver.StatusTrace
	// reg, if set, is looked at when an end record is committed: committedAfterAck lists the executions whose
	// end the registry had already been told of.
	reg               *fakeRegistry
	committed         []string
	committedAfterAck []string
}

func (r *recorder) EnqueueCommittedThen(ctx context.Context, e ejserver.Execution, then func(error)) {
	then(r.EnqueueCommitted(ctx, e))
}

func (r *recorder) EnqueueCommitted(_ context.Context, e ejserver.Execution) error {
	if r.reg != nil {
		r.reg.mu.Lock()
		for _, c := range r.reg.ended {
			if c.ExecutionID == e.ID {
				r.mu.Lock()
				r.committedAfterAck = append(r.committedAfterAck, e.ID)
				r.mu.Unlock()
			}
		}
		r.reg.mu.Unlock()
	}
	r.Enqueue(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.committed = append(r.committed, e.ID)
	return nil
}

func (r *recorder) Enqueue(e ejserver.Execution) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execs = append(r.execs, e)
	return true
}

func (r *recorder) EnqueueTrace(t ejserver.StatusTrace) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.traces = append(r.traces, t)
	return true
}

// failingSender fails item 1 and succeeds otherwise.
type failingSender struct{ fakeSender }

func (s *failingSender) Send(ctx context.Context, p *webhook.Prepared) webhook.Result {
	res := s.fakeSender.Send(ctx, p)
	if p.Delivery().Payload.ShardingItem == 1 {
		return webhook.Result{StatusCode: 500, Attempts: 1, FailureCause: "HTTP 500"}
	}
	return res
}

// fireTwoItems fires a two-item job whose item 1 fails, recording through r, and waits for both items.
func fireTwoItems(t *testing.T, r Recorder) {
	t.Helper()
	send := &failingSender{*newFakeSender()}
	e := NewExecutor(ExecutorConfig{Registry: newFakeRegistry(2), Sender: send, Recorder: r, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	send.next(t)
	e.Drain(5 * time.Second)
}

func TestExecutorRecordsExecutionsAndTaskTraces(t *testing.T) {
	rec := &recorder{}
	fireTwoItems(t, rec)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var states []ejserver.TaskState
	for _, tr := range rec.traces {
		states = append(states, tr.State)
		if tr.ShardingItems != "0,1" || tr.ExecutionType != "READY" || tr.InstanceID != "me" || tr.TaskID == "" {
			t.Fatalf("trace %+v", tr)
		}
	}
	if fmt.Sprint(states) != "[TASK_STAGING TASK_RUNNING TASK_ERROR]" {
		t.Fatalf("states %v", states)
	}
	if !strings.Contains(rec.traces[2].Message, "[1]") {
		t.Fatalf("error trace %q does not name item 1", rec.traces[2].Message)
	}
	// each item: a start record, then an end record with the outcome
	ends := map[int]ejserver.Execution{}
	for _, x := range rec.execs {
		if x.Done() {
			ends[x.ShardingItem] = x
		}
	}
	if len(rec.execs) != 4 || !ends[0].Success || ends[1].Success || ends[1].StatusCode != 500 || ends[1].FailureCause == "" {
		t.Fatalf("executions %+v", rec.execs)
	}
}

// untracedRecorder keeps no status traces (history.Writer with --history-status-traces=false).
type untracedRecorder struct{ *recorder }

func (untracedRecorder) StatusTraces() bool { return false }

// A Recorder that keeps no status traces is given none: the executor builds no task for them, and the items'
// records are as with traces.
func TestExecutorBuildsNoTraceForARecorderWithoutThem(t *testing.T) {
	rec := &recorder{}
	fireTwoItems(t, untracedRecorder{rec})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.traces) != 0 {
		t.Fatalf("traces %+v, want none", rec.traces)
	}
	if len(rec.execs) != 4 {
		t.Fatalf("executions %+v, want a start and an end record of each item", rec.execs)
	}
}

// sheddingRecorder takes a task's status traces or not as the history writer says when the task begins (a
// writer that is behind sheds them), and counts the questions.
type sheddingRecorder struct {
	*recorder
	shed  atomic.Bool
	asked atomic.Int64
}

func (r *sheddingRecorder) StatusTraces() bool { r.asked.Add(1); return !r.shed.Load() }

// A task that begins while the history writer sheds status traces has none, its items' records are kept, and
// its items make no task of their own (one question per task: a task is traced whole or not at all); the next
// fire, after the writer caught up, is traced again.
func TestExecutorTracesNoTaskWhileTheWriterShedsTraces(t *testing.T) {
	rec := &sheddingRecorder{recorder: &recorder{}}
	rec.shed.Store(true)
	fireTwoItems(t, rec)
	rec.mu.Lock()
	traces, execs := len(rec.traces), len(rec.execs)
	rec.mu.Unlock()
	if traces != 0 || execs != 4 || rec.asked.Load() != 1 {
		t.Fatalf("%d traces, %d execution records, asked %d times; want 0, 4 and once", traces, execs, rec.asked.Load())
	}
	rec.shed.Store(false)
	fireTwoItems(t, rec)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.traces) != 3 || len(rec.execs) != 8 || rec.asked.Load() != 2 {
		t.Fatalf("%d traces, %d execution records, asked %d times; want 3 (the second fire's), 8 and twice",
			len(rec.traces), len(rec.execs), rec.asked.Load())
	}
}

// An item's end record is committed to the history before its end is acknowledged in the registry, so that a
// peer killed in between leaves the item running there (docs/reliability.md).
func TestExecutorCommitsTheEndRecordBeforeTheRegistryHearsOfIt(t *testing.T) {
	reg := newFakeRegistry(2)
	reg.snap.Config.MonitorExecution = true
	send := &failingSender{*newFakeSender()}
	rec := &recorder{reg: reg}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Recorder: rec, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	send.next(t)
	e.Drain(5 * time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if len(rec.committed) != 2 || len(reg.ended) != 2 {
		t.Fatalf("%d end records committed, %d ends acknowledged; want 2 and 2", len(rec.committed), len(reg.ended))
	}
	if len(rec.committedAfterAck) > 0 {
		t.Fatalf("end records committed after the registry heard of the end: %v", rec.committedAfterAck)
	}
}

// An item whose end could not be recorded in the registry (the connection broke) is recorded again until it
// is: a running node left behind names a live instance, so no failover takes it and every resharding of the
// job waits for it (found by the nemesis soak).
func TestExecutorRetriesAnEndTheRegistryDidNotTake(t *testing.T) {
	reg := newFakeRegistry(1)
	reg.snap.Config.MonitorExecution = true
	reg.endFailures = 2
	send := newFakeSender()
	clk := clock.NewFake(time.Unix(100, 0))
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	// each failure waits for its back-off on the fake clock: move it on until the end is recorded
	waitFor(t, func() bool { clk.Advance(endBackoffMax); return reg.endedCount() == 1 })
	e.Drain(5 * time.Second)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.endCalls != 3 || len(reg.running) != 0 {
		t.Fatalf("EndItem called %d times, running %v; want 3 calls and nothing running", reg.endCalls, reg.running)
	}
}

// A begin whose write landed while its answer was lost (the connection closed) is tried again once the session
// is back, finds its own running node and runs the item: the fire is not lost, and no running node is left
// behind for the job's resharding to wait on (found by the nemesis soak).
func TestExecutorRunsAnItemWhoseBeginAnswerWasLost(t *testing.T) {
	reg := newFakeRegistry(1)
	reg.snap.Config.MonitorExecution = true
	reg.beginLost = 1
	send := newFakeSender()
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	send.next(t)
	waitFor(t, func() bool { return reg.endedCount() == 1 })
	e.Drain(5 * time.Second)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if len(reg.running) != 0 {
		t.Fatalf("running nodes left: %v", reg.running)
	}
}

// resharderFunc is a Resharder.
type resharderFunc func(ctx context.Context, job string) error

func (f resharderFunc) Reshard(ctx context.Context, job string) error { return f(ctx, job) }

func TestExecutorHandsATriggerToInstancesItsReshardingGaveItemsTo(t *testing.T) {
	reg, send := newFakeRegistry(5), newFakeSender()
	reg.snap.Necessary = true // "late" and "later" joined after the API listed the trigger's instances
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resharder: resharderFunc(func(context.Context, string) error {
			reg.update(func(s *cluster.JobSnapshot) {
				s.Necessary = false
				s.Instances = map[string]string{"me": "10.0.0.1", "other": "10.0.0.2", "late": "10.0.0.3", "later": "10.0.0.4"}
				// item 4's owner is gone (not online): a trigger node for it would never be taken
				s.Items = []cluster.ItemState{
					{Exists: true, Owner: "me", OwnerVersion: 2}, {Exists: true, Owner: "late", OwnerVersion: 2},
					{Exists: true, Owner: "other", OwnerVersion: 2}, {Exists: true, Owner: "later", OwnerVersion: 2},
					{Exists: true, Owner: "gone", OwnerVersion: 2},
				}
			})
			return nil
		})})
	defer e.Drain(time.Second)
	param := "p"
	reg.set(func() {
		reg.trigger = &cluster.TriggerRequest{ID: "t1", JobParameter: &param, Items: []int{0, 1, 2, 4}, Instances: []string{"me", "other"}}
	})
	e.Trigger("j")
	if p := send.next(t); p.ShardingItem != 0 || p.Source != string(ejserver.SourceManual) || p.JobParameter != "p" {
		t.Fatalf("sent %+v, want item 0 as MANUAL with the override", p)
	}
	send.none(t)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	got, ok := reg.handedOn["late"]
	if len(reg.handedOn) != 1 || !ok {
		t.Fatalf("handed on to %v, want only the online instance that owns a requested item (late)", reg.handedOn)
	}
	if got.ID != "t1" || *got.JobParameter != "p" || fmt.Sprint(got.Items) != "[0 1 2 4]" || fmt.Sprint(got.Instances) != "[me other late]" {
		t.Fatalf("handed-on trigger %+v", got)
	}
}

// An operator's trigger node names no instances: it is never handed on.
func TestExecutorDoesNotHandOnAnOperatorsTrigger(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.snap.Necessary = true
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resharder: resharderFunc(func(context.Context, string) error {
			reg.update(func(s *cluster.JobSnapshot) {
				s.Necessary = false
				s.Items = []cluster.ItemState{{Exists: true, Owner: "me", OwnerVersion: 2}, {Exists: true, Owner: "late", OwnerVersion: 2}}
			})
			return nil
		})})
	defer e.Drain(time.Second)
	reg.set(func() { reg.trigger = &cluster.TriggerRequest{} })
	e.Trigger("j")
	if p := send.next(t); p.ShardingItem != 0 {
		t.Fatalf("sent item %d, want 0", p.ShardingItem)
	}
	send.none(t)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if len(reg.handedOn) != 0 {
		t.Fatalf("handed on to %v", reg.handedOn)
	}
}

// The leader resharded on its own just before the trigger reached it (the sharding is ready): an instance the
// request missed still gets the trigger.
func TestExecutorHandsOnATriggerAfterAnEarlierResharding(t *testing.T) {
	// item 1 is already "late"'s, which registered after the trigger listed its instances
	sharded := func(leader string) (*fakeRegistry, *fakeSender, *Executor) {
		reg, send := newFakeRegistry(2), newFakeSender()
		reg.snap.Instances = map[string]string{"me": "10.0.0.1", "late": "10.0.0.2"}
		reg.snap.Items[1].Owner = "late"
		reg.snap.Leader = leader
		return reg, send, newTestExecutor(reg, send)
	}
	reg, send, e := sharded("me")
	defer e.Drain(time.Second)
	reg.set(func() { reg.trigger = &cluster.TriggerRequest{ID: "t2", Instances: []string{"me"}} })
	e.Trigger("j")
	if p := send.next(t); p.ShardingItem != 0 {
		t.Fatalf("sent item %d, want 0", p.ShardingItem)
	}
	waitFor(t, func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return reg.handedOn["late"].ID == "t2" })

	// a peer that is not the leader hands nothing on: the leader does, once
	reg2, send2, e2 := sharded("other")
	defer e2.Drain(time.Second)
	reg2.set(func() { reg2.trigger = &cluster.TriggerRequest{ID: "t3", Instances: []string{"me"}} })
	e2.Trigger("j")
	send2.next(t)
	send2.none(t)
	reg2.mu.Lock()
	defer reg2.mu.Unlock()
	if len(reg2.handedOn) != 0 {
		t.Fatalf("a non-leader handed on to %v", reg2.handedOn)
	}
}

// Each item's outcome is one log line: at info for a success, at warn for a failure, with its cause.
func TestExecutorLogsEachItemsOutcome(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		t.Run(level.String(), func(t *testing.T) {
			var buf testutil.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
			reg := newFakeRegistry(2)
			send := &failingSender{*newFakeSender()}
			e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: logger})
			e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
			send.next(t)
			send.next(t)
			e.Drain(time.Second)
			out := buf.String()
			if !strings.Contains(out, `msg="item failure" job=j item=1`) || !strings.Contains(out, `cause="HTTP 500"`) {
				t.Fatalf("no failure line for item 1:\n%s", out)
			}
			success := strings.Contains(out, `msg="item success" job=j item=0`)
			if success != (level == slog.LevelInfo) {
				t.Fatalf("at %s, success line logged: %t\n%s", level, success, out)
			}
		})
	}
}
