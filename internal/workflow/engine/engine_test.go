package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
	"github.com/ejserver/ejserver/internal/workflow"
)

// The engine's decisions against a real ZooKeeper (zktest's shared server; goleak after the tests): the
// duty and its fence, the inbox, the upkeep, cancels. No executor runs: the tests read the trigger nodes
// the engine writes and post the fires' ends to the inbox as the closing peer's alert service does.

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newRegistries starts n registries on a fresh namespace, each an instance of jobs (made by the first).
func newRegistries(t *testing.T, n int, jobs ...string) []*cluster.Registry {
	t.Helper()
	ns := zktest.Namespace("wfengine")
	var out []*cluster.Registry
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: quiet})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		reg, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns,
			Identity: cluster.Identity{InstanceID: "127.0.0.1@-@" + string(rune('a'+i)), ServerIP: "127.0.0.1"}, Logger: quiet})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if err := reg.Start(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(reg.Stop)
		for _, j := range jobs {
			if i == 0 {
				cfg := ejserver.DefaultJobConfig()
				cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = j, 2, "http://127.0.0.1:1/x"
				if _, err := reg.CreateJob(cfg); err != nil {
					cancel()
					t.Fatal(err)
				}
			}
			if _, err := reg.Wait(ctx, j, func(s *cluster.JobSnapshot) bool { return s.Registered && len(s.Instances) >= i+1 }); err != nil {
				cancel()
				t.Fatalf("job %s not loaded on registry %d: %v", j, i, err)
			}
		}
		cancel()
		out = append(out, reg)
	}
	return out
}

func startEngine(t *testing.T, reg *cluster.Registry, lostGrace time.Duration) *Engine {
	t.Helper()
	e := NewEngine(EngineConfig{Registry: reg, Logger: quiet, LostGrace: lostGrace})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// waitFor polls cond until it holds, failing the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// chain stores a workflow a(ja) -> b(jb) and triggers a run of it.
func chain(t *testing.T, reg *cluster.Registry, name string) (*Service, workflow.Run) {
	t.Helper()
	svc := NewService(reg, nil)
	w := workflow.Workflow{Name: name, Nodes: []workflow.Node{{Name: "a", Job: "ja"},
		{Name: "b", Job: "jb", After: []workflow.Edge{{Node: "a", On: workflow.OnSuccess}}}}}
	if _, err := svc.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	r, err := svc.Trigger(context.Background(), name, TriggerRequest{Parameters: json.RawMessage(`{"day":"d1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return svc, r
}

func getRun(t *testing.T, svc *Service, wf, id string) workflow.Run {
	t.Helper()
	r, err := svc.GetRun(context.Background(), wf, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// nodeFired waits until the node runs with a fire, and returns its fire key.
func nodeFired(t *testing.T, svc *Service, wf, id, node string) string {
	t.Helper()
	var fire string
	waitFor(t, "node "+node+" to fire", func() bool {
		n, _ := getRun(t, svc, wf, id).Node(node)
		fire = n.Fire
		return n.State == workflow.NodeRunning && fire != ""
	})
	return fire
}

func postEnd(t *testing.T, reg *cluster.Registry, m workflow.Message) {
	t.Helper()
	m.Kind = workflow.MsgFire
	b, _ := json.Marshal(m)
	if err := reg.PostInbox(b); err != nil {
		t.Fatal(err)
	}
}

// A run advances from its inbox: the start fires the root with a trigger per instance carrying the run's
// parameters, the root's end fires its child with the parent's outcome and output, an end nobody waits for is
// dropped, and a failed end fails the run.
func TestEngineAdvancesARunFromItsInbox(t *testing.T) {
	t.Parallel()
	regs := newRegistries(t, 2, "ja", "jb")
	startEngine(t, regs[0], time.Minute)
	svc, run := chain(t, regs[1], "inbox")
	fireA := nodeFired(t, svc, "inbox", run.ID, "a")
	waits, err := regs[0].WaitingTriggers("ja")
	if err != nil || len(waits) != 2 {
		t.Fatalf("triggers of a's fire: %+v %v, want one per instance", waits, err)
	}
	for _, w := range waits {
		if dispatch.FireKey(w.Request.RequestedAt, "t"+w.Request.ID) != fireA || !strings.Contains(string(w.Request.Workflow), `"day":"d1"`) {
			t.Fatalf("trigger %+v is not a's fire %s with the run's parameters", w, fireA)
		}
	}
	postEnd(t, regs[1], workflow.Message{Job: "ja", Fire: "1-tnobody", Items: 2, Succeeded: 2}) // stale: dropped
	postEnd(t, regs[1], workflow.Message{Job: "ja", Fire: fireA, Items: 2, Succeeded: 2, Output: json.RawMessage(`{"0":{"rows":3}}`)})
	fireB := nodeFired(t, svc, "inbox", run.ID, "b")
	if a, _ := getRun(t, svc, "inbox", run.ID).Node("a"); a.State != workflow.NodeSucceeded || string(a.Output) != `{"0":{"rows":3}}` {
		t.Fatalf("node a after its end: %+v", a)
	}
	waits, _ = regs[0].WaitingTriggers("jb")
	if len(waits) != 2 || !strings.Contains(string(waits[0].Request.Workflow), `"outcome":"SUCCEEDED","output":{"0":{"rows":3}}`) {
		t.Fatalf("b's triggers do not carry a's end: %+v", waits)
	}
	postEnd(t, regs[1], workflow.Message{Job: "jb", Fire: fireB, Items: 2, Succeeded: 1, Error: "item 1: FAILED"})
	waitFor(t, "the run to fail", func() bool { return getRun(t, svc, "inbox", run.ID).State == workflow.RunFailed })
	if b, _ := getRun(t, svc, "inbox", run.ID).Node("b"); b.State != workflow.NodeFailed || b.Error != "item 1: FAILED" || b.Failed != 1 {
		t.Fatalf("node b after its failed end: %+v", b)
	}
	waitFor(t, "the inbox to empty", func() bool { names, err := regs[0].InboxNames(); return err == nil && len(names) == 0 })
}

// The duty is one peer's: a step written with the fence of a peer that lost it is refused, and so is one
// against an old version of the run; the next peer's step goes through.
func TestEngineStepIsRefusedAfterTheDutyMoved(t *testing.T) {
	t.Parallel()
	regs := newRegistries(t, 2, "ja", "jb")
	held, node1, fence1, _, err := regs[0].EngineDuty("")
	if err != nil || !held {
		t.Fatalf("first peer: held %v, %v", held, err)
	}
	held, node2, _, changed, err := regs[1].EngineDuty("")
	if err != nil || held {
		t.Fatalf("second peer: held %v, %v (want to wait)", held, err)
	}
	svc, run := chain(t, regs[0], "fenced")
	data, v, err := regs[0].ReadRun("fenced", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regs[0].AdvanceRun(fence1, "fenced", run.ID, v+1, data, nil, nil); !errors.Is(err, cluster.ErrRunChanged) {
		t.Fatalf("a step against an old version: %v, want ErrRunChanged", err)
	}
	regs[0].ResignEngine(node1)
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the second peer was not told the duty's node went")
	}
	held, _, fence2, _, err := regs[1].EngineDuty(node2)
	if err != nil || !held {
		t.Fatalf("second peer after the first resigned: held %v, %v", held, err)
	}
	next, _ := json.Marshal(workflow.Run{ID: run.ID, Workflow: "fenced", State: workflow.RunCancelled})
	if _, err := regs[0].AdvanceRun(fence1, "fenced", run.ID, v, next, nil, nil); !errors.Is(err, cluster.ErrRunChanged) {
		t.Fatalf("a step of the former holder: %v, want ErrRunChanged", err)
	}
	if got := getRun(t, svc, "fenced", run.ID); got.State != workflow.RunPending {
		t.Fatalf("the former holder's step changed the run: %s", got.State)
	}
	if _, err := regs[1].AdvanceRun(fence2, "fenced", run.ID, v, data, nil, nil); err != nil {
		t.Fatalf("the new holder's step: %v", err)
	}
	regs[1].ResignEngine(node2)
}

// When the holder's engine stops, another peer's takes the duty and advances the runs.
func TestEngineDutyMovesWhenItsHolderStops(t *testing.T) {
	t.Parallel()
	regs := newRegistries(t, 2, "ja", "jb")
	e1 := startEngine(t, regs[0], time.Minute)
	waitFor(t, "the first engine to hold the duty", e1.Holder)
	e2 := startEngine(t, regs[1], time.Minute)
	if e2.Holder() {
		t.Fatal("two engines hold the duty")
	}
	e1.Stop()
	waitFor(t, "the second engine to take the duty", e2.Holder)
	svc, run := chain(t, regs[1], "handover")
	nodeFired(t, svc, "handover", run.ID, "a")
}

// The upkeep fails a node whose fire never started (its trigger was taken, no ledger) after LostGrace: its
// child is skipped and the run fails.
func TestEngineFailsANodeWhoseFireNeverStarted(t *testing.T) {
	t.Parallel()
	regs := newRegistries(t, 1, "ja", "jb")
	startEngine(t, regs[0], 600*time.Millisecond)
	svc, run := chain(t, regs[0], "lost")
	nodeFired(t, svc, "lost", run.ID, "a")
	_, claim, ok, err := regs[0].PeekTrigger("ja")
	if ok && err == nil {
		ok, err = regs[0].DropTrigger("ja", claim)
		ok = !ok // taken: it was still there
	}
	if !ok || err != nil {
		t.Fatalf("take a's trigger: %v %v", ok, err)
	}
	waitFor(t, "the run to fail", func() bool { return getRun(t, svc, "lost", run.ID).State == workflow.RunFailed })
	r := getRun(t, svc, "lost", run.ID)
	a, _ := r.Node("a")
	b, _ := r.Node("b")
	if a.State != workflow.NodeFailed || !strings.Contains(a.Error, "never started") || b.State != workflow.NodeSkipped {
		t.Fatalf("nodes after a's fire was lost: a %+v, b %+v", a, b)
	}
}

// fireCancels is a real FireCanceller that keeps what it is told.
type fireCancels struct {
	mu  sync.Mutex
	got []string
}

func (f *fireCancels) CancelFire(job, fire, reason string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, job+"/"+fire+": "+reason)
	return 1
}

func (f *fireCancels) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// Cancelling a run posts a cancel of its running node's fire with the CANCELLED step, withdraws the fire's
// triggers no instance took, and every peer's Stopper tells its executor once.
func TestEngineCancelStopsTheRunningNodesFire(t *testing.T) {
	t.Parallel()
	regs := newRegistries(t, 2, "ja", "jb")
	startEngine(t, regs[0], time.Minute)
	var told []*fireCancels
	for _, reg := range regs {
		fc := &fireCancels{}
		s := NewStopper(reg, fc, nil, quiet)
		s.Start()
		t.Cleanup(s.Stop)
		told = append(told, fc)
	}
	svc, run := chain(t, regs[1], "cancelme")
	fireA := nodeFired(t, svc, "cancelme", run.ID, "a")
	if _, err := svc.Cancel(context.Background(), "cancelme", run.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to be cancelled", func() bool { return getRun(t, svc, "cancelme", run.ID).State == workflow.RunCancelled })
	want := "ja/" + fireA + ": cancelled through the API"
	for i, fc := range told {
		waitFor(t, "the stopper to tell its executor", func() bool { return len(fc.all()) > 0 })
		if got := fc.all(); len(got) != 1 || got[0] != want {
			t.Fatalf("peer %d's executor was told %q, want %q once", i, got, want)
		}
	}
	waitFor(t, "a's triggers to be withdrawn", func() bool { w, err := regs[0].WaitingTriggers("ja"); return err == nil && len(w) == 0 })
	if _, err := svc.Cancel(context.Background(), "cancelme", run.ID); ejserver.ErrorCodeOf(err) != ejserver.ECONFLICT {
		t.Fatalf("cancel of a cancelled run: %v, want a conflict", err)
	}
}

// lateRegistry makes a workflow ("late") right after the engine first lists the workflows with "first" among
// them: between a reload of the definitions and the arming of their watch, as a workflow made a few
// milliseconds after another was (TestWorkflowCalendarsSteerScheduledRuns' "incl", never scheduled).
type lateRegistry struct {
	*cluster.Registry
	once sync.Once
	late func()
}

func (r *lateRegistry) WorkflowNames() ([]string, error) {
	names, err := r.Registry.WorkflowNames()
	r.listed(names)
	return names, err
}

func (r *lateRegistry) WatchWorkflows() ([]string, <-chan struct{}, error) {
	names, ch, err := r.Registry.WatchWorkflows()
	r.listed(names)
	return names, ch, err
}

func (r *lateRegistry) listed(names []string) {
	if slices.Contains(names, "first") {
		r.once.Do(r.late)
	}
}

// A workflow made while the engine reloads the definitions (after their watch fired, before it is armed
// again) is scheduled all the same.
func TestEngineSchedulesAWorkflowMadeWhileItReloads(t *testing.T) {
	reg := newRegistries(t, 1, "ja")[0]
	def := func(name string) []byte {
		data, err := json.Marshal(workflow.Workflow{Name: name, Cron: "* * * * * ?", Nodes: []workflow.Node{{Name: "a", Job: "ja"}}})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	lr := &lateRegistry{Registry: reg, late: func() {
		if err := reg.CreateWorkflow("late", def("late")); err != nil {
			t.Error(err)
		}
	}}
	e := NewEngine(EngineConfig{Registry: lr, Logger: quiet})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if err := reg.CreateWorkflow("first", def("first")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a scheduled run of the workflow made while the engine reloaded", func() bool {
		ids, _ := reg.RunIDs("late")
		return len(ids) > 0
	})
}
