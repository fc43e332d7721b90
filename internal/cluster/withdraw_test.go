package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestWithdrawBatches(t *testing.T) {
	p := NewPaths("ns")
	held := []heldNodes{
		{job: "a", leads: true, leaderVersion: 3, registered: true},
		{job: "b", registered: true},
		{job: "c"}, // neither: nothing to delete
		{job: "d", leads: true, registered: true},
		{job: "e", leads: true}, // an instance node an operator removed, the leadership kept
	}
	describe := func(batches [][]any) [][]string {
		var out [][]string
		for _, b := range batches {
			var ops []string
			for _, op := range b {
				d := op.(*zk.DeleteRequest)
				ops = append(ops, fmt.Sprintf("%s@%d", d.Path, d.Version))
			}
			out = append(out, ops)
		}
		return out
	}
	la, ia := p.LeaderInstance("a")+"@3", p.Instance("a", "me")+"@-1"
	ib := p.Instance("b", "me") + "@-1"
	ld, id := p.LeaderInstance("d")+"@0", p.Instance("d", "me")+"@-1"
	le := p.LeaderInstance("e") + "@0"
	for _, tc := range []struct {
		name     string
		held     []heldNodes
		maxOps   int
		maxBytes int
		want     [][]string
	}{
		{"none held", []heldNodes{{job: "c"}}, 10, 1 << 20, nil},
		{"one multi", held, 10, 1 << 20, [][]string{{la, ia, ib, ld, id, le}}},
		{"a job's pair is never split", held, 2, 1 << 20, [][]string{{la, ia}, {ib}, {ld, id}, {le}}},
		{"by ops", held, 4, 1 << 20, [][]string{{la, ia, ib}, {ld, id, le}}},
		{"by bytes", held, 100, 2 * opSize(opDelete(p.LeaderInstance("a"), 0)), [][]string{{la, ia}, {ib}, {ld, id}, {le}}},
		{"a job over the limit still goes", held[:1], 1, 1, [][]string{{la, ia}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(withdrawBatches(p, "me", tc.held, tc.maxOps, tc.maxBytes))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestWithdrawOrder(t *testing.T) {
	held := []heldNodes{
		{job: "a", registered: true},
		{job: "b", leads: true, registered: true},
		{job: "c", owns: true, registered: true},
		{job: "d", owns: true, leads: true, registered: true},
		{job: "e", owns: true, registered: true},
		{job: "f", leads: true},
	}
	slices.SortFunc(held, withdrawOrder)
	var got []string
	for _, h := range held {
		got = append(got, h.job)
	}
	// owned and led, owned, led, the rest; by name within each
	if want := "d c e b f a"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
}

// A stopping peer deletes its leader and instance nodes itself while its session stays open: the other peer
// leads every job before the session closes, a node already gone does not stop the rest, and the stopping
// peer's watch is gone first (no event of the deletions comes to it).
func TestWithdrawHandsJobsOverBeforeTheSessionCloses(t *testing.T) {
	ns := zktest.Namespace("withdraw")
	const aID, bID = "10.0.9.1@-@1", "10.0.9.2@-@2"
	a := startPeer(t, ns, aID, "10.0.9.1")
	jobs := []string{"j0", "j1", "j2", "j3"}
	for _, j := range jobs {
		createLed(t, a, j, 2)
	}
	b := startPeer(t, ns, bID, "10.0.9.2")
	for _, j := range jobs {
		waitJob(t, b, j, "b registered, a leading", func(s *JobSnapshot) bool {
			return s.Registered && s.Leader == aID && len(s.Instances) == 2
		})
	}
	a.r.Stop()
	// an operator removed a's instance of j2 after a's registry stopped watching: its deletion is refused
	if err := b.s.del(b.r.p.Instance("j2", aID), -1); err != nil {
		t.Fatal(err)
	}

	done, cancel := context.WithCancel(context.Background())
	cancel()
	w, err := a.r.Withdraw(done)
	if !errors.Is(err, context.Canceled) || w.Deleted != 0 || w.Left != 8 || w.Jobs != 4 {
		t.Fatalf("with ctx ended: %+v, %v; want nothing deleted, 8 left", w, err)
	}

	// a round trip of a's session: the event of j2's deletion, sent to it before b's answer, has come
	if _, _, err := a.s.exists(a.r.p.Root()); err != nil {
		t.Fatal(err)
	}
	events := a.s.reads.events.Load()
	w, err = a.r.Withdraw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Withdrawal{Jobs: 4, Deleted: 7, Multis: 2, Refused: 1}); w != want {
		t.Fatalf("withdrawal %+v, want %+v", w, want)
	}
	for _, j := range jobs {
		waitJob(t, b, j, "b leads alone", func(s *JobSnapshot) bool {
			_, aThere := s.Instances[aID]
			return s.IsLeader() && !aThere
		})
	}
	// a removed its watch first: none of the deletions' and elections' events came to it
	if got := a.s.reads.events.Load(); got != events {
		t.Errorf("a's session got %d watch events during and after its withdrawal; want none", got-events)
	}
	// a's session is still open: its peer node (ephemeral, not a job's) is there until it closes
	if ok, _, err := b.s.exists(b.r.p.Peer(aID)); err != nil || !ok {
		t.Fatalf("a's peer node: %v, %v; want it there while a's session is open", ok, err)
	}
}
