package workflow

import (
	"testing"
	"time"
)

func TestStartDelay(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := Run{CreatedAt: t0, StartedAt: at(100), Nodes: []NodeRun{
		{Node: Node{Name: "a"}, EndedAt: at(1000)},
		{Node: Node{Name: "b"}, EndedAt: at(1500)},
		{Node: Node{Name: "c", After: []Edge{{Node: "a"}, {Node: "b"}}}},
		{Node: Node{Name: "d", After: []Edge{{Node: "c"}}}},
	}}
	unstarted := run
	unstarted.StartedAt = time.Time{}
	for _, tc := range []struct {
		name string
		run  Run
		node string
		now  time.Time
		want time.Duration
	}{
		{"a root waits since the run started", run, "a", at(350), 250 * time.Millisecond},
		{"a root of a run not marked started: since it was created", unstarted, "a", at(350), 350 * time.Millisecond},
		{"a child waits since its last parent ended", run, "c", at(1620), 120 * time.Millisecond},
		{"a parent not ended yet counts as no time", run, "d", at(2000), 0},
		{"a clock behind the parents' end is no delay", run, "c", at(1400), 0},
		{"an unknown node", run, "nope", at(5000), 0},
	} {
		if got := StartDelay(tc.run, tc.node, tc.now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
