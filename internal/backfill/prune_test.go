package backfill

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// Prune: which backfill nodes go.
func TestPrune(t *testing.T) {
	now := ts("2026-11-24T12:00:00Z")
	day := 24 * time.Hour
	bf := func(id, job string, st State, endedAgo time.Duration) Backfill {
		b := Backfill{ID: id, Job: job, State: st}
		if endedAgo >= 0 {
			b.EndedAt = now.Add(-endedAgo)
		}
		return b
	}
	gone := func(job string) bool { return job == "deleted" }
	for _, c := range []struct {
		name string
		in   []Backfill
		want []string
	}{
		{"nothing", nil, nil},
		{"running, however old", []Backfill{bf("r", "j", StateRunning, -1)}, nil},
		{"done within the retention", []Backfill{bf("d", "j", StateDone, 6*day)}, nil},
		{"done exactly at the retention", []Backfill{bf("d", "j", StateDone, 7*day)}, nil},
		{"done past the retention", []Backfill{bf("d", "j", StateDone, 7*day+time.Second)}, []string{"d"}},
		{"cancelled and failed past it", []Backfill{bf("c", "j", StateCancelled, 8*day), bf("f", "j", StateFailed, 30*day)},
			[]string{"c", "f"}},
		{"ended without an end time (unreadable node): kept", []Backfill{bf("u", "j", StateFailed, -1)}, nil},
		{"a deleted job's, running or just ended", []Backfill{bf("r", "deleted", StateRunning, -1), bf("d", "deleted", StateDone, time.Minute)},
			[]string{"r", "d"}},
		{"mixed", []Backfill{bf("old", "j", StateDone, 9*day), bf("new", "j", StateDone, day), bf("run", "j", StateRunning, -1),
			bf("x", "deleted", StateFailed, 0)}, []string{"old", "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, b := range Prune(c.in, now, 7*day, gone) {
				got = append(got, b.ID)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("pruned %v, want %v", got, c.want)
			}
		})
	}
}

// The runners of two peers prune against a real ZooKeeper: an ended backfill past the retention goes, a
// recent one stays; when the job is deleted its backfills go.
func TestRunnerPrunes(t *testing.T) {
	ns := zktest.Namespace("bf-prune")
	a, b := startPeer(t, ns, "a"), startPeer(t, ns, "b")
	recv := newReceiver(t)
	createJob(t, a, "kept", recv.srv.URL, 1)
	createJob(t, a, "dropped", recv.srv.URL, 1)
	now := time.Now()
	put := func(job, id string, st State, ended time.Time) {
		bf := Backfill{ID: id, Job: job, State: st, EndedAt: ended, CreatedAt: now.Add(-30 * 24 * time.Hour)}
		data, _ := json.Marshal(bf)
		if err := a.reg.CreateBackfill(job, id, data); err != nil {
			t.Fatal(err)
		}
	}
	put("kept", "old", StateDone, now.Add(-2*time.Hour))
	put("kept", "recent", StateCancelled, now.Add(-10*time.Minute))
	put("dropped", "ended", StateDone, now.Add(-time.Minute))
	ids := func(job string) []string {
		nodes, err := b.reg.JobBackfillNodes(job)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range nodes {
			out = append(out, n.ID)
		}
		return out
	}
	for _, p := range []*peer{a, b} { // both prune: neither undoes the other
		newRunner(t, p, RunnerConfig{Retention: time.Hour})
	}
	waitUntil(t, "the backfill ended 2 h ago is pruned", func() bool { return slices.Equal(ids("kept"), []string{"recent"}) })
	if got := ids("dropped"); !slices.Equal(got, []string{"ended"}) {
		t.Fatalf("the live job's recent backfill: %v", got)
	}
	if err := a.reg.DeleteJob("dropped"); err != nil {
		t.Fatal(err)
	}
	put("kept", "poke", StateDone, now) // a change every runner sees: they look again
	waitUntil(t, "the deleted job's backfills are pruned", func() bool { return len(ids("dropped")) == 0 })
	nodes, _, _, err := b.reg.BackfillNodes(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Job == "dropped" {
			t.Fatalf("left behind: %+v", n)
		}
	}
	if got := ids("kept"); !slices.Equal(got, []string{"poke", "recent"}) {
		t.Fatalf("kept job's backfills: %v", got)
	}
}
