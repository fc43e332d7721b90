package dispatch

import (
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

func (f *fakeRegistry) PeekTrigger(job string) (cluster.TriggerRequest, *cluster.TriggerClaim, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trigger == nil {
		return cluster.TriggerRequest{}, nil, false, nil
	}
	return *f.trigger, &cluster.TriggerClaim{Job: job, Version: f.triggerVersion}, true, nil
}

func (f *fakeRegistry) DropTrigger(_ string, c *cluster.TriggerClaim) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trigger == nil || c.Version != f.triggerVersion {
		return true, nil
	}
	f.trigger = nil
	f.triggerVersion++
	return false, nil
}

// claimFollower is a Follower that keeps the claims of the fires it is told of and answers FireStarted with err.
type claimFollower struct {
	fires
	mu     sync.Mutex
	claims []*cluster.TriggerClaim
	err    error
}

func (f *claimFollower) FireStarted(fr Fire, items []int) error {
	f.mu.Lock()
	f.claims = append(f.claims, fr.Claim)
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.fires.FireStarted(fr, items)
}

func (f *claimFollower) told() []*cluster.TriggerClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*cluster.TriggerClaim(nil), f.claims...)
}

// triggerLeft reports whether the fake's trigger node is still there.
func triggerLeft(reg *fakeRegistry) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.trigger != nil
}

func workflowTrigger() *cluster.TriggerRequest {
	return &cluster.TriggerRequest{ID: "w1", RequestedAt: time.UnixMilli(1_700_000_000_000).UTC(), Instances: []string{"me"},
		Workflow: json.RawMessage(`{"name":"wf"}`)}
}

// A workflow node's trigger is still there while the fire has not recorded its start (a peer lost then
// leaves it for the engine to hand on), is consumed with the start record (the claim goes to FireStarted),
// and a plain trigger is deleted as it is read.
func TestATriggerIsConsumedWithTheFiresStartRecord(t *testing.T) {
	for _, tc := range []struct {
		name      string
		trigger   *cluster.TriggerRequest
		claimed   bool // the node is still there when the fire begins, and FireStarted gets the claim
		wantFires int
	}{
		{"workflow", workflowTrigger(), true, 1},
		{"plain", &cluster.TriggerRequest{ID: "t1", RequestedAt: time.Unix(100, 0), Instances: []string{"me"}}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, send := newFakeRegistry(1), newFakeSender()
			fl := &claimFollower{}
			var atRead []bool
			e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Follower: fl,
				Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
				TriggerRead: func(string, cluster.TriggerRequest) { atRead = append(atRead, triggerLeft(reg)) }})
			defer e.Drain(time.Second)
			reg.mu.Lock()
			reg.trigger = tc.trigger
			reg.mu.Unlock()
			e.Trigger("j")
			send.next(t)
			// the claim is dropped as runTrigger returns, after the items left Running: Drain waits for it
			e.Drain(time.Second)
			if len(atRead) != 1 || atRead[0] != tc.claimed {
				t.Fatalf("trigger node there when the fire began: %v, want [%v]", atRead, tc.claimed)
			}
			claims := fl.told()
			if len(claims) != tc.wantFires || (tc.claimed && claims[0] == nil) {
				t.Fatalf("FireStarted told of claims %v, want %d fire(s) with a claim: %v", claims, tc.wantFires, tc.claimed)
			}
			if triggerLeft(reg) {
				t.Fatal("the trigger node is still there after its fire")
			}
		})
	}
}

// A fire whose claim was handed on meanwhile (FireStarted: ErrTriggerTaken) sends nothing: the items are
// their new owners' now.
func TestAFireWhoseTriggerWasHandedOnSendsNothing(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	fl := &claimFollower{err: cluster.ErrTriggerTaken}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Follower: fl,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer e.Drain(time.Second)
	reg.mu.Lock()
	reg.trigger = workflowTrigger()
	reg.mu.Unlock()
	e.Trigger("j")
	waitFor(t, func() bool { return len(fl.told()) == 1 })
	send.none(t)
	if len(e.Running("j")) != 0 {
		t.Fatalf("items running after the claim failed: %v", e.Running("j"))
	}
}

// A trigger read but not consumed is still there when its job is refreshed again: it runs once however often
// its job asks for it while it runs, and a trigger asked for meanwhile is looked for when it returns.
func TestATriggerRunsOnceWhileItRuns(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	fl := &claimFollower{}
	entered, release := make(chan struct{}, 4), make(chan struct{})
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Follower: fl,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TriggerRead: func(string, cluster.TriggerRequest) {
			entered <- struct{}{}
			<-release
		}})
	defer e.Drain(time.Second)
	reg.mu.Lock()
	reg.trigger = workflowTrigger()
	reg.mu.Unlock()
	e.Trigger("j")
	<-entered
	e.Trigger("j") // the node is still there: a refresh asks again
	e.Trigger("j")
	close(release)
	send.next(t)
	waitFor(t, func() bool { return len(e.Running("j")) == 0 && !triggerLeft(reg) })
	send.none(t)
	if n := len(fl.told()); n != 1 {
		t.Fatalf("the trigger ran %d times, want once", n)
	}
	// a new trigger asked for after that runs
	reg.mu.Lock()
	reg.trigger = workflowTrigger()
	reg.trigger.ID = "w2"
	reg.mu.Unlock()
	e.Trigger("j")
	<-entered
	send.next(t)
	if n := len(fl.told()); n != 2 {
		t.Fatalf("the second trigger: %d fires told, want 2", n)
	}
}
