package dispatch

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// goroutineID is the calling goroutine's number, from the first line of its stack ("goroutine 7 [running]:").
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf, _ = bytes.CutPrefix(buf, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return id
}

// othersItem makes the fake's one item another instance's, registered on the job beside this peer.
func othersItem(s *cluster.JobSnapshot) {
	s.Items = []cluster.ItemState{{Exists: true, Owner: "other", OwnerVersion: 1}}
	s.Instances = map[string]string{"me": "10.0.0.1", "other": "10.0.0.2"}
	s.Leader = "other"
}

// decidedAt is the scheduled fire the executor last recorded as decided for job j.
func decidedAt(e *Executor) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.status["j"]; st != nil {
		return st.decided.at
	}
	return time.Time{}
}

// fireReturns hands off a fire of job j and fails the test unless Fire returns (the handing-off goroutine is
// not held: the scheduler's loop hands off every job's fires).
func fireReturns(t *testing.T, e *Executor, at time.Time) {
	t.Helper()
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		e.Fire(Due{Job: "j", At: at})
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Fire waited on the goroutine that handed the fire off")
	}
}

// A fire with no item on this peer and nothing to wait for is decided on the goroutine that hands it off,
// before Fire returns: its status and its decided record are there, and no other goroutine read the job.
func TestAFireWithNothingHereIsDecidedWhereItIsHandedOff(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.update(othersItem)
	var mu sync.Mutex
	readers := map[uint64]bool{}
	reg.set(func() {
		reg.onJob = func() {
			mu.Lock()
			readers[goroutineID()] = true
			mu.Unlock()
		}
	})
	e := newTestExecutor(reg, send)
	at := time.Unix(100, 0)
	e.Fire(Due{Job: "j", At: at})
	if st := e.Status("j"); !st.LastFireAt.Equal(at) || st.SkipReason != "" {
		t.Errorf("after Fire returned: last fire %v, skip reason %q; want %v and none", st.LastFireAt, st.SkipReason, at)
	}
	if got := decidedAt(e); !got.Equal(at) {
		t.Errorf("after Fire returned: decided %v, want %v", got, at)
	}
	e.Drain(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if me := goroutineID(); len(readers) != 1 || !readers[me] {
		t.Errorf("the job was read on goroutines %v, want only the caller's (%d)", readers, me)
	}
	send.none(t)
}

// A fire with no item here whose sharding is not ready is not waited for by the goroutine that hands it off:
// Fire returns, and the fire is decided once the leader's resharding lands, not skipped.
func TestAFireWithNothingHereWaitsForItsShardingOnAGoroutineOfItsOwn(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.update(func(s *cluster.JobSnapshot) {
		othersItem(s)
		s.Necessary = true
	})
	e := newTestExecutor(reg, send) // ReshardWait's default: a wait on the caller would outlast the test
	defer e.Drain(time.Second)
	at := time.Unix(100, 0)
	fireReturns(t, e, at)
	if got := decidedAt(e); !got.IsZero() {
		t.Fatalf("decided %v before the resharding", got)
	}
	reg.resharded()
	waitFor(t, func() bool { return decidedAt(e).Equal(at) })
	if st := e.Status("j"); st.SkipReason != "" {
		t.Errorf("skip reason %q, want none", st.SkipReason)
	}
	send.none(t)
}

// A fire with no item here whose session is in doubt is not waited for by the goroutine that hands it off.
func TestAFireWithNothingHereWaitsForItsSessionOnAGoroutineOfItsOwn(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.update(othersItem)
	reg.suspend(true)
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	at := time.Now().Add(time.Hour) // its session grace runs from its scheduled time
	fireReturns(t, e, at)
	if got := decidedAt(e); !got.IsZero() {
		t.Fatalf("decided %v while the session was in doubt", got)
	}
	reg.suspend(false)
	waitFor(t, func() bool { return decidedAt(e).Equal(at) })
	send.none(t)
}

func TestDecidesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(s *cluster.JobSnapshot)
		counters bool
		want     bool
	}{
		{"no item here", othersItem, false, true},
		{"an item here", func(*cluster.JobSnapshot) {}, false, false},
		{"one item of two here", func(s *cluster.JobSnapshot) {
			othersItem(s)
			s.Config.ShardingTotalCount = 2
			s.Items = append(s.Items, cluster.ItemState{Exists: true, Owner: "me", OwnerVersion: 1})
		}, false, false},
		{"this peer's item disabled", func(s *cluster.JobSnapshot) { s.Items[0].Disabled = true }, false, true},
		{"this peer's item taken over by another", func(s *cluster.JobSnapshot) { s.Items[0].FailoverTo = "other" }, false, true},
		{"registration under way", func(s *cluster.JobSnapshot) {
			othersItem(s)
			s.Registered, s.Registering = false, true
		}, false, false},
		{"removed from the job by an operator", func(s *cluster.JobSnapshot) {
			othersItem(s)
			s.Registered = false
		}, false, true},
		{"remainingFires counted by the executor", func(s *cluster.JobSnapshot) {
			othersItem(s)
			s.Config.RemainingFires = 3
		}, true, false},
		{"remainingFires without counters", func(s *cluster.JobSnapshot) {
			othersItem(s)
			s.Config.RemainingFires = 3
		}, false, true},
		{"config can't be parsed", func(s *cluster.JobSnapshot) { s.ConfigErr = errors.New("yaml: bad") }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := *newFakeRegistry(1).snap
			cfg := *s.Config
			s.Config = &cfg
			tc.change(&s)
			if got := decidesAtOnce(&s, tc.counters); got != tc.want {
				t.Errorf("decidesAtOnce = %v, want %v", got, tc.want)
			}
		})
	}
}
