package dispatch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil"
)

func (f *fakeRegistry) PeerGone(id string) bool {
	f.mu.Lock()
	hook := f.askedGone
	f.askedGone = nil
	gone := f.gone[id]
	f.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	return gone
}

func (f *fakeRegistry) PeerLeft(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.left[id]
}

// peerSets is a Peers: gone lists the instances with no peer node, left those whose node went.
type peerSets struct{ gone, left []string }

func (p peerSets) PeerGone(id string) bool { return slices.Contains(p.gone, id) }
func (p peerSets) PeerLeft(id string) bool { return slices.Contains(p.left, id) }

// goneSnap is a 4-item job on instances a (this peer) and b, with items as given.
func goneSnap(items ...cluster.ItemState) *cluster.JobSnapshot {
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount = "j", len(items)
	return &cluster.JobSnapshot{Name: "j", Config: &cfg, Instances: map[string]string{"a": "10.0.0.1", "b": "10.0.0.2"},
		Servers: map[string]string{}, Leader: "a", Items: items, Me: "a", MyIP: "10.0.0.1", Registered: true,
		Settled: true, ItemsSettled: true}
}

func owned(owner string) cluster.ItemState {
	return cluster.ItemState{Exists: true, Owner: owner, OwnerVersion: 1}
}

func TestOwnersAway(t *testing.T) {
	disabled, failedOver := owned("x"), owned("x")
	disabled.Disabled, failedOver.FailoverTo = true, "a"
	tests := []struct {
		name      string
		snap      *cluster.JobSnapshot
		peers     peerSets
		want      []int
		states    []ownerState
		ready     bool
		reshard   bool
		wantMyOwn []int
	}{
		{name: "every owner online", snap: goneSnap(owned("a"), owned("b")), peers: peerSets{gone: []string{"x"}}, ready: true, wantMyOwn: []int{0}},
		{name: "an owner left: its instance and peer nodes are gone", snap: goneSnap(owned("a"), owned("x"), owned("b"), owned("x")),
			peers: peerSets{gone: []string{"x"}, left: []string{"x"}}, want: []int{1, 3}, states: []ownerState{ownerGone, ownerGone}, reshard: true, wantMyOwn: []int{0}},
		{name: "an owner stopping: its peer node went, its instance node is there; fires wait, nobody reshards",
			snap: goneSnap(owned("a"), owned("b")), peers: peerSets{gone: []string{"b"}, left: []string{"b"}}, want: []int{1}, states: []ownerState{ownerLeaving}, wantMyOwn: []int{0}},
		{name: "this peer stopping fires its own items", snap: goneSnap(owned("a"), owned("b")), peers: peerSets{gone: []string{"a"}, left: []string{"a"}},
			ready: true, wantMyOwn: []int{0}},
		{name: "an owner not registered on the job but a live peer is coming, not gone (a new job's first sharding)",
			snap: goneSnap(owned("a"), owned("new")), peers: peerSets{gone: []string{"x"}}, ready: true, wantMyOwn: []int{0}},
		{name: "an owner registered whose peer node this peer has not read yet is fine (never seen, so never left)",
			snap: goneSnap(owned("b")), peers: peerSets{gone: []string{"b"}}, ready: true},
		{name: "a disabled item nobody fires", snap: goneSnap(owned("a"), disabled), peers: peerSets{gone: []string{"x"}}, ready: true, wantMyOwn: []int{0}},
		{name: "an item taken over: its failover instance runs it", snap: goneSnap(owned("a"), failedOver), peers: peerSets{gone: []string{"x"}}, ready: true, wantMyOwn: []int{0}},
		{name: "the peers not listed yet: nobody is gone", snap: goneSnap(owned("x")), ready: true},
		{name: "an item without an owner is unsharded, not gone", snap: goneSnap(owned("a"), cluster.ItemState{OwnerVersion: -1}),
			peers: peerSets{gone: []string{"x", ""}}, reshard: true, wantMyOwn: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, states := ownersAway(tt.snap, tt.peers)
			if !slices.Equal(got, tt.want) || !slices.Equal(states, tt.states) {
				t.Fatalf("ownersAway = %v %v, want %v %v", got, states, tt.want, tt.states)
			}
			if got := fireReady(tt.snap, tt.peers); got != tt.ready {
				t.Fatalf("fireReady = %v, want %v", got, tt.ready)
			}
			if got := needsResharding(tt.snap, tt.peers); got != tt.reshard {
				t.Fatalf("needsResharding = %v, want %v", got, tt.reshard)
			}
			if got := tt.snap.MyItems(); !slices.Equal(got, tt.wantMyOwn) {
				t.Fatalf("MyItems = %v, want %v", got, tt.wantMyOwn)
			}
		})
	}
}

// FuzzOwnersAway: an item is gone exactly when a fire would leave it to nobody (it is runnable, no online
// instance's MyItems holds it, and its owner's peer is gone), and leaving exactly when its owner is another
// online instance whose peer node went; the leader reshards for gone owners only.
func FuzzOwnersAway(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, uint8(3), uint8(2))
	f.Add([]byte{9, 9, 9}, uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, goneMask, leftMask uint8) {
		ids := []string{"a", "b", "c", "d"} // a (this peer) and b are the job's instances; c and d are not
		items := make([]cluster.ItemState, 0, len(data))
		for _, d := range data {
			it := cluster.ItemState{Exists: d&0x40 == 0, Owner: ids[d&3], OwnerVersion: 1, Disabled: d&0x10 != 0}
			if d&0x20 != 0 {
				it.FailoverTo = "a"
			}
			if d&0x80 != 0 {
				it.Owner = ""
			}
			items = append(items, it)
		}
		s := goneSnap(items...)
		if len(data) > 0 {
			s.Config.ShardingTotalCount = int(data[0])%(len(items)+1) + 1
		}
		var peers peerSets
		for i, id := range ids {
			if goneMask&(1<<i) != 0 {
				peers.gone = append(peers.gone, id)
			}
			if leftMask&(1<<i) != 0 {
				peers.left = append(peers.left, id)
			}
		}
		got, states := ownersAway(s, peers)
		var want []int
		var wantStates []ownerState
		for i := range min(len(items), s.Config.ShardingTotalCount) {
			it := items[i]
			runnable := it.Exists && it.Owner != "" && !it.Disabled && it.FailoverTo == ""
			someoneRuns := false
			for _, id := range ids {
				v := *s
				v.Me = id
				if v.IsMyItem(i) && s.Online(id) {
					someoneRuns = true
				}
			}
			switch {
			case runnable && !someoneRuns && peers.PeerGone(it.Owner):
				want, wantStates = append(want, i), append(wantStates, ownerGone)
			case runnable && someoneRuns && it.Owner != s.Me && peers.PeerLeft(it.Owner):
				want, wantStates = append(want, i), append(wantStates, ownerLeaving)
			}
		}
		if !slices.Equal(got, want) || !slices.Equal(states, wantStates) {
			t.Fatalf("ownersAway = %v %v, want %v %v (items %+v, total %d, peers %+v)", got, states, want, wantStates, items, s.Config.ShardingTotalCount, peers)
		}
		if fireReady(s, peers) && len(got) > 0 {
			t.Fatal("fireReady with an owner away")
		}
		if needsResharding(s, peers) != (s.Necessary || !s.Sharded() || slices.Contains(states, ownerGone)) {
			t.Fatal("needsResharding disagrees: the leader reshards for gone owners only")
		}
	})
}

// The leader of a job whose item belongs to a peer that left reshards at the fire, and fires the items the
// resharding gave it, once.
func TestExecutorLeaderReshardsAtTheFireWhenAnOwnerIsGone(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	reg.snap.Items[1].Owner = "left"
	reg.gone = map[string]bool{"left": true}
	reshards := 0
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Resharder: resharderFunc(func(context.Context, string) error {
			reshards++
			reg.reshardedToMe()
			return nil
		})})
	defer e.Drain(time.Second)
	at := time.Unix(100, 0)
	e.Fire(Due{Job: "j", At: at})
	sentEachOnce(t, send, at, 2)
	if reshards != 1 {
		t.Fatalf("resharded %d times, want 1", reshards)
	}
}

// reshardedToMe commits a resharding that gives both items of the job to this peer.
func (f *fakeRegistry) reshardedToMe() {
	f.update(func(s *cluster.JobSnapshot) {
		s.Items = []cluster.ItemState{{Exists: true, Owner: "me", OwnerVersion: 2}, {Exists: true, Owner: "me", OwnerVersion: 2}}
	})
}

// sentEachOnce waits for n items of the fire scheduled at, each sent once, and nothing more.
func sentEachOnce(t *testing.T, send *fakeSender, at time.Time, n int) {
	t.Helper()
	seen := map[int]bool{}
	for range n {
		p := send.next(t)
		if seen[p.ShardingItem] || !p.ScheduledAt.Equal(at) {
			t.Fatalf("payload %+v (seen %v)", p, seen)
		}
		seen[p.ShardingItem] = true
	}
	send.none(t)
}

// skipSignal is an Observer that passes on the skips' reasons.
type skipSignal struct {
	nopObserver
	reasons chan string
}

func (s skipSignal) Skipped(_ string, reason string) { s.reasons <- reason }

// awaitSharding waits for a fire skipped for want of its sharding.
func (s skipSignal) awaitSharding(t *testing.T) {
	t.Helper()
	select {
	case reason := <-s.reasons:
		if reason != "no sharding to fire with" {
			t.Fatalf("skipped: %s", reason)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fire was neither run nor skipped")
	}
}

// goneOwner is a job of two items, on a peer that does not lead it, whose item 1's owner left: a fire waits for
// the leader's resharding.
func goneOwner() (*fakeRegistry, *fakeSender, skipSignal) {
	reg := newFakeRegistry(2)
	reg.snap.Leader, reg.snap.Items[1].Owner = "other", "left"
	reg.gone = map[string]bool{"left": true}
	return reg, newFakeSender(), skipSignal{reasons: make(chan string, 1)}
}

// A peer that is not the leader waits for the resharding rather than firing a sharding that leaves an item to
// nobody; with nobody resharding, the fire is skipped after the bound, with a warning (a fire lost to a
// fault), and none of its items is sent.
func TestExecutorWaitsForTheReshardingOfAGoneOwnersItems(t *testing.T) {
	reg, send, skips := goneOwner()
	var logs testutil.SyncBuffer
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ReshardWait: 300 * time.Millisecond, Observer: skips,
		Resharder: resharderFunc(func(context.Context, string) error {
			t.Error("a peer that is not the leader resharded")
			return nil
		})})
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	skips.awaitSharding(t)
	send.none(t)
	if !strings.Contains(logs.String(), `level=WARN msg="fire skipped: no sharding to fire with" job=j scheduled_at=`) {
		t.Fatalf("the skip was not logged as a warning: %q", logs.String())
	}
}

// A fire waiting for its resharding when the peer stops is skipped without a warning: the stop ended the wait,
// not a fault.
func TestAFireWaitingForItsReshardingAtTheStopIsNoWarning(t *testing.T) {
	reg, send, skips := goneOwner()
	var logs testutil.SyncBuffer
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ReshardWait: time.Hour, Observer: skips})
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	e.Drain(time.Second) // the fire waits, or is about to: the stop ends its wait either way
	skips.awaitSharding(t)
	send.none(t)
	if strings.Contains(logs.String(), "fire skipped") {
		t.Fatalf("a skip at the stop was logged as a warning: %q", logs.String())
	}
}

// A fire of a job that takes late fires waits for its resharding past ReshardWait, until its next fire's
// hand-off, and runs late, once, when the resharding comes; with misfire off it is skipped after ReshardWait,
// its next fire being further off.
func TestAFireWaitsPastReshardWaitOnlyWithMisfire(t *testing.T) {
	const wait = 200 * time.Millisecond
	for _, misfire := range []bool{true, false} {
		t.Run(fmt.Sprintf("misfire %v", misfire), func(t *testing.T) {
			reg, send, skips := goneOwner()
			reg.snap.Config.Misfire = misfire
			next := time.Now().Add(time.Minute)
			e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				ReshardWait: wait, FireLead: time.Second, NextFire: func(string) time.Time { return next }, Observer: skips})
			defer e.Drain(time.Second)
			at := time.Unix(100, 0)
			e.Fire(Due{Job: "j", At: at, Next: next})
			select {
			case reason := <-skips.reasons:
				if misfire {
					t.Fatalf("skipped (%s) with its next fire a minute away", reason)
				}
				if reason != "no sharding to fire with" {
					t.Fatalf("skipped: %s", reason)
				}
				send.none(t)
				return
			case <-time.After(10 * wait):
				if !misfire {
					t.Fatal("with misfire off the fire was not skipped after ReshardWait")
				}
			}
			reg.reshardedToMe() // the other peer, the leader, reshards: item 1 is this peer's now
			sentEachOnce(t, send, at, 2)
		})
	}
}

// A fire's owner scan keeps the owners it asked about without a map while they are few (a map per fire of
// every job before), and asks each owner once however many items it has, past the few too.
func TestEachOwnerAsksEachOwnerOnce(t *testing.T) {
	var items []cluster.ItemState
	for i := range 40 {
		items = append(items, owned(string(rune('a'+i%20))))
	}
	s := goneSnap(items...)
	peers := &countingPeers{gone: map[string]bool{"c": true, "p": true}}
	var states []ownerState
	eachOwner(s, peers, func(_ int, st ownerState) bool { states = append(states, st); return true })
	for i, st := range states {
		if want := items[i].Owner == "c" || items[i].Owner == "p"; (st == ownerGone) != want {
			t.Errorf("item %d (owner %s): state %v", i, items[i].Owner, st)
		}
	}
	for owner, n := range peers.asked {
		if n != 1 {
			t.Errorf("owner %s asked %d times", owner, n)
		}
	}
	if raceEnabled {
		return
	}
	one := goneSnap(owned("b"))
	if got := testing.AllocsPerRun(100, func() { anyOwner(one, peerSets{}, ownerGone, ownerLeaving) }); got != 0 {
		t.Errorf("a one-item job's owner scan allocates %.0f times, want 0", got)
	}
}

// countingPeers is a Peers that counts the questions about each instance.
type countingPeers struct {
	gone  map[string]bool
	asked map[string]int
}

func (p *countingPeers) PeerGone(id string) bool {
	if p.asked == nil {
		p.asked = map[string]int{}
	}
	p.asked[id]++
	return p.gone[id]
}

func (p *countingPeers) PeerLeft(string) bool { return false }
