package cluster

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestFirstLoadAnnouncesOwnersAndRegistration: a peer that starts among jobs sharded at creation announces
// each job (JobAdded, which schedules it) with its items' owners read and its registration under way (a fire
// waits for it rather than being skipped), so the job's first fire on that peer neither waits for item reads
// queued behind every other job's nor is skipped as not registered; the registration then lands.
func TestFirstLoadAnnouncesOwnersAndRegistration(t *testing.T) {
	ns := zktest.Namespace("firstload")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	const bID = "10.0.0.2@-@2"
	owners := []string{a.r.me.InstanceID, bID, a.r.me.InstanceID}
	jobs := []string{"j0", "j1", "j2", "j3"}
	for _, j := range jobs {
		if _, err := a.r.CreateJobSharded(testJob(j, 3), owners); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	announced := map[string]*JobSnapshot{}
	b := startPeerWith(t, ns, bID, "10.0.0.2", func(r *Registry) {
		r.OnEvent(func(ev Event) {
			if ev.Kind != JobAdded {
				return
			}
			snap := r.Job(ev.Job)
			mu.Lock()
			announced[ev.Job] = snap
			mu.Unlock()
		})
	})
	for _, j := range jobs {
		waitJob(t, b, j, "registration", func(s *JobSnapshot) bool { return s.Registered && !s.Registering })
	}
	mu.Lock()
	defer mu.Unlock()
	for _, j := range jobs {
		snap := announced[j]
		if snap == nil {
			t.Fatalf("job %s: no JobAdded", j)
		}
		if !snap.Registered && !snap.Registering {
			t.Errorf("job %s announced neither registered nor registering: its fires would be skipped", j)
		}
		if !snap.Sharded() { // (the load itself is still running then, so ItemsSettled is not yet true)
			t.Errorf("job %s announced without its owners read: items %+v", j, snap.Items)
		}
		if got := snap.MyItems(); len(got) != 1 || got[0] != 1 {
			t.Errorf("job %s: this peer's items at announcement %v, want [1]", j, got)
		}
	}
}

// TestRegisterOpsKeepAnExistingServerNode: registration writes servers/{ip} and the instance node in one
// group; when servers/{ip} exists the group fails at op 1 and writes nothing, and the group without it
// registers the instance and leaves the node's state (an operator's DISABLED) as it was.
func TestRegisterOpsKeepAnExistingServerNode(t *testing.T) {
	ns := zktest.Namespace("regops")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	if _, err := a.r.CreateJob(testJob("orders", 2)); err != nil {
		t.Fatal(err)
	}
	other := Identity{InstanceID: "10.0.0.9@-@9", ServerIP: "10.0.0.9"}
	if err := a.s.create(a.r.p.Server("orders", other.ServerIP), []byte(ServerDisabled), 0); err != nil {
		t.Fatal(err)
	}
	if ops := registerOps(a.r.p, "orders", other, a.s.opCreate, false); len(ops) != 2 {
		t.Fatalf("without the server node: %d ops, want the config check and the instance", len(ops))
	}
	_, err := a.r.b.submit(registerOps(a.r.p, "orders", other, a.s.opCreate, true)...)
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != 1 || !errors.Is(oe.Err, zk.ErrNodeExists) {
		t.Fatalf("group with an existing server node: %v, want op 1 failing with node exists", err)
	}
	if ok, _, err := a.s.exists(a.r.p.Instance("orders", other.InstanceID)); err != nil || ok {
		t.Fatalf("the failed group wrote the instance node (exists %v, %v)", ok, err)
	}
	if _, err := a.r.b.submit(registerOps(a.r.p, "orders", other, a.s.opCreate, false)...); err != nil {
		t.Fatal(err)
	}
	data, _, err := a.s.get(a.r.p.Server("orders", other.ServerIP))
	if err != nil || strings.TrimSpace(string(data)) != ServerDisabled {
		t.Fatalf("server node %q, %v: want DISABLED kept", data, err)
	}
	if ok, _, err := a.s.exists(a.r.p.Instance("orders", other.InstanceID)); err != nil || !ok {
		t.Fatalf("instance node not written (exists %v, %v)", ok, err)
	}
	// a job being deleted (no config): the group fails on the check and writes nothing
	gone := Identity{InstanceID: "10.0.0.8@-@8", ServerIP: "10.0.0.8"}
	if _, err := a.r.b.submit(registerOps(a.r.p, "nosuchjob", gone, a.s.opCreate, true)...); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("registering on a missing job: %v, want no node", err)
	}
}

// TestSubmitThenReportsEachGroup: groups submitted without waiting share multis and each gets its own
// outcome: a group whose create finds its node fails alone, writing nothing, and the others land.
func TestSubmitThenReportsEachGroup(t *testing.T) {
	ns := zktest.Namespace("submitthen")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	base := a.r.p.Root() + "/then"
	if err := a.s.ensurePath(base + "/taken"); err != nil {
		t.Fatal(err)
	}
	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		name := fmt.Sprintf("%s/n%d", base, i)
		second := name + "-b"
		if i == 7 {
			second = base + "/taken" // the group fails on its second op
		}
		a.r.b.submitThen(func(_ []zk.MultiResponse, err error) {
			errs[i] = err
			wg.Done()
		}, a.s.opCreate(name, nil, 0), a.s.opCreate(second, nil, 0))
	}
	wg.Wait()
	for i, err := range errs {
		ok, _, xerr := a.s.exists(fmt.Sprintf("%s/n%d", base, i))
		if xerr != nil {
			t.Fatal(xerr)
		}
		if i == 7 {
			var oe *OpError
			if !errors.As(err, &oe) || oe.Op != 1 || !errors.Is(err, zk.ErrNodeExists) || ok {
				t.Fatalf("group 7: %v (first node written: %v), want op 1 failing alone and nothing written", err, ok)
			}
			continue
		}
		if err != nil || !ok {
			t.Fatalf("group %d: %v (written: %v)", i, err, ok)
		}
	}
}
