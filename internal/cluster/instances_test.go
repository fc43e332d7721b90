package cluster

import (
	"testing"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A listing of a job's instances that lacks this peer's node is an operator's removal only when the peer was
// registered when it was judged and ZooKeeper confirmed the node gone. A listing read before the peer's
// registration landed, and applied after it, is read again: taken for a removal, it left a job unrun by its
// owner until a restart (run 29 at 100,000 jobs: bench-46077, 17 minutes).
func TestAListingOlderThanTheRegistrationIsNoRemoval(t *testing.T) {
	ns := zktest.Namespace("olderlisting")
	a := startPeer(t, ns, "10.0.4.1@-@1", "10.0.4.1")
	b := startPeer(t, ns, "10.0.4.2@-@1", "10.0.4.2")
	if _, err := a.r.CreateJob(testJob("ol", 2)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "ol", "both registered", func(s *JobSnapshot) bool {
		return s.Registered && s.Online(a.r.me.InstanceID) && s.Online(b.r.me.InstanceID)
	})
	e := a.r.entry("ol")
	e.mu.Lock()
	direct := e.direct.instances
	e.mu.Unlock()
	older := map[string]string{b.r.me.InstanceID: "10.0.4.2"} // as listed before a registered
	a.r.applyInstances(e, older, direct, false)
	if s := a.r.Job("ol"); !s.Registered || !s.Online(a.r.me.InstanceID) {
		t.Fatalf("a listing older than a's registration took a off the job: registered %v, instances %v", s.Registered, s.Instances)
	}
	a.r.applyInstances(e, older, direct, true) // confirmed gone: an operator's removal
	if s := a.r.Job("ol"); s.Registered {
		t.Fatal("a confirmed removal left a registered")
	}
}
