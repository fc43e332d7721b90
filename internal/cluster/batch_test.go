package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestBatcherResendsAroundRefusedGroups: a batch of 64 groups of which 16 are refused by their own op (a
// node that exists) ends with every other group written and each refused group given its op's error, and no
// group is sent in more than 8 multis (resent one refusal at a time, the last groups went in 17).
func TestBatcherResendsAroundRefusedGroups(t *testing.T) {
	s := dialTest(t)
	defer s.Close()
	root := "/" + zktest.Namespace("batcher")
	if err := s.ensurePath(root); err != nil {
		t.Fatal(err)
	}
	const groups = 64
	refused := func(i int) bool { return i%4 == 1 }
	for i := range groups {
		if refused(i) {
			if err := s.create(fmt.Sprintf("%s/g%02d", root, i), nil, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	// the flushers are not started: the test takes the one batch and sends it itself
	b := &batcher{s: s, wake: make(chan struct{}, 1)}
	var gs []*group
	for i := range groups {
		// two ops a group, so a refused op is not its group's first
		gs = append(gs, b.enqueue([]any{opCheck(root, -1), s.opCreate(fmt.Sprintf("%s/g%02d", root, i), []byte("x"), 0)}, nil, false))
	}
	batch := b.take()
	if len(batch) != groups {
		t.Fatalf("took %d groups, want %d in one batch", len(batch), groups)
	}
	b.send(batch)
	most := 0
	for i, g := range gs {
		select {
		case <-g.done:
		default:
			t.Fatalf("group %d has no outcome", i)
		}
		most = max(most, g.sent)
		var opErr *OpError
		switch {
		case refused(i) && (!errors.As(g.err, &opErr) || opErr.Op != 1 || !errors.Is(g.err, zk.ErrNodeExists)):
			t.Errorf("refused group %d: err %v, want op 1's NodeExists", i, g.err)
		case !refused(i) && g.err != nil:
			t.Errorf("group %d: %v", i, g.err)
		case !refused(i):
			if data, _, err := s.get(fmt.Sprintf("%s/g%02d", root, i)); err != nil || string(data) != "x" {
				t.Errorf("group %d's node: %q %v", i, data, err)
			}
		}
	}
	st := b.stats()
	t.Logf("%d multis, a group sent in %d at most, %d refused", st.Multis, most, st.Refused)
	if most > 8 || st.Refused != groups/4 || st.Groups != groups {
		t.Errorf("a group sent in %d multis at most (want <= 8), %d refused (want %d), %d groups", most, st.Refused,
			groups/4, st.Groups)
	}
}

func TestResendParts(t *testing.T) {
	gs := make([]*group, 6)
	for i := range gs {
		gs[i] = &group{}
	}
	for _, tt := range []struct {
		n, gi int
		want  [][2]int // each part as [from, to) in gs
	}{
		{1, 0, nil},
		{2, 0, [][2]int{{1, 2}}},
		{2, 1, [][2]int{{0, 1}}},
		{6, 0, [][2]int{{1, 3}, {3, 6}}},
		{6, 2, [][2]int{{0, 2}, {3, 4}, {4, 6}}},
		{6, 5, [][2]int{{0, 5}}},
		{6, 4, [][2]int{{0, 4}, {5, 6}}},
	} {
		got := resendParts(gs[:tt.n], tt.gi)
		if len(got) != len(tt.want) {
			t.Errorf("%d groups, %d refused: %d parts, want %d", tt.n, tt.gi, len(got), len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if len(got[i]) != w[1]-w[0] || &got[i][0] != &gs[w[0]] {
				t.Errorf("%d groups, %d refused: part %d is not gs[%d:%d]", tt.n, tt.gi, i, w[0], w[1])
			}
		}
	}
}

// writtenNear: the writes of earlier groups that can make an op on a path fail in the same multi.
func TestWrittenNear(t *testing.T) {
	s := &Session{}
	grp := func(ops ...any) *group { return &group{ops: ops} }
	for _, tt := range []struct {
		name   string
		groups []*group
		pth    string
		want   bool
	}{
		{"the same node created", []*group{grp(s.opCreate("/j/servers/ip", nil, 0))}, "/j/servers/ip", true},
		{"its parent deleted", []*group{grp(opDelete("/j/servers", -1))}, "/j/servers/ip", true},
		{"a child created (NotEmpty)", []*group{grp(s.opCreate("/j/servers/ip/x", nil, 0))}, "/j/servers/ip", true},
		{"its data set (BadVersion)", []*group{grp(opCheck("/a", -1), &zk.SetDataRequest{Path: "/j/servers/ip"})}, "/j/servers/ip", true},
		{"only a check of it", []*group{grp(opCheck("/j/servers/ip", -1))}, "/j/servers/ip", false},
		{"a sibling", []*group{grp(s.opCreate("/j/servers/ip2", nil, 0))}, "/j/servers/ip", false},
		{"a name that starts alike", []*group{grp(s.opCreate("/j/servers/i", nil, 0))}, "/j/servers/ip", false},
		{"none", nil, "/j", false},
	} {
		if got := writtenNear(tt.groups, tt.pth); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Two registrations of one job in one multi (registerSoon's and the register refresh's): the first's create
// of servers/{ip} makes the second's fail, and ZooKeeper rolls both back. The second is refused only once the
// first is written (it is judged again leading a multi of its own): refused before, its owner registered
// without servers/{ip} while the first's resend came behind and was refused by the instance node, and the job
// was left with no servers/{ip} (TestEventsOfAJobWaitingForItsLoadQueueNoReads, 2 of 30 runs under load).
func TestAGroupRefusedByAnEarlierGroupOfItsMultiIsJudgedAfterIt(t *testing.T) {
	s := dialTest(t)
	defer s.Close()
	root := "/" + zktest.Namespace("batcher-order")
	if err := s.ensurePath(root + "/job/instances"); err != nil {
		t.Fatal(err)
	}
	server, instance := root+"/job/servers", root+"/job/instances/me"
	if err := s.ensurePath(server); err != nil {
		t.Fatal(err)
	}
	server += "/10.0.0.1"
	register := func() []any {
		return []any{opCheck(root+"/job", -1), s.opCreate(server, []byte("ENABLED"), 0), s.opCreate(instance, nil, zk.FlagEphemeral)}
	}
	b := &batcher{s: s, wake: make(chan struct{}, 1)} // no flushers: the test takes the batch and sends it
	var serverThereAtRefusal, firstDoneAtRefusal bool
	first := b.enqueue(register(), nil, false)
	second := b.enqueue(register(), func(_ []zk.MultiResponse, err error) {
		ok, _, _ := s.exists(server)
		serverThereAtRefusal = ok
		select {
		case <-first.done:
			firstDoneAtRefusal = true
		default:
		}
	}, false)
	b.send(b.take())
	<-first.done
	<-second.done
	if first.err != nil {
		t.Fatalf("the first registration: %v", first.err)
	}
	var opErr *OpError
	if !errors.As(second.err, &opErr) || opErr.Op != 1 || !errors.Is(second.err, zk.ErrNodeExists) {
		t.Fatalf("the second registration: %v, want op 1's NodeExists (the first wrote servers/{ip})", second.err)
	}
	if !serverThereAtRefusal || !firstDoneAtRefusal {
		t.Fatalf("the second was refused before the first was written (servers/{ip} there: %v, first done: %v)",
			serverThereAtRefusal, firstDoneAtRefusal)
	}
	if ok, _, err := s.exists(instance); err != nil || !ok {
		t.Fatalf("the instance node: %v %v", ok, err)
	}
}

// dialTest dials the test ZooKeeper; the caller closes the session.
func dialTest(t *testing.T) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Dial(ctx, SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 8 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Groups submitted first (a leader's commits) leave in the next multi, ahead of every group queued before them,
// and fill it before the queued ones; the queued ones follow in their order.
func TestFirstGroupsLeaveInTheNextMulti(t *testing.T) {
	b := &batcher{wake: make(chan struct{}, 1)} // no flushers: the test takes the batches
	op := func(i int) []any { return []any{opCheck(fmt.Sprintf("/q/%d", i), -1)} }
	for i := range maxBatchOps + 200 {
		b.enqueue(op(i), nil, false)
	}
	for i := range 3 {
		b.enqueue(op(-1-i), nil, true)
	}
	paths := func(batch []*group) []string {
		var out []string
		for _, g := range batch {
			out = append(out, opPath(g.ops[0]))
		}
		return out
	}
	first := paths(b.take())
	if len(first) != maxBatchOps || first[0] != "/q/-1" || first[2] != "/q/-3" || first[3] != "/q/0" || first[maxBatchOps-1] != fmt.Sprintf("/q/%d", maxBatchOps-4) {
		t.Fatalf("first multi: %d groups %v...%v, want the 3 first groups then the queued from /q/0", len(first), first[:4], first[len(first)-1])
	}
	rest := paths(b.take())
	if len(rest) != 203 || rest[0] != fmt.Sprintf("/q/%d", maxBatchOps-3) {
		t.Fatalf("second multi: %d groups from %v, want the 203 queued left", len(rest), rest[0])
	}
	if b.take() != nil || b.stats().Waiting != 0 {
		t.Fatal("groups left")
	}
}
