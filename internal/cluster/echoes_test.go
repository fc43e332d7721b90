package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// The echo windows: of a write's events, only the first in its window (after it was sent, up to its answer) is
// skipped, and only for a write that was applied; any other event of the node is read, and a skipped event of
// a write that failed is read once the failure is known.
func TestEchoWindows(t *testing.T) {
	type step struct {
		op   string // "begin", "end", "fail", "event"
		path string
		seq  uint64 // begin: events queued when sent; end/fail: when answered; event: its sequence number
		want bool   // event: skipped
	}
	for _, tt := range []struct {
		name  string
		steps []step
		read  []string // paths a failed write returns to read
	}{
		{"the echo before the answer is handled", []step{
			{op: "begin", path: "p", seq: 10}, {op: "event", path: "p", seq: 11, want: true},
			{op: "end", path: "p", seq: 12}, {op: "event", path: "p", seq: 13, want: false}}, nil},
		{"the echo after the answer is handled", []step{
			{op: "begin", path: "p", seq: 10}, {op: "end", path: "p", seq: 15},
			{op: "event", path: "p", seq: 14, want: true}, {op: "event", path: "p", seq: 16, want: false}}, nil},
		{"another writer's change in the window: the second event is read", []step{
			{op: "begin", path: "p", seq: 10}, {op: "end", path: "p", seq: 15},
			{op: "event", path: "p", seq: 11, want: true}, {op: "event", path: "p", seq: 13, want: false}}, nil},
		{"an event before the write was sent is read", []step{
			{op: "begin", path: "p", seq: 10}, {op: "event", path: "p", seq: 10, want: false},
			{op: "end", path: "p", seq: 12}, {op: "event", path: "p", seq: 11, want: true}}, nil},
		{"a failed write's skipped event is read", []step{
			{op: "begin", path: "p", seq: 10}, {op: "event", path: "p", seq: 11, want: true},
			{op: "fail", path: "p", seq: 12}, {op: "event", path: "p", seq: 12, want: false}}, []string{"p"}},
		{"a failed write with no event reads nothing", []step{
			{op: "begin", path: "p", seq: 10}, {op: "fail", path: "p", seq: 12},
			{op: "event", path: "p", seq: 11, want: false}}, nil},
		{"two writes on their way: no event skipped", []step{
			{op: "begin", path: "p", seq: 10}, {op: "begin", path: "p", seq: 11},
			{op: "event", path: "p", seq: 12, want: false}, {op: "end", path: "p", seq: 13},
			{op: "event", path: "p", seq: 13, want: false}}, nil},
		{"another node's event is read", []step{
			{op: "begin", path: "p", seq: 10}, {op: "event", path: "q", seq: 11, want: false},
			{op: "end", path: "p", seq: 12}, {op: "event", path: "p", seq: 12, want: true}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var x echoes
			var mine []*echoWindow
			var read []string
			for i, s := range tt.steps {
				switch s.op {
				case "begin":
					if m := x.begin([]string{s.path}, s.seq); mine == nil {
						mine = m
					}
				case "end", "fail":
					read = append(read, x.end([]string{s.path}, mine, s.seq, s.op == "end")...)
				case "event":
					if got := x.handle(s.path, s.seq); got != s.want {
						t.Fatalf("step %d: event %d of %s skipped %v, want %v", i, s.seq, s.path, got, s.want)
					}
				}
			}
			if !slices.Equal(read, tt.read) {
				t.Fatalf("read %v, want %v", read, tt.read)
			}
		})
	}
}

// Answered windows go once the session has handled every event up to their end, whether or not the node had
// another event: a leader's thousands of commits leave nothing behind.
func TestEchoWindowsAreDropped(t *testing.T) {
	var x echoes
	for i := range 1000 {
		p := "p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		m := x.begin([]string{p}, uint64(2*i))
		x.end([]string{p}, m, uint64(2*i+1), true)
	}
	x.handle("other", 5000)
	if len(x.windows) != 0 || x.answered != nil {
		t.Fatalf("%d windows and %d answered left", len(x.windows), len(x.answered))
	}
}

// A leader's commit of a resharding is applied to its cache at once, and the event of each item node it wrote
// is not read back: the leader's job stays settled (its fire does not wait for the read) while the other peer
// reads the new owner; a later write by another session of the same node is read.
func TestALeadersCommitIsNotReadBack(t *testing.T) {
	ns := zktest.Namespace("echo")
	a := startPeer(t, ns, "10.0.13.1@-@1", "10.0.13.1")
	if _, err := a.r.CreateJob(testJob("j", 2)); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "a leads", func(s *JobSnapshot) bool { return s.IsLeader() && s.Settled })
	if err := a.r.CommitSharding("j", []string{"10.0.13.1@-@1", "10.0.13.1@-@1"}, nil); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "sharded", func(s *JobSnapshot) bool { return s.Sharded() && s.Settled && !s.Necessary })
	b := startPeer(t, ns, "10.0.13.2@-@2", "10.0.13.2")
	for _, p := range []*peer{a, b} {
		waitJob(t, p, "j", "both registered", func(s *JobSnapshot) bool { return len(s.Instances) == 2 && s.Settled })
	}
	quiet := func(p *peer) {
		testutil.Eventually(t, "events and reads handled", 10*time.Second, func() bool {
			q := &p.s.queue
			q.mu.Lock()
			handled := q.popped == q.pushed
			q.mu.Unlock()
			return handled && p.s.eventSeq.Load() == q.pushedCount() && p.r.w.idle()
		})
	}
	quiet(a)
	before := a.s.reads.totals()
	if err := a.r.CommitSharding("j", []string{"10.0.13.2@-@2", "10.0.13.1@-@1"}, nil); err != nil {
		t.Fatal(err)
	}
	waitJob(t, b, "j", "b reads its item", func(s *JobSnapshot) bool { return s.Item(0).Owner == "10.0.13.2@-@2" && s.ItemsSettled })
	quiet(a)
	if got := a.s.reads.totals().minus(before); got.get+got.multi != 0 {
		t.Errorf("the leader read back its own commit: %+v", got)
	}
	if s := a.r.Job("j"); s.Item(0).Owner != "10.0.13.2@-@2" || !s.ItemsSettled {
		t.Fatalf("the leader's cache after its commit: item 0 of %s, settled %v", s.Item(0).Owner, s.ItemsSettled)
	}
	// another writer's change of the same node is read
	if _, err := b.s.set(a.r.p.ItemNode("j", 0, NodeInstance), []byte("10.0.13.1@-@1"), -1); err != nil {
		t.Fatal(err)
	}
	waitJob(t, a, "j", "the other writer's owner", func(s *JobSnapshot) bool { return s.Item(0).Owner == "10.0.13.1@-@1" && s.ItemsSettled })
}
