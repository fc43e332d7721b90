package cluster

import (
	"slices"
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// Led lists the jobs this peer leads, with what the reconcile loop reads of them, and no job another peer leads.
func TestLedListsTheJobsThisPeerLeads(t *testing.T) {
	ns := zktest.Namespace("led")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	cfg := testJob("mine", 1)
	cfg.ReconcileIntervalMinutes = 7
	if _, err := a.r.CreateJob(cfg); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "mine", "its leadership", func(s *JobSnapshot) bool { return s.IsLeader() && s.Settled })
	createLed(t, a, "also", 2)
	b := startPeer(t, ns, "10.0.0.2@-@2", "10.0.0.2")
	for _, job := range []string{"mine", "also"} {
		waitJob(t, b, job, "b's registration", func(s *JobSnapshot) bool { return s.Registered && len(s.Instances) == 2 })
		waitJob(t, a, job, "b's registration seen by a", func(s *JobSnapshot) bool {
			return s.Settled && len(s.Instances) == 2 && len(s.Servers) == 2
		})
	}

	names := func(led []LedJob) []string {
		var out []string
		for _, l := range led {
			out = append(out, l.Name)
		}
		slices.Sort(out)
		return out
	}
	led := a.r.Led()
	if got := names(led); !slices.Equal(got, []string{"also", "mine"}) {
		t.Fatalf("a leads %v, want [also mine]", got)
	}
	for _, l := range led {
		snap := a.r.Job(l.Name)
		if l.IntervalMinutes != snap.Config.ReconcileIntervalMinutes || len(l.Instances) != len(snap.Instances) ||
			len(l.Servers) != len(snap.Servers) {
			t.Fatalf("%s: led %+v, snapshot interval %d instances %v servers %v", l.Name, l, snap.Config.ReconcileIntervalMinutes,
				snap.Instances, snap.Servers)
		}
		if l.Name == "mine" && l.IntervalMinutes != 7 {
			t.Fatalf("mine's interval %d, want 7", l.IntervalMinutes)
		}
	}
	if got := b.r.Led(); len(got) != 0 {
		t.Fatalf("b, which leads nothing, lists %v", names(got))
	}
}
