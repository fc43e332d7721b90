package cluster

import (
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// TestRefresherLetsAPeakGo: once a backlog larger than stateKeep is drained, the index is made anew (a Go map
// keeps its peak's buckets: a registration of 100,000 jobs left ~5 MB of idle index per 20,000 jobs), while a
// small one is kept.
func TestRefresherLetsAPeakGo(t *testing.T) {
	for _, tt := range []struct {
		keys    int
		renewed bool
	}{{stateKeep + 1, true}, {stateKeep / 2, false}} {
		t.Run(fmt.Sprint(tt.keys), func(t *testing.T) {
			stop := make(chan struct{})
			w := newRefresher(2, func(refreshKey) error { return nil }, slog.New(slog.DiscardHandler), clock.Real{}, stop)
			before := reflect.ValueOf(w.state).UnsafePointer()
			for i := range tt.keys {
				w.kick(refreshKey{kind: kindLoad, job: fmt.Sprintf("j%d", i)})
			}
			done := w.idleCh()
			w.start()
			<-done
			close(stop)
			w.wait()
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.state) != 0 {
				t.Fatalf("%d keys left", len(w.state))
			}
			if renewed := reflect.ValueOf(w.state).UnsafePointer() != before; renewed != tt.renewed {
				t.Fatalf("index made anew: %v, want %v", renewed, tt.renewed)
			}
		})
	}
}

// TestRefresherLetsAPeakGoWhileBusy: the index is made anew when it falls well below its peak even though it
// never empties (at 100,000 jobs, refreshes keep coming after a registration and the ~50 MB index of its
// peak stayed), and an emptied queue lets its backlog's array go.
func TestRefresherLetsAPeakGoWhileBusy(t *testing.T) {
	stop := make(chan struct{})
	busy := refreshKey{kind: kindLeader, job: "busy"}
	hold, running, queued := make(chan struct{}), make(chan struct{}), make(chan struct{})
	w := newRefresher(2, func(k refreshKey) error {
		if k == busy {
			close(running)
			<-hold
		}
		<-queued // the backlog piles up as in a registration
		return nil
	}, slog.New(slog.DiscardHandler), clock.Real{}, stop)
	defer func() {
		close(stop)
		w.wait()
	}()
	defer close(hold)
	w.start()
	w.kick(busy)
	<-running
	const keys = 8 * stateKeep
	for i := range keys {
		w.kick(refreshKey{kind: kindLoad, job: fmt.Sprintf("j%d", i)})
	}
	w.mu.Lock()
	peak := w.peak
	w.mu.Unlock()
	if peak < keys {
		t.Fatalf("peak %d, want at least %d", peak, keys)
	}
	close(queued)
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.mu.Lock()
		left, peak, queue := len(w.state), w.peak, w.lanes[laneOther]
		w.mu.Unlock()
		if left == 1 {
			if peak > stateKeep {
				t.Fatalf("the index keeps a peak of %d keys with 1 left", peak)
			}
			if queue != nil {
				t.Fatalf("the emptied queue keeps an array of %d keys", cap(queue))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d keys left", left)
		}
		runtime.Gosched()
	}
}

// TestRefresherBacklog: the waiting keys are counted by lane and by kind, the kinds named, the largest first.
func TestRefresherBacklog(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	w := newRefresher(1, func(refreshKey) error { return nil }, slog.New(slog.DiscardHandler), clock.Real{}, stop)
	w.urgent = urgent
	w.batches[laneLoads] = batchLane{run: func(keys []refreshKey) []error { return make([]error, len(keys)) },
		of: func(k refreshKey) bool { return k.kind == kindLoad }, max: 8}
	for i := range 3 {
		w.kick(refreshKey{kind: kindReport, job: fmt.Sprint(i)})
		w.kick(refreshKey{kind: kindLoad, job: fmt.Sprint(i)})
	}
	w.kick(refreshKey{kind: kindItemInstance, job: "a"})
	w.kick(refreshKey{kind: kindItemInstance, job: "a"}) // coalesced
	w.kick(refreshKey{kind: kindServers, job: "a"})
	w.kickUrgent(refreshKey{kind: kindCampaign, job: "a"})
	if got, want := w.backlog(), (Backlog{Urgent: 5, Batched: 3, Other: 1}); got != want {
		t.Fatalf("backlog %+v, want %+v", got, want)
	}
	urgentKinds, others := w.queuedByKind()
	if got, want := countsByKind(urgentKinds), "report=3 item_instance=1 campaign=1"; got != want {
		t.Errorf("urgent %q, want %q", got, want)
	}
	if got, want := countsByKind(others), "load=3 servers=1"; got != want {
		t.Errorf("others %q, want %q", got, want)
	}
	for k := refreshKind(1); k <= lastKind; k++ {
		if k.String() == "" || k.String() == "unknown" {
			t.Errorf("kind %d has no name", k)
		}
	}
}

// TestAKeyKickedWhileQueuedRunsOnce: kicks of a key that waits in its lane are one run (it reads after them
// all); a kick while it runs is one run more, and no more however many come.
func TestAKeyKickedWhileQueuedRunsOnce(t *testing.T) {
	stop := make(chan struct{})
	runs := map[refreshKey]int{}
	kickWhileRunning := refreshKey{kind: kindLeader, job: "b"}
	var w *refresher
	w = newRefresher(1, func(k refreshKey) error {
		runs[k]++ // one worker: no other goroutine writes runs
		if k == kickWhileRunning && runs[k] == 1 {
			for range 3 {
				w.kick(k)
			}
		}
		return nil
	}, slog.New(slog.DiscardHandler), clock.Real{}, stop)
	queued := refreshKey{kind: kindInstances, job: "a"}
	for range 3 {
		w.kick(queued)
	}
	w.kick(kickWhileRunning)
	w.kick(kickWhileRunning)
	drainRefresher(w, stop)
	if runs[queued] != 1 || runs[kickWhileRunning] != 2 {
		t.Fatalf("runs %v: want the key kicked while queued run once, the one kicked while running twice", runs)
	}
}
