package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestALoadOfARemovedJobAnnouncesNothing: a load that read a job before it was deleted and is applied after
// the registry removed the job (its entry detached) announces nothing. Applied, it announced the job again
// after its JobRemoved, and the scheduler kept firing a job that no longer existed.
func TestALoadOfARemovedJobAnnouncesNothing(t *testing.T) {
	ns := zktest.Namespace("load-removed")
	p := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	const job = "gone"
	if _, err := p.r.CreateJobSharded(testJob(job, 2), []string{"10.0.0.1@-@1"}); err != nil {
		t.Fatal(err)
	}
	waitJob(t, p, job, "loaded", func(s *JobSnapshot) bool { return s.Settled })
	e := p.r.entry(job)
	if e == nil {
		t.Fatal("no entry for a loaded job")
	}
	rd, err := p.r.readJobOneByOne(job, false) // the load's read, before the deletion
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var seen []Event
	p.r.OnEvent(func(ev Event) {
		if ev.Job == job {
			mu.Lock()
			seen = append(seen, ev)
			mu.Unlock()
		}
	})
	if err := p.r.DeleteJob(job); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.r.entry(job) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the deleted job is still in the registry")
		}
		time.Sleep(20 * time.Millisecond)
	}

	e.refreshMu.Lock() // as a load holds it
	err = p.r.applyLoad(e, false, rd, true)
	e.refreshMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[len(seen)-1].Kind != JobRemoved {
		t.Fatalf("events after the deletion: %v, want the last one JobRemoved", kinds(seen))
	}
	if s := p.r.Job(job); s != nil {
		t.Fatalf("the registry holds the deleted job again: %+v", s)
	}
}

func kinds(evs []Event) []EventKind {
	out := make([]EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}
