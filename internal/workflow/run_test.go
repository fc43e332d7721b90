package workflow

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// step applies events in order, giving each fired node a fire key "{node}#{attempt}", and returns the run and
// the nodes fired at each step.
func step(t *testing.T, r Run, events ...Event) (Run, [][]string) {
	t.Helper()
	var fired [][]string
	for _, e := range events {
		if e.Kind == EventNodeEnded && e.Fire == "" {
			nr, _ := r.Node(e.Node)
			e.Fire = nr.Fire
		}
		next, effects, err := Apply(r, e, t0)
		if err != nil {
			t.Fatalf("Apply(%v): %v", e, err)
		}
		var names []string
		for _, ef := range effects {
			if ef.Kind == EffectFire {
				names = append(names, ef.Node)
				nr, _ := next.Node(ef.Node)
				next.SetFire(ef.Node, ef.Node+"#"+string(rune('0'+nr.Attempt)))
			}
		}
		slices.Sort(names)
		fired = append(fired, names)
		r = next
	}
	return r, fired
}

func ended(node string, ok bool) Event { return Event{Kind: EventNodeEnded, Node: node, Succeeded: ok} }

func states(r Run) map[string]NodeState {
	m := map[string]NodeState{}
	for _, n := range r.Nodes {
		m[n.Name] = n.State
	}
	return m
}

func TestRunDiamond(t *testing.T) {
	t.Parallel()
	w := wf(n("a", "j"), n("b", "j", edge("a", "")), n("c", "j", edge("a", "")), n("d", "j", edge("b", ""), edge("c", "")))
	r := NewRun(w, "r1", TriggerManual, t0, t0, nil)
	r, fired := step(t, r, Event{Kind: EventStart}, ended("a", true), ended("b", true), ended("c", true), ended("d", true))
	want := [][]string{{"a"}, {"b", "c"}, nil, {"d"}, nil}
	for i := range want {
		if !slices.Equal(fired[i], want[i]) {
			t.Fatalf("step %d fired %v, want %v", i, fired[i], want[i])
		}
	}
	if r.State != RunSucceeded {
		t.Fatalf("run state %s, want SUCCEEDED", r.State)
	}
}

func TestRunFailureBranch(t *testing.T) {
	t.Parallel()
	w := wf(n("a", "j"), n("b", "j", edge("a", "")), n("d", "j", edge("b", OnSuccess)), n("e", "j", edge("d", OnSuccess)),
		n("onfail", "j", edge("b", OnFailure)), n("cleanup", "j", edge("d", OnAlways)))
	r := NewRun(w, "r1", TriggerManual, t0, t0, nil)
	r, fired := step(t, r, Event{Kind: EventStart}, ended("a", true), ended("b", false))
	if !slices.Equal(fired[2], []string{"cleanup", "onfail"}) {
		t.Fatalf("after b failed, fired %v, want cleanup and onfail", fired[2])
	}
	s := states(r)
	if s["d"] != NodeSkipped || s["e"] != NodeSkipped {
		t.Fatalf("d, e = %s, %s: want both SKIPPED", s["d"], s["e"])
	}
	r, _ = step(t, r, ended("onfail", true), ended("cleanup", true))
	if r.State != RunFailed {
		t.Fatalf("run %s, want FAILED (b failed)", r.State)
	}
	// retry from the failed node: b again, a is not repeated
	r, fired = step(t, r, Event{Kind: EventRetryFailed}, ended("b", true))
	if !slices.Equal(fired[0], []string{"b"}) || !slices.Equal(fired[1], []string{"d"}) {
		t.Fatalf("retry fired %v then %v, want [b] then [d]", fired[0], fired[1])
	}
	if r.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", r.Attempt)
	}
	r, fired = step(t, r, ended("d", true), ended("e", true), ended("cleanup", true))
	if !slices.Equal(fired[0], []string{"cleanup", "e"}) || r.State != RunSucceeded {
		t.Fatalf("fired %v, run %s", fired, r.State)
	}
	if s := states(r); s["onfail"] != NodeSkipped {
		t.Fatalf("onfail after the retry: %s, want SKIPPED", s["onfail"])
	}
}

func TestRunStaleAndControls(t *testing.T) {
	t.Parallel()
	w := wf(n("a", "j"), n("b", "j", edge("a", "")))
	r := NewRun(w, "r1", TriggerSchedule, t0, t0, json.RawMessage(`{"x":1}`))
	tests := []struct {
		name  string
		apply func(Run) (Run, []Effect, error)
		check func(t *testing.T, r Run, eff []Effect, err error)
	}{
		{name: "end of an unknown fire is ignored", apply: func(r Run) (Run, []Effect, error) {
			r, _ = step(t, r, Event{Kind: EventStart})
			return Apply(r, Event{Kind: EventNodeEnded, Node: "a", Fire: "other", Succeeded: true}, t0)
		}, check: func(t *testing.T, r Run, eff []Effect, err error) {
			if err != nil || len(eff) != 0 || states(r)["a"] != NodeRunning {
				t.Fatalf("stale end changed the run: %v %v %v", states(r), eff, err)
			}
		}},
		{name: "cancel", apply: func(r Run) (Run, []Effect, error) {
			r, _ = step(t, r, Event{Kind: EventStart})
			return Apply(r, Event{Kind: EventCancel, Reason: "by hand"}, t0)
		}, check: func(t *testing.T, r Run, eff []Effect, err error) {
			if err != nil || r.State != RunCancelled || states(r)["a"] != NodeCancelled || states(r)["b"] != NodeCancelled {
				t.Fatalf("cancel: %s %v %v", r.State, states(r), err)
			}
			if len(eff) != 1 || eff[0].Kind != EffectEnded || eff[0].State != RunCancelled {
				t.Fatalf("effects %v", eff)
			}
		}},
		{name: "end after cancel is ignored", apply: func(r Run) (Run, []Effect, error) {
			r, _ = step(t, r, Event{Kind: EventStart}, Event{Kind: EventCancel})
			return Apply(r, Event{Kind: EventNodeEnded, Node: "a", Fire: "a#1", Succeeded: true}, t0)
		}, check: func(t *testing.T, r Run, eff []Effect, err error) {
			if err != nil || len(eff) != 0 || r.State != RunCancelled {
				t.Fatalf("%s %v %v", r.State, eff, err)
			}
		}},
		{name: "retry of a running run is a conflict", apply: func(r Run) (Run, []Effect, error) {
			r, _ = step(t, r, Event{Kind: EventStart})
			return Apply(r, Event{Kind: EventRetryFailed}, t0)
		}, check: func(t *testing.T, r Run, eff []Effect, err error) {
			if err == nil {
				t.Fatal("retry of a running run succeeded")
			}
		}},
		{name: "skip", apply: func(r Run) (Run, []Effect, error) {
			return Apply(r, Event{Kind: EventSkip, Reason: "overlap"}, t0)
		}, check: func(t *testing.T, r Run, eff []Effect, err error) {
			if err != nil || r.State != RunSkipped || len(eff) != 1 || eff[0].State != RunSkipped {
				t.Fatalf("%s %v %v", r.State, eff, err)
			}
		}},
		{name: "output passes to the children", apply: func(r Run) (Run, []Effect, error) {
			r, _ = step(t, r, Event{Kind: EventStart})
			return Apply(r, Event{Kind: EventNodeEnded, Node: "a", Fire: "a#1", Succeeded: true, Output: json.RawMessage(`{"rows":3}`)}, t0)
		}, check: func(t *testing.T, r Run, eff []Effect, err error) {
			if err != nil || len(eff) != 1 || len(eff[0].Parents) != 1 || string(eff[0].Parents[0].Output) != `{"rows":3}` ||
				eff[0].Parents[0].Outcome != NodeSucceeded {
				t.Fatalf("effects %+v, err %v", eff, err)
			}
		}},
		{name: "an output over the cap is dropped", apply: func(r Run) (Run, []Effect, error) {
			r, _ = step(t, r, Event{Kind: EventStart})
			big := json.RawMessage(`"` + string(make([]byte, 0)) + string(slices.Repeat([]byte("x"), MaxOutputSize)) + `"`)
			return Apply(r, Event{Kind: EventNodeEnded, Node: "a", Fire: "a#1", Succeeded: true, Output: big}, t0)
		}, check: func(t *testing.T, r Run, eff []Effect, err error) {
			if nr, _ := r.Node("a"); err != nil || nr.Output != nil {
				t.Fatalf("output kept: %d bytes, err %v", len(nr.Output), err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			next, eff, err := tt.apply(r)
			tt.check(t, next, eff, err)
		})
	}
}
