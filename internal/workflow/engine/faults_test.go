package engine

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/workflow"
)

// faultLog is a Fault hook that keeps the points it is told, as "stage nodes".
type faultLog struct {
	mu  sync.Mutex
	got []string
}

func (f *faultLog) hook(p FaultPoint) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, fmt.Sprint(p.Stage, " ", p.Nodes))
}

func (f *faultLog) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// The engine passes its fault points in order as a run a -> b advances: the start with the root's fire, each
// end read from the inbox before its step and told after it, the close of the run before it is written.
func TestEnginePassesItsFaultPointsInOrder(t *testing.T) {
	t.Parallel()
	regs := newRegistries(t, 1, "ja", "jb")
	faults := &faultLog{}
	e := NewEngine(EngineConfig{Registry: regs[0], Logger: quiet, LostGrace: time.Minute, Fault: faults.hook})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	svc, run := chain(t, regs[0], "faults")
	fireA := nodeFired(t, svc, "faults", run.ID, "a")
	postEnd(t, regs[0], workflow.Message{Job: "ja", Fire: fireA, Items: 2, Succeeded: 2})
	fireB := nodeFired(t, svc, "faults", run.ID, "b")
	postEnd(t, regs[0], workflow.Message{Job: "jb", Fire: fireB, Items: 2, Succeeded: 2})
	waitFor(t, "the run to succeed", func() bool { return getRun(t, svc, "faults", run.ID).State == workflow.RunSucceeded })
	want := []string{"run-started [a]", "fired [a]", "inbox-read [a]", "step-written [a]", "fired [b]",
		"inbox-read [b]", "run-ending [b]", "step-written [b]"}
	waitFor(t, "the last fault point", func() bool { return len(faults.all()) >= len(want) })
	if got := faults.all(); !slices.Equal(got, want) {
		t.Fatalf("fault points %q, want %q", got, want)
	}
}

func TestSkipWhy(t *testing.T) {
	t.Parallel()
	tests := []struct{ reason, want string }{
		{"calendar: cn-holidays excludes the day", SkipCalendar},
		{"calendar: the day is in none of a, b", SkipCalendar},
		{"calendar: calendar \"x\" not found", SkipCalendar},
		{"an earlier run was still going (overlap: skip)", SkipOverlap},
		{"", SkipOverlap},
	}
	for _, tt := range tests {
		if got := skipWhy(tt.reason); got != tt.want {
			t.Errorf("skipWhy(%q) = %s, want %s", tt.reason, got, tt.want)
		}
	}
}
