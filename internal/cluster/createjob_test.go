package cluster

import (
	"errors"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestCreateJobIsOneMulti: a new name's creation through the API is one ZooKeeper request, its audit folder and
// mark in the config's transaction (a registration of 100,000 jobs queued each creation's reads behind the
// peer's other reads: 4.8 s a creation); a name with an earlier life, a root left over without its config and
// a job that exists still take the careful way, with the mark's czxid the config's each time.
func TestCreateJobIsOneMulti(t *testing.T) {
	ns := zktest.Namespace("createjob")
	a := startPeer(t, ns, "10.0.0.1@-@1", "10.0.0.1")
	markOf := func(job string) {
		t.Helper()
		ok, mark, err := a.s.exists(a.r.p.SeenCreate(job))
		if err != nil || !ok {
			t.Fatalf("%s: the API's creation mark: %v %v", job, ok, err)
		}
		_, cfg, err := a.s.exists(a.r.p.Config(job))
		if err != nil || mark.Czxid != cfg.Czxid {
			t.Fatalf("%s: the mark's czxid %d, the config's %d (%v)", job, mark.Czxid, cfg.Czxid, err)
		}
	}
	if _, err := a.r.CreateJob(testJob("warm", 1)); err != nil { // the audit tree's parents, on a new namespace
		t.Fatal(err)
	}

	if _, err := a.r.CreateJob(testJob("fresh", 1)); err != nil {
		t.Fatal(err)
	}
	markOf("fresh")
	// one transaction: the audit folder was made with the config (the careful way makes it first, alone)
	ok, folder, err := a.s.exists(a.r.p.SeenJob("fresh"))
	cok, cfg, cerr := a.s.exists(a.r.p.Config("fresh"))
	if err != nil || cerr != nil || !ok || !cok {
		t.Fatalf("the audit folder %v, the config %v (%v %v)", ok, cok, err, cerr)
	}
	if folder.Czxid != cfg.Czxid {
		t.Errorf("the audit folder's czxid %d, the config's %d: not one transaction", folder.Czxid, cfg.Czxid)
	}

	// an earlier life: its audit folder and mark are there when the name is created again
	if err := a.r.DeleteJob("fresh"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.r.CreateJob(testJob("fresh", 1)); err != nil {
		t.Fatalf("creating a deleted job's name again: %v", err)
	}
	markOf("fresh")

	// a root left over (ElasticJob, a half-finished delete) without its config is filled in
	if err := a.s.create(a.r.p.Job("left"), nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.r.CreateJob(testJob("left", 1)); err != nil {
		t.Fatalf("creating over a root left over: %v", err)
	}
	markOf("left")
	for _, pth := range a.r.p.jobSkeleton("left") {
		if ok, _, err := a.s.exists(pth); err != nil || !ok {
			t.Errorf("%s missing after a creation over a root left over (%v)", pth, err)
		}
	}

	_, err = a.r.CreateJob(testJob("fresh", 1))
	if e := (*ejserver.Error)(nil); !errors.As(err, &e) || e.Code != ejserver.ECONFLICT {
		t.Fatalf("creating a job that exists: %v, want a conflict", err)
	}
}
