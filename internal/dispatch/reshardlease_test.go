package dispatch

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// A fire's leader whose resharding is refused because its session's lease lapsed (ZooKeeper stalled by a burst
// held the heartbeat) waits for the session and reshards then: its peers wait for that resharding. It skipped
// the fire at once, and the peers waited their 30 s for a resharding nobody made.
func TestALeaderWhoseLeaseLapsedReshardsOnceItIsBack(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.snap.Necessary = true
	var calls atomic.Int32
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resharder: resharderFunc(func(context.Context, string) error {
			if calls.Add(1) == 1 {
				reg.suspend(true)
				go func() { time.Sleep(200 * time.Millisecond); reg.suspend(false) }()
				return cluster.ErrNotLeader
			}
			reg.resharded()
			return nil
		})})
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Now()})
	got := map[int]bool{send.next(t).ShardingItem: true, send.next(t).ShardingItem: true}
	if !got[0] || !got[1] {
		t.Fatalf("sent items %v, want 0 and 1", got)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("resharded %d times, want 2 (refused in doubt, then once the lease was back)", n)
	}
}

// A leader deposed while its fire waits does not skip the fire: it waits for the new leader's resharding, as
// its peers do.
func TestADeposedLeaderWaitsForTheNewLeadersResharding(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.snap.Necessary = true
	var calls atomic.Int32
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resharder: resharderFunc(func(context.Context, string) error {
			calls.Add(1)
			go func() {
				time.Sleep(100 * time.Millisecond)
				reg.update(func(s *cluster.JobSnapshot) { // the new leader's resharding lands
					s.Leader, s.Necessary = "other", false
				})
			}()
			return cluster.ErrNotLeader
		})})
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Now()})
	got := map[int]bool{send.next(t).ShardingItem: true, send.next(t).ShardingItem: true}
	if !got[0] || !got[1] {
		t.Fatalf("sent items %v, want 0 and 1", got)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("resharded %d times, want 1", n)
	}
}
