package cluster

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// coalesceSession dials a session (the caller closes it) and makes root with n children c00.. (data "v{i}");
// c{n} is absent.
func coalesceSession(t *testing.T, name string, n int) (*Session, string) {
	t.Helper()
	s := dialTest(t)
	root := "/" + zktest.Namespace(name)
	if err := s.ensurePath(root); err != nil {
		s.Close()
		t.Fatal(err)
	}
	for i := range n {
		if err := s.create(fmt.Sprintf("%s/c%02d", root, i), fmt.Appendf(nil, "v%d", i), 0); err != nil {
			s.Close()
			t.Fatal(err)
		}
	}
	return s, root
}

// busyLanes takes every lane of s's coalescer, as requests on their way would, and returns a func that gives
// one back (the reads that waited are sent then) and one that waits until n reads wait.
func busyLanes(t *testing.T, s *Session) (free func(), waiting func(n int)) {
	c := &s.coalesce
	c.mu.Lock()
	c.lanes = coalesceLanes
	c.mu.Unlock()
	waiting = func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c.mu.Lock()
			got := len(c.waiting)
			c.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d reads wait, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return s.laneFree, waiting
}

// TestReadsThatWaitTravelTogether: gets and exists checks asked while every lane is busy wait, and go in one
// multiRead when a lane comes back, each with its own answer (data, stat, an absent node's ErrNoNode, an
// exists check's false); the lane is free again after. A read asked while a lane is free is a get of its own.
func TestReadsThatWaitTravelTogether(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 20
	s, root := coalesceSession(t, "coalesce", n)
	defer s.Close()
	before := s.reads.totals()
	if data, _, err := s.get(root + "/c00"); err != nil || string(data) != "v0" {
		t.Fatalf("a read alone: %q, %v", data, err)
	}
	if got := s.reads.totals().minus(before); got != (readTotals{get: 1}) {
		t.Fatalf("a read alone cost %+v, want one get", got)
	}

	free, waiting := busyLanes(t, s)
	before = s.reads.totals()
	type answer struct {
		data    []byte
		ok      bool
		version int32
		err     error
	}
	answers := make([]answer, n+2)
	var wg sync.WaitGroup
	for i := range n + 2 {
		wg.Go(func() {
			switch {
			case i == n: // absent, got
				_, _, err := s.get(fmt.Sprintf("%s/c%02d", root, n))
				answers[i] = answer{err: err}
			case i == n+1: // absent, checked
				ok, _, err := s.exists(fmt.Sprintf("%s/c%02d", root, n))
				answers[i] = answer{ok: ok, err: err}
			case i%2 == 0:
				data, st, err := s.get(fmt.Sprintf("%s/c%02d", root, i))
				answers[i] = answer{data: data, ok: st != nil, version: st.Version, err: err}
			default:
				ok, st, err := s.exists(fmt.Sprintf("%s/c%02d", root, i))
				answers[i] = answer{ok: ok && st != nil, err: err}
			}
		})
	}
	waiting(n + 2)
	if got := s.reads.totals().minus(before); got.requests() != 0 {
		t.Fatalf("reads waiting for a lane sent %+v", got)
	}
	free()
	wg.Wait()
	if got := s.reads.totals().minus(before); got != (readTotals{multi: 1}) {
		t.Errorf("%d reads that waited cost %+v, want one multiRead", n+2, got)
	}
	for i, a := range answers[:n] {
		if a.err != nil || !a.ok || (i%2 == 0 && string(a.data) != fmt.Sprintf("v%d", i)) {
			t.Errorf("read %d: %+v", i, a)
		}
	}
	if a := answers[n]; !errors.Is(a.err, zk.ErrNoNode) {
		t.Errorf("get of an absent node: %+v, want ErrNoNode", a)
	}
	if a := answers[n+1]; a.ok || a.err != nil {
		t.Errorf("exists of an absent node: %+v, want false and no error", a)
	}
	s.coalesce.mu.Lock()
	lanes := s.coalesce.lanes
	s.coalesce.mu.Unlock()
	if lanes != coalesceLanes-1 {
		t.Errorf("%d lanes busy after the batch, want %d (the one given back is free again)", lanes, coalesceLanes-1)
	}
}

// TestABadPathInABatchFailsOnlyItself: a multiRead with an invalid path is refused whole by the client; the
// batch's reads are then sent alone, each with its own answer.
func TestABadPathInABatchFailsOnlyItself(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, root := coalesceSession(t, "coalescebad", 3)
	defer s.Close()
	free, waiting := busyLanes(t, s)
	paths := []string{root + "/c00", "no-slash", root + "/c02"}
	errs := make([]error, len(paths))
	datas := make([][]byte, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { datas[i], _, errs[i] = s.get(p) })
	}
	waiting(len(paths))
	free()
	wg.Wait()
	if errs[0] != nil || errs[2] != nil || string(datas[0]) != "v0" || string(datas[2]) != "v2" {
		t.Errorf("the good paths: %q %v, %q %v", datas[0], errs[0], datas[2], errs[2])
	}
	if !errors.Is(errs[1], zk.ErrInvalidPath) {
		t.Errorf("the bad path: %v, want ErrInvalidPath", errs[1])
	}
	if s.coalesce.refused.Load() {
		t.Error("a bad path marked multiRead refused")
	}
}
