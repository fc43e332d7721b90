package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// leadsByWalk counts a peer's leaderships as the snapshots tell them: the reference for the kept count.
func leadsByWalk(p *peer) int {
	n := 0
	for _, job := range p.r.Jobs() {
		if s := p.r.Job(job); s != nil && s.IsLeader() {
			n++
		}
	}
	return n
}

// waitLeads polls until the two peers' counts add up to jobs and each equals its walk.
func waitLeads(t *testing.T, a, b *peer, jobs int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		na, nb := a.r.Leaderships(), 0
		if b != nil {
			nb = b.r.Leaderships()
		}
		wb := nb
		if b != nil {
			wb = leadsByWalk(b)
		}
		if na+nb == jobs && len(a.r.Jobs()) == jobs && na == leadsByWalk(a) && nb == wb {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaderships a %d (walk %d) + b %d (walk %d), want %d in all", na, leadsByWalk(a), nb, wb, jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLeadershipsIsAKeptCount: the peers' counts add up to the jobs through creations, deletions and a peer
// leaving, each equal to a walk of the snapshots; and a count visits no job: it returns while the registry's
// map and a job's entry are locked (the metrics scrape calls it; counted by a walk, a scrape at 100,000 jobs
// took 100,000 entries' locks, and the harness scrapes every peer twice a second).
func TestLeadershipsIsAKeptCount(t *testing.T) {
	ns := zktest.Namespace("leaderships")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	b := startPeer(t, ns, "10.0.0.2@-@2", "10.0.0.2")
	const jobs = 6
	for i := range jobs {
		if _, err := a.r.CreateJob(testJob(fmt.Sprintf("j%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitLeads(t, a, b, jobs)

	a.r.mu.Lock() // as a registration's addEntries holds it
	var e *jobEntry
	for _, x := range a.r.jobs {
		e = x
		break
	}
	e.mu.Lock()
	done := make(chan int)
	go func() { done <- a.r.Leaderships() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("Leaderships waited for the registry's locks: it visits the jobs")
	}
	e.mu.Unlock()
	a.r.mu.Unlock()
	if t.Failed() {
		<-done
		t.FailNow()
	}

	for i := range jobs / 2 {
		if err := a.r.DeleteJob(fmt.Sprintf("j%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitLeads(t, a, b, jobs-jobs/2)
	b.close() // a takes over b's leaderships
	waitLeads(t, a, nil, jobs-jobs/2)
	if n := a.r.Leaderships(); n != jobs-jobs/2 {
		t.Fatalf("a leads %d, want all %d", n, jobs-jobs/2)
	}
}
