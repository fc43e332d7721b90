package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestLeadershipsCountsFromTheCache: the peers' counts add up to the jobs, and a count builds no snapshot (the
// metrics scrape calls it at every scrape: through Job it built one for every job whose snapshot a change had
// dropped, 100,000 at 100,000 jobs).
func TestLeadershipsCountsFromTheCache(t *testing.T) {
	ns := zktest.Namespace("leaderships")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	b := startPeer(t, ns, "10.0.0.2@-@2", "10.0.0.2")
	const jobs = 6
	for i := range jobs {
		if _, err := a.r.CreateJob(testJob(fmt.Sprintf("j%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		na, nb := a.r.Leaderships(), b.r.Leaderships()
		if na+nb == jobs && len(a.r.Jobs()) == jobs && len(b.r.Jobs()) == jobs {
			led := 0
			for _, job := range a.r.Jobs() {
				if s := a.r.Job(job); s != nil && s.IsLeader() {
					led++
				}
			}
			if led == na {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("leaderships a %d + b %d, want %d in all", na, nb, jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}

	a.r.mu.RLock()
	for _, e := range a.r.jobs {
		e.mu.Lock()
		e.snap = nil // as a change leaves it
		e.mu.Unlock()
	}
	a.r.mu.RUnlock()
	a.r.Leaderships()
	a.r.mu.RLock()
	defer a.r.mu.RUnlock()
	for name, e := range a.r.jobs {
		e.mu.Lock()
		built := e.snap != nil
		e.mu.Unlock()
		if built {
			t.Fatalf("counting built a snapshot of %s", name)
		}
	}
}
