package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestAPICreationsAreNotQueuedAsExternalChanges: a peer tells the jobs the API created (on any peer) from the
// rest by the API's creation mark, read with the job's first load, so they cost its external-change watch
// no lookup and no place in its queue (a registration of 100,000 jobs queued 100,000 lookups per peer and
// dropped what came beyond 10,000, a change made outside the API among them). A job created outside the API
// is still reported, once.
func TestAPICreationsAreNotQueuedAsExternalChanges(t *testing.T) {
	ns := zktest.Namespace("apicreate")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	b := startPeer(t, ns, "10.0.0.2@-@2", "10.0.0.2")
	var mu sync.Mutex
	var changes []ExternalChange
	w := NewExternalWatch(ExternalWatchConfig{Registry: b.r, OnChange: func(c ExternalChange) {
		mu.Lock()
		changes = append(changes, c)
		mu.Unlock()
	}})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const jobs = 20
	for i := range jobs {
		if _, err := a.r.CreateJob(testJob(fmt.Sprintf("api%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	// then one created outside the API (as zkCli or ElasticJob would): its events come after the others'
	cfg := testJob("outside", 1)
	data, err := ejserver.MarshalElasticJobYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ops := []any{a.s.opCreate(a.r.p.Job("outside"), nil, 0), a.s.opCreate(a.r.p.Config("outside"), data, 0)}
	for _, pth := range a.r.p.jobSkeleton("outside") {
		ops = append(ops, a.s.opCreate(pth, nil, 0))
	}
	if _, err := a.s.multi(ops...); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(changes)
		mu.Unlock()
		if n > 0 && len(b.r.Jobs()) == jobs+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d changes reported, %d jobs loaded", n, len(b.r.Jobs()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 1 || changes[0].Job != "outside" || !changes[0].Created {
		t.Fatalf("changes %+v, want the creation of outside alone", changes)
	}
	// the queue is FIFO: the outside job's creation was checked after every event queued before it
	if n := w.taken.Load(); n != 1 {
		t.Fatalf("the watch checked %d events, want 1 (the job created outside the API); %d were created through it", n, jobs)
	}
}
