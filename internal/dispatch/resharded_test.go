package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// TestExecutorSkipsItemsTheirPreviousOwnerRanThisFire: a fire handed items by a resharding seen near its
// time (without waiting for it) reads their completed nodes and leaves out the items whose previous owner
// already ran this very fire; a resharding seen long before the fire costs no read.
func TestExecutorSkipsItemsTheirPreviousOwnerRanThisFire(t *testing.T) {
	at := time.Unix(100, 0)
	for _, tc := range []struct {
		name      string
		changedAt time.Time
		want      map[int]bool
	}{
		{"resharded just before the fire", at.Add(-time.Second), map[int]bool{0: true, 2: true}},
		{"resharded just after the fire was due", at.Add(300 * time.Millisecond), map[int]bool{0: true, 2: true}},
		{"resharded long before", at.Add(-time.Minute), map[int]bool{0: true, 1: true, 2: true}},
		{"never resharded here", time.Time{}, map[int]bool{0: true, 1: true, 2: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, send := newFakeRegistry(3), newFakeSender()
			reg.snap.OwnersChangedAt = tc.changedAt
			reg.completed[1] = cluster.Completed{InstanceID: "old", ExecutionID: "x", Source: ejserver.SourceNormal, ScheduledAt: at}
			reg.completed[2] = cluster.Completed{InstanceID: "old", ExecutionID: "y", Source: ejserver.SourceNormal, ScheduledAt: at.Add(-time.Second)}
			e := newTestExecutor(reg, send)
			defer e.Drain(time.Second)
			e.Fire(Due{Job: "j", At: at})
			got := map[int]bool{}
			for range tc.want {
				got[send.next(t).ShardingItem] = true
			}
			send.none(t)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("posted items %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExecutorFireThatWaitedForAReshardingSkipsItemsThatAlreadyRanIt(t *testing.T) {
	reg, send := newFakeRegistry(3), newFakeSender()
	at := time.Unix(100, 0)
	reg.snap.Necessary = true // a peer joined: the leader (this peer) reshards before the fire
	// the previous owner of item 0 ran this fire before the resharding; item 1's last run is the fire
	// before; item 2's last run was a manual trigger after it (a normal fire still runs)
	reg.completed[0] = cluster.Completed{ExecutionID: "x0", InstanceID: "old", Source: ejserver.SourceNormal, ScheduledAt: at}
	reg.completed[1] = cluster.Completed{ExecutionID: "x1", InstanceID: "old", Source: ejserver.SourceNormal, ScheduledAt: at.Add(-10 * time.Second)}
	reg.completed[2] = cluster.Completed{ExecutionID: "x2", InstanceID: "old", Source: ejserver.SourceManual, ScheduledAt: at.Add(time.Second)}
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resharder: resharderFunc(func(context.Context, string) error { reg.resharded(); return nil })})
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: at})
	got := map[int]bool{send.next(t).ShardingItem: true, send.next(t).ShardingItem: true}
	if !got[1] || !got[2] {
		t.Fatalf("sent %v, want items 1 and 2", got)
	}
	send.none(t)

	// a fire that found its sharding ready reads nothing and runs every item
	e.Fire(Due{Job: "j", At: at})
	for range 3 {
		send.next(t)
	}
}

// A peer that joins between a trigger request and the resharding it causes is not left out: the leader hands
// the trigger to the online instances that own requested items and were not reached, and to nobody else.

func TestRanFire(t *testing.T) {
	at := time.Unix(100, 0)
	normal := func(d time.Duration) cluster.Completed {
		return cluster.Completed{Source: ejserver.SourceNormal, ScheduledAt: at.Add(d)}
	}
	lost := normal(0)
	lost.State = cluster.CompletedLost
	catchUp := cluster.Completed{Source: ejserver.SourceMisfire, ScheduledAt: at.Add(-5 * time.Second), Latest: at}
	manual := cluster.Completed{Source: ejserver.SourceManual, ScheduledAt: at.Add(time.Second)}
	for _, tc := range []struct {
		name         string
		last         cluster.Completed
		ok           bool
		err          error
		held, gained bool // ranFire with strict false, true
	}{
		{"this fire ran", normal(0), true, nil, true, true},
		{"a later fire ran", normal(time.Second), true, nil, true, true},
		{"an earlier fire ran last", normal(-time.Second), true, nil, false, false},
		{"never ran", cluster.Completed{}, false, nil, false, false},
		{"a catch-up of an older fire ended after this one", catchUp, true, nil, true, true},
		{"this fire's run ended as LOST", lost, true, nil, false, true},
		{"a manual run after it, no latest fire recorded", manual, true, nil, false, true},
		{"the node could not be read", cluster.Completed{}, false, errors.New("zk: connection closed"), false, true},
	} {
		if got := ranFire(tc.last, tc.ok, tc.err, at, false); got != tc.held {
			t.Errorf("%s: ranFire for a held fire = %v, want %v", tc.name, got, tc.held)
		}
		if got := ranFire(tc.last, tc.ok, tc.err, at, true); got != tc.gained {
			t.Errorf("%s: ranFire for a gained item = %v, want %v", tc.name, got, tc.gained)
		}
	}
}
