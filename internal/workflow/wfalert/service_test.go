package wfalert

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/notify"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
	"github.com/ejserver/ejserver/internal/workflow"
)

// sink is a real Deliverer that keeps what it is given.
type sink struct {
	mu  sync.Mutex
	got []notify.Notification
}

func (s *sink) Deliver(n notify.Notification, _ []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, n)
}

func (s *sink) all() []notify.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]notify.Notification(nil), s.got...)
}

// peerOn connects a registry to the shared ZooKeeper under namespace ns.
func peerOn(t *testing.T, ns, id string) *cluster.Registry {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	reg, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns,
		Identity: cluster.Identity{InstanceID: "127.0.0.1@-@" + id, ServerIP: "127.0.0.1"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	return reg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15s for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
}

// Two peers follow the same run (the engine's duty moved between them): the run past its threshold is told
// once, RUNNING_LONG, by one of them; told of the run again, neither says more; its failed end is told once.
func TestRunningLongAndFailedOnceAcrossPeers(t *testing.T) {
	ns := zktest.Namespace("wfalert")
	regs := []*cluster.Registry{peerOn(t, ns, "a"), peerOn(t, ns, "b")}
	w := workflow.Workflow{Name: "nightly", Nodes: []workflow.Node{{Name: "a", Job: "ja"}},
		Alerts: ejserver.Alerts{RunningLongerThanSeconds: 60, Rules: []ejserver.AlertRule{
			{On: []string{ejserver.EventRunningLong, ejserver.EventWorkflowFailed}, Channels: []string{"ops"}}}}}
	w.Normalize()
	data, _ := json.Marshal(w)
	if err := regs[0].CreateWorkflow(w.Name, data); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r := workflow.NewRun(w, ejserver.NewExecutionID(), workflow.TriggerManual, now.Add(-61*time.Second), now.Add(-61*time.Second), nil)
	r.State, r.StartedAt = workflow.RunRunning, now.Add(-61*time.Second)
	r.Nodes[0].State = workflow.NodeRunning
	rd, _ := json.Marshal(r)
	msg, _ := json.Marshal(workflow.Message{Kind: workflow.MsgStart, Workflow: w.Name, Run: r.ID})
	if err := regs[0].CreateRun(nil, w.Name, r.ID, rd, msg); err != nil {
		t.Fatal(err)
	}
	var sinks []*sink
	var svcs []*Service
	for _, reg := range regs {
		out := &sink{}
		s := New(Config{Registry: reg, Deliverer: out, Namespace: ns, ConsoleURL: "http://127.0.0.1:8080",
			Tick: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		s.Start()
		t.Cleanup(s.Stop)
		sinks, svcs = append(sinks, out), append(svcs, s)
	}
	all := func() []notify.Notification { return append(sinks[0].all(), sinks[1].all()...) }
	for _, s := range svcs {
		s.RunChanged(r)
	}
	waitFor(t, "RUNNING_LONG", func() bool { return len(all()) >= 1 })
	for _, s := range svcs { // told again (a duty holder loading it): the fence holds
		s.RunChanged(r)
	}
	// the run fails: told once, with its failed node (the end is told as the engine wrote it: not read again)
	r.State, r.EndedAt = workflow.RunFailed, time.Now()
	r.Nodes[0].State, r.Nodes[0].Error = workflow.NodeFailed, "item 0: FAILED: status 500"
	for _, s := range svcs {
		s.RunChanged(r)
	}
	waitFor(t, "WORKFLOW_FAILED", func() bool { return len(all()) >= 2 })
	for _, s := range svcs { // a later duty holder loads the ended run again
		s.RunChanged(r)
	}
	time.Sleep(300 * time.Millisecond) // a bounded wait: a second message would go out within a few ticks
	got := all()
	if len(got) != 2 || got[0].Kind != notify.KindRunningLong && got[1].Kind != notify.KindRunningLong {
		t.Fatalf("notifications %+v, want one RUNNING_LONG and one WORKFLOW_FAILED", got)
	}
	for _, n := range got {
		if n.Workflow == nil || n.Workflow.RunID != r.ID || n.ConsoleURL != "http://127.0.0.1:8080/#/workflows/nightly/runs/"+r.ID {
			t.Fatalf("notification %+v", n)
		}
		if n.Kind == notify.KindWorkflowFailed && (len(n.Workflow.FailedNodes) != 1 || n.Workflow.FailedNodes[0].Error == "") {
			t.Fatalf("failure %+v", n.Workflow)
		}
	}
}
