package dispatch

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
)

// Items prepared ahead of their fire (the fire lead): sent at their scheduled time, or dropped with their
// running node when the job, the item or the session no longer allows them.

// newLeadExecutor returns an executor on a fake clock at 1000 s, for fires handed off ahead of their time.
func newLeadExecutor(reg *fakeRegistry, send *fakeSender) (*Executor, *clock.Fake) {
	return leadExecutor(reg, send, nil)
}

// newRecordingLeadExecutor is newLeadExecutor with a recorder of the history it writes.
func newRecordingLeadExecutor(reg *fakeRegistry, send *fakeSender) (*Executor, *clock.Fake, *recorder) {
	rec := &recorder{}
	e, clk := leadExecutor(reg, send, rec)
	return e, clk, rec
}

func leadExecutor(reg *fakeRegistry, send *fakeSender, rec Recorder) (*Executor, *clock.Fake) {
	clk := clock.NewFake(time.Unix(1000, 0))
	return NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Recorder: rec, Clock: clk, Activity: NewActivity(clk),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), clk
}

func TestExecutorPreparedItemLeavesAtItsScheduledTime(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	e, clk := newLeadExecutor(reg, send)
	defer e.Drain(time.Second)
	created := clk.TimerCreated()
	e.Fire(Due{Job: "j", At: time.Unix(1001, 0)}) // handed off a second early
	<-created
	waitFor(t, func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return len(reg.running) == 2 }) // fenced ahead
	send.none(t)
	const guard = 100 * time.Millisecond
	if busy := e.cfg.Activity.Busy(guard); busy != 0 {
		t.Fatalf("busy for %s a second before the items are due", busy)
	}
	clk.Advance(950 * time.Millisecond)
	waitFor(t, func() bool { return e.cfg.Activity.Busy(guard) == 150*time.Millisecond }) // due in 50ms, then guard
	clk.Advance(49 * time.Millisecond)
	send.none(t)
	clk.Advance(time.Millisecond)
	for range 2 {
		if p := send.next(t); !p.ScheduledAt.Equal(time.Unix(1001, 0)) || p.Source != string(ejserver.SourceNormal) {
			t.Fatalf("payload %+v", p)
		}
	}
	waitFor(t, func() bool { return e.cfg.Activity.Busy(guard) == guard }) // the requests just left
	clk.Advance(guard)
	if busy := e.cfg.Activity.Busy(guard); busy != 0 {
		t.Fatalf("busy for %s after the burst", busy)
	}
}

// An item whose response is back records its outcome only once the rest of its burst has left: the history
// records, ZooKeeper's completed node and the metrics would otherwise take CPU from requests still leaving.
func TestExecutorRecordsAnOutcomeAfterTheBurstHasLeft(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "the last request is written"
		if late {
			name = "the last request is still not written after outcomeWait"
		}
		t.Run(name, func(t *testing.T) {
			reg, send := newFakeRegistry(2), newFakeSender()
			e, clk, rec := newRecordingLeadExecutor(reg, send)
			defer e.Drain(time.Second)
			stalled := send.stallItem(1)
			unstall := sync.OnceFunc(func() { close(stalled) })
			defer unstall()
			e.Fire(Due{Job: "j", At: time.Unix(1001, 0)}) // prepared a second ahead: both items wait for their time
			waitFor(t, func() bool { return e.cfg.Activity.dueCount() == 2 })
			waiting := clk.TimerCreated() // the next timer: item 0 waiting for its burst, bounded by outcomeWait
			clk.Advance(time.Second)
			if p := send.next(t); p.ShardingItem != 0 {
				t.Fatalf("item %d arrived first; item 1 is stalled", p.ShardingItem)
			}
			ended := func() int {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				n := 0
				for _, x := range rec.execs {
					if x.Done() {
						n++
					}
				}
				return n
			}
			// item 0's response is back, item 1 is still on its way out: item 0 waits for it
			select {
			case <-waiting:
			case <-time.After(5 * time.Second):
				t.Fatal("item 0 did not wait for the rest of its burst")
			}
			if n := reg.endedCount(); n != 0 || ended() != 0 {
				t.Fatalf("item 0's outcome recorded (%d registry ends, %d end records) while item 1 still leaves", n, ended())
			}
			if late {
				clk.Advance(outcomeWait) // item 1 never leaves: item 0 records its outcome anyway
				waitFor(t, func() bool { return ended() == 1 })
				return
			}
			unstall()
			waitFor(t, func() bool { return ended() == 2 && reg.endedCount() == 2 })
		})
	}
}

// A task's start traces are built when the fire is prepared and stamped when its first item starts.
func TestExecutorStampsStartTracesWhenTheTaskStarts(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	e, clk, rec := newRecordingLeadExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(1001, 0)}) // handed off a second early
	waitFor(t, func() bool { return e.cfg.Activity.dueCount() == 2 })
	clk.Advance(time.Second)
	send.next(t)
	send.next(t)
	waitFor(t, func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return len(rec.traces) == 3 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, want := range []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskRunning, ejserver.TaskFinished} {
		tr := rec.traces[i]
		if tr.State != want || !tr.CreationTime.Equal(time.Unix(1001, 0)) || tr.ID == "" || tr.ShardingItems != "0,1" {
			t.Fatalf("trace %d: %+v, want %s at the start time 1001", i, tr, want)
		}
	}
	if rec.traces[0].ID == rec.traces[1].ID {
		t.Fatal("the start traces share an id")
	}
}

func TestExecutorDropsAPreparedItemTheJobNoLongerWants(t *testing.T) {
	for name, change := range map[string]func(*fakeRegistry){
		"job disabled": func(r *fakeRegistry) {
			s := copySnap(r.snap)
			s.Config.Disabled = true
			r.snap = &s
		},
		"session expired": func(r *fakeRegistry) { r.lease, r.expired = false, true; r.epoch++ },
		"item disabled": func(r *fakeRegistry) {
			s := *r.snap
			s.Items = []cluster.ItemState{{Exists: true, Owner: "me", OwnerVersion: 1, Disabled: true}}
			r.snap = &s
		},
	} {
		t.Run(name, func(t *testing.T) {
			reg, send := newFakeRegistry(1), newFakeSender()
			e, clk := newLeadExecutor(reg, send)
			defer e.Drain(time.Second)
			created := clk.TimerCreated()
			e.Fire(Due{Job: "j", At: time.Unix(1001, 0)})
			<-created
			waitFor(t, func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return len(reg.running) == 1 })
			reg.set(func() { change(reg) })
			clk.Advance(time.Second)
			send.none(t)
			waitFor(t, func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return len(reg.running) == 0 }) // its running node went
		})
	}
}

// A prepared item not sent because the session expired has its running node removed again after the
// removal failed (the connection was down just then): a node left behind kept the item "running" for minutes
// and skipped its fires (found by the nemesis soak, SEED=2029).
func TestExecutorRetriesTheRemovalOfAnUnsentItemsRunningNode(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.clearFailures = 2
	e, clk := newLeadExecutor(reg, send)
	defer e.Drain(time.Second)
	created := clk.TimerCreated()
	e.Fire(Due{Job: "j", At: time.Unix(1001, 0)})
	<-created
	waitFor(t, func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return len(reg.running) == 1 })
	reg.expire()
	clk.Advance(time.Second)
	send.none(t)
	// each failed removal waits for its back-off on the fake clock: move it on until the node is gone
	waitFor(t, func() bool {
		clk.Advance(endBackoffMax)
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return len(reg.running) == 0
	})
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.clearCalls != 3 {
		t.Fatalf("ClearStaleRunning called %d times, want 3 (two failures, then the removal)", reg.clearCalls)
	}
}

func TestExecutorPreparedFireOfARunningItemIsDecidedOnTime(t *testing.T) {
	reg, send := newFakeRegistry(1), newFakeSender()
	e, clk := newLeadExecutor(reg, send)
	defer e.Drain(time.Second)
	release := send.holdItem(0)
	e.Fire(Due{Job: "j", At: time.Unix(1000, 0)})
	send.next(t) // item 0 runs
	created := clk.TimerCreated()
	e.Fire(Due{Job: "j", At: time.Unix(1001, 0)}) // handed off early while item 0 still runs
	<-created
	send.mu.Lock()
	delete(send.hold, 0)
	send.mu.Unlock()
	close(release) // the run ends before the next scheduled time: no misfire
	waitFor(t, func() bool { return len(e.Running("j")) == 0 })
	clk.Advance(time.Second)
	if p := send.next(t); p.Source != string(ejserver.SourceNormal) || !p.ScheduledAt.Equal(time.Unix(1001, 0)) {
		t.Fatalf("payload %+v", p)
	}
	if st := e.Status("j"); st.Misfires != 0 {
		t.Fatalf("misfires %d", st.Misfires)
	}
	send.none(t)
}
