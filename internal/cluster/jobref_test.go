package cluster

import (
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A job read through its ref is the job read by name; once the job is deleted its old ref reads nothing, and
// once it is created again (a new entry) the old ref reads the new job, never the entry that left.
func TestJobAtReadsThroughTheRefUntilItsEntryLeaves(t *testing.T) {
	removed := make(chan struct{}, 1)
	a := startPeerWith(t, zktest.Namespace("ref"), "10.0.0.1@-@1", "10.0.0.1", func(r *Registry) {
		r.OnEvent(func(ev Event) {
			if ev.Kind == JobRemoved && ev.Job == "refjob" {
				removed <- struct{}{}
			}
		})
	})
	if _, err := a.r.CreateJob(testJob("refjob", 1)); err != nil {
		t.Fatal(err)
	}
	snap := waitJob(t, a, "refjob", "its load", func(s *JobSnapshot) bool { return s.Settled })
	ref := snap.Ref()
	if ref == (JobRef{}) {
		t.Fatal("a registry's snapshot has no ref")
	}
	if got, want := a.r.JobAt("refjob", ref), a.r.Job("refjob"); got == nil || got != want {
		t.Fatalf("through the ref %p, by name %p", got, want)
	}
	if got := a.r.JobAt("refjob", JobRef{}); got != a.r.Job("refjob") {
		t.Fatal("a zero ref does not read the job by name")
	}
	if a.r.JobAt("nosuch", JobRef{}) != nil {
		t.Fatal("a zero ref read a job that does not exist")
	}

	if err := a.r.DeleteJob("refjob"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-removed:
	case <-time.After(15 * time.Second):
		t.Fatal("the deletion was not seen")
	}
	if got := a.r.JobAt("refjob", ref); got != nil {
		t.Fatalf("a deleted job's old ref read %+v", got)
	}

	again := testJob("refjob", 2)
	if _, err := a.r.CreateJob(again); err != nil {
		t.Fatal(err)
	}
	fresh := waitJob(t, a, "refjob", "its new life", func(s *JobSnapshot) bool { return s.Settled && s.Config.ShardingTotalCount == 2 })
	if fresh.Ref() == ref {
		t.Fatal("the job created again kept the deleted job's entry")
	}
	if got := a.r.JobAt("refjob", ref); got == nil || got.Config.ShardingTotalCount != 2 || got.Ref() != fresh.Ref() {
		t.Fatalf("the old ref read %+v, want the job created again", got)
	}
}
