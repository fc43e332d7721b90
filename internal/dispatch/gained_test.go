package dispatch

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
	"github.com/ejserver/ejserver/internal/webhook"
)

// snapOwned is a snapshot of a job whose items' owners are owners ("" for a missing item) and whose items in
// disabled are disabled.
func snapOwned(owners []string, disabled ...int) *cluster.JobSnapshot {
	cfg := ejserver.DefaultJobConfig()
	cfg.ShardingTotalCount = len(owners)
	items := make([]cluster.ItemState, len(owners))
	for i, o := range owners {
		items[i] = cluster.ItemState{Exists: o != "", Owner: o, Disabled: slices.Contains(disabled, i)}
	}
	return &cluster.JobSnapshot{Name: "j", Config: &cfg, Items: items, Me: "me"}
}

func TestGainedItems(t *testing.T) {
	for _, tc := range []struct {
		name    string
		owned   []int // when the fire was decided
		now     *cluster.JobSnapshot
		want    []int
		ownedIn []int // ownedItems(now)
	}{
		{"nothing moved", []int{0, 1}, snapOwned([]string{"me", "me", "b"}), nil, []int{0, 1}},
		{"one item came", []int{0}, snapOwned([]string{"me", "me", "b"}), []int{1}, []int{0, 1}},
		{"all came to a peer that owned none", nil, snapOwned([]string{"me", "me"}), []int{0, 1}, []int{0, 1}},
		{"items went away", []int{0, 1, 2}, snapOwned([]string{"me", "b", "b"}), nil, []int{0}},
		{"one came, one went", []int{2}, snapOwned([]string{"me", "b", "b"}), []int{0}, []int{0}},
		// owned when the fire was decided, disabled then: enabling it is no gain
		{"disabled then, owned all along", []int{0, 1}, snapOwned([]string{"me", "me"}), nil, []int{0, 1}},
		{"a gained item that is disabled does not run", nil, snapOwned([]string{"me", "me"}, 1), []int{0}, []int{0, 1}},
		{"a missing item", nil, snapOwned([]string{"me", ""}), []int{0}, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gainedItems(tc.owned, tc.now); !slices.Equal(got, tc.want) {
				t.Fatalf("gainedItems = %v, want %v", got, tc.want)
			}
			got := ownedItems(tc.now)
			if !slices.Equal(got, tc.ownedIn) {
				t.Fatalf("ownedItems = %v, want %v", got, tc.ownedIn)
			}
			if !sameOwned(got, tc.now) || sameOwned(append(slices.Clone(got), 99), tc.now) {
				t.Fatal("sameOwned disagrees with ownedItems")
			}
			if len(got) > 0 && sameOwned(got[1:], tc.now) {
				t.Fatal("sameOwned took a shorter list for the same")
			}
		})
	}
}

func TestGainedUntil(t *testing.T) {
	at := time.Unix(1000, 0)
	wait, lead := 30*time.Second, time.Second
	for _, tc := range []struct {
		name    string
		next    time.Time
		misfire bool
		want    time.Time
	}{
		{"misfire on: as long as a held fire waits, to the next fire's hand-off", at.Add(time.Minute), true, at.Add(time.Minute - lead)},
		{"misfire on: past the next fire, as long as the wait", at.Add(time.Second), true, at.Add(wait)},
		{"misfire on, the next fire in a day: at most MaxShardingWait", at.Add(24 * time.Hour), true, at.Add(schedule.MaxShardingWait)},
		{"misfire on, no next fire", time.Time{}, true, at.Add(wait)},
		{"misfire off: not past the next fire", at.Add(time.Second), false, at.Add(time.Second)},
		{"misfire off, the next fire after the wait", at.Add(time.Minute), false, at.Add(wait)},
		{"misfire off, no next fire", time.Time{}, false, at.Add(wait)},
	} {
		if got := gainedUntil(at, tc.next, wait, lead, tc.misfire); !got.Equal(tc.want) {
			t.Errorf("%s: gainedUntil = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// FuzzGainedItems: a gained item is one a fire runs here now and that was not owned when the fire was decided;
// what ownedItems lists, sameOwned takes for the same.
func FuzzGainedItems(f *testing.F) {
	f.Add([]byte{0, 1, 2}, []byte{1, 0, 1}, uint16(0))
	f.Add([]byte{}, []byte{1, 1}, uint16(3))
	f.Fuzz(func(t *testing.T, before, now []byte, disabled uint16) {
		owner := func(b byte) string { return [...]string{"", "me", "b", "c"}[b%4] }
		if len(before) > 16 || len(now) > 16 {
			return
		}
		was := make([]string, len(now))
		for i := range was {
			if i < len(before) {
				was[i] = owner(before[i])
			}
		}
		is := make([]string, len(now))
		var dis []int
		for i, b := range now {
			is[i] = owner(b)
			if disabled&(1<<i) != 0 {
				dis = append(dis, i)
			}
		}
		s := snapOwned(is, dis...)
		owned := ownedItems(snapOwned(was))
		if !sameOwned(owned, snapOwned(was)) {
			t.Fatalf("sameOwned(ownedItems(s), s) is false for %v", was)
		}
		got := gainedItems(owned, s)
		for i := range is {
			want := s.IsMyItem(i) && was[i] != "me"
			if slices.Contains(got, i) != want {
				t.Fatalf("before %v now %v disabled %v: gained %v; item %d gained: %v, want %v", was, is, dis, got, i, !want, want)
			}
		}
	})
}

// catchUpAfter marks a completed node of the gained-items table: a catch-up of the fire 5 s before, ended
// after the fire itself ran (its Latest).
const catchUpAfter = time.Hour

// firedWithItem0 starts an executor on a job of three items of which this peer owns item 0 (b the others),
// fires it now, and returns once item 0 is sent.
func firedWithItem0(t *testing.T) (*fakeRegistry, *fakeSender, *Executor, time.Time) {
	t.Helper()
	reg, send := newFakeRegistry(3), newFakeSender()
	reg.snap.Items[1].Owner, reg.snap.Items[2].Owner = "b", "b"
	reg.snap.Instances["b"] = "10.0.0.2"
	e := newTestExecutor(reg, send)
	t.Cleanup(func() { e.Drain(time.Second) })
	at := time.Now().Truncate(time.Second)
	e.Fire(Due{Job: "j", At: at})
	if p := send.next(t); p.ShardingItem != 0 {
		t.Fatalf("the fire ran item %d, want 0", p.ShardingItem)
	}
	return reg, send, e, at
}

// give makes this peer the owner of items in a new sharding (OwnerVersion 2), as a resharding's reads do;
// settled is the snapshot's ItemsSettled; extra runs under the fake's lock.
func give(reg *fakeRegistry, settled bool, extra func(), items ...int) {
	reg.update(func(s *cluster.JobSnapshot) {
		s.Items = slices.Clone(s.Items)
		for _, i := range items {
			s.Items[i] = cluster.ItemState{Exists: true, Owner: "me", OwnerVersion: 2}
		}
		s.ItemsSettled = settled
		if extra != nil {
			extra()
		}
	})
}

// itemOfB returns a fake registry of a job of total items, with a config of its own to change, whose item
// is owned by instance b, and a fake sender.
func itemOfB(total, item int) (*fakeRegistry, *fakeSender) {
	reg := newFakeRegistry(total)
	cfg := *reg.snap.Config
	reg.snap.Config = &cfg
	reg.snap.Items[item].Owner = "b"
	reg.snap.Instances["b"] = "10.0.0.2"
	return reg, newFakeSender()
}

// A resharding that gives this peer items after it decided a fire (here: it decided with item 0, then the
// leader, holding that fire elsewhere, moved items 1 and 2 here) runs them for that fire, unless their
// completed node shows the fire ran, or their running node that it runs; once, however many of the job's item
// nodes change after.
func TestExecutorRunsTheItemsItGainedAfterItDecidedAFire(t *testing.T) {
	for _, tc := range []struct {
		name string
		// completed and running: nodes of items 1 and 2 when the resharding is seen
		completed map[int]time.Duration // offset from the fire's time
		running   map[int]time.Duration
		lost      bool // the completed nodes are of runs ended as LOST (their peer vanished mid-run)
		want      []int
	}{
		{"nobody ran them", nil, nil, false, []int{1, 2}},
		{"item 1 ran that fire on its previous owner", map[int]time.Duration{1: 0, 2: -time.Second}, nil, false, []int{2}},
		{"item 2 still runs that fire (accepted work)", nil, map[int]time.Duration{2: 0}, false, []int{1}},
		{"both ran it", map[int]time.Duration{1: 0, 2: time.Second}, nil, false, nil},
		// its request may have left: without failover a run is at most once
		{"item 1's run of that fire ended as LOST", map[int]time.Duration{1: 0, 2: -time.Second}, nil, true, []int{2}},
		// a misfire's catch-up of an older fire ended after that fire: the completed node's latest fire says
		{"item 1's catch-up ended after that fire ran (found by the soak)", map[int]time.Duration{1: catchUpAfter}, nil, false, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, send, e, at := firedWithItem0(t)
			send.none(t)
			e.ItemsChanged("j") // nothing gained yet
			send.none(t)

			give(reg, true, func() {
				for i, d := range tc.completed {
					reg.completed[i] = cluster.Completed{ExecutionID: fmt.Sprint("x", i), InstanceID: "b", Source: ejserver.SourceNormal, ScheduledAt: at.Add(d)}
					if d == catchUpAfter {
						reg.completed[i] = cluster.Completed{ExecutionID: fmt.Sprint("x", i), InstanceID: "b", Source: ejserver.SourceMisfire,
							ScheduledAt: at.Add(-5 * time.Second), Latest: at}
					}
					if tc.lost {
						c := reg.completed[i]
						c.State = cluster.CompletedLost
						reg.completed[i] = c
					}
				}
				for i, d := range tc.running {
					reg.running[i] = cluster.Running{ExecutionID: fmt.Sprint("r", i), InstanceID: "b", Source: ejserver.SourceNormal, ScheduledAt: at.Add(d), Async: true}
				}
			}, 1, 2)
			e.ItemsChanged("j")
			var got []int
			for range tc.want {
				p := send.next(t)
				if !p.ScheduledAt.Equal(at) || p.Source != string(ejserver.SourceNormal) {
					t.Fatalf("gained item %d ran for %s (%s), want the fire at %s", p.ShardingItem, p.ScheduledAt, p.Source, at)
				}
				got = append(got, p.ShardingItem)
			}
			send.none(t)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("gained items run %v, want %v", got, tc.want)
			}
			e.ItemsChanged("j") // another node of the job changed: nothing runs twice
			send.none(t)
		})
	}
}

// Gained items do not run for a fire this peer decided after the resharding (it ran them then), for one too
// long ago, for a manual trigger's fire, for one refused late (misfire off, past the next fire), or for a job
// whose runs leave no completed node (monitorExecution off).
func TestExecutorLeavesGainedItemsThatAreNotAFiresLoss(t *testing.T) {
	gain := func(reg *fakeRegistry) { give(reg, true, nil, 1) }
	for _, tc := range []struct {
		name  string
		setup func(reg *fakeRegistry, cfg *ExecutorConfig)
		fire  func(e *Executor, now time.Time)
		sent  int // by the fire itself
	}{
		{"decided after the resharding", nil, func(e *Executor, now time.Time) {}, 0},
		{"long ago", nil, func(e *Executor, now time.Time) { e.Fire(Due{Job: "j", At: now.Add(-time.Minute)}) }, 1},
		{"a manual trigger", func(reg *fakeRegistry, _ *ExecutorConfig) {
			reg.trigger = &cluster.TriggerRequest{ID: "t1", RequestedAt: time.Now(), Items: []int{0}}
		}, func(e *Executor, now time.Time) { e.Trigger("j") }, 1},
		{"misfire off, past the next fire", func(reg *fakeRegistry, _ *ExecutorConfig) {
			reg.snap.Config.Misfire = false
		}, func(e *Executor, now time.Time) {
			// handed off with the fire after it, as the scheduler does
			e.Fire(Due{Job: "j", At: now, Next: time.Now().Add(300 * time.Millisecond)})
			time.Sleep(400 * time.Millisecond)
		}, 1},
		{"monitorExecution off", func(reg *fakeRegistry, _ *ExecutorConfig) { reg.snap.Config.MonitorExecution = false },
			func(e *Executor, now time.Time) { e.Fire(Due{Job: "j", At: now}) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, send := itemOfB(2, 1)
			ecfg := ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if tc.setup != nil {
				tc.setup(reg, &ecfg)
			}
			e := NewExecutor(ecfg)
			defer e.Drain(time.Second)
			now := time.Now().Truncate(time.Second)
			if tc.name == "decided after the resharding" {
				gain(reg)
				e.Fire(Due{Job: "j", At: now})
				send.next(t)
				send.next(t)
			}
			tc.fire(e, now)
			for range tc.sent {
				send.next(t)
			}
			send.none(t)
			if tc.name != "decided after the resharding" {
				gain(reg)
			}
			e.ItemsChanged("j")
			send.none(t)
		})
	}
}

// An item node that changes while a look at the gained items is under way makes it look once more when it
// ends: here the first look gives up waiting for the job's item nodes to be read (gainedSettle), and the second
// finds both items the resharding gave.
func TestExecutorLooksAgainAtItemsGainedDuringALook(t *testing.T) {
	reg, send, e, at := firedWithItem0(t)
	give(reg, false, nil, 1)
	e.ItemsChanged("j") // a look begins, and waits for the item nodes to be read
	time.Sleep(100 * time.Millisecond)
	give(reg, false, nil, 2)
	e.ItemsChanged("j") // under way: looked at again after
	give(reg, true, nil)
	got := map[int]bool{}
	for range 2 {
		var p webhook.Payload
		select {
		case p = <-send.arrived:
		case <-time.After(gainedSettle + 5*time.Second):
			t.Fatal("no delivery")
		}
		if !p.ScheduledAt.Equal(at) {
			t.Fatalf("item %d ran for %s, want %s", p.ShardingItem, p.ScheduledAt, at)
		}
		got[p.ShardingItem] = true
	}
	send.none(t)
	if !got[1] || !got[2] {
		t.Fatalf("ran %v, want items 1 and 2", got)
	}
}

// A resharding read while a fire is being decided, after the fire took its snapshot of the job and before it
// recorded the items it owned then, gives its items for that fire all the same. The change's ItemsChanged
// comes before the decision is recorded, so it finds nothing to compare with: the decision looks itself.
// Here a restarted peer's new process, which has not listed the live peers yet, takes the stopped process's
// item 1 for a fine owner, decides the fire with item 0, and the leader's resharding gives it item 1 meanwhile
// (it holds the fire: registered before its hand-off). Before, item 1 ran for nobody at that fire (a suspect
// for the steady-100000 restarts' items handed from the old process straight to the new one, run by neither).
func TestExecutorRunsItemsGainedWhileItDecidedAFire(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.snap.Items[1].Owner = "old" // not among the job's instances; not known to be gone either
	e := newTestExecutor(reg, send)
	defer e.Drain(time.Second)
	reg.askedGone = func(id string) {
		if id != "old" {
			t.Errorf("asked whether %s is gone, want old", id)
		}
		give(reg, true, nil, 1)
		e.ItemsChanged("j") // the resharding's event, before the fire recorded its decision
	}
	at := time.Now().Truncate(time.Second)
	e.Fire(Due{Job: "j", At: at})
	sentEachOnce(t, send, at, 2)
}
