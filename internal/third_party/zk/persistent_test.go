package zk

import (
	"io"
	"log"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

// events collects the watch events a connection's callback sees, without blocking it.
type events chan Event

func (ev events) callback(e Event) {
	if e.Type == EventSession {
		return
	}
	select {
	case ev <- e:
	default:
	}
}

// next returns the next event, failing the test after a deadline.
func (ev events) next(t *testing.T) Event {
	t.Helper()
	select {
	case e := <-ev:
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20 s")
		return Event{}
	}
}

func (ev events) expect(t *testing.T, typ EventType, path string) {
	t.Helper()
	if e := ev.next(t); e.Type != typ || e.Path != path {
		t.Fatalf("event %v %q, want %v %q", e.Type, e.Path, typ, path)
	}
}

func connect(t *testing.T, ev events, opts ...connOption) *Conn {
	t.Helper()
	opts = append(opts, WithEventCallback(ev.callback), WithLogger(log.New(io.Discard, "", 0)))
	c, _, err := Connect([]string{testServer(t)}, 10*time.Second, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitSession(t, c)
	return c
}

func waitSession(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for c.State() != StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no session: %v", c.State())
		}
		time.Sleep(10 * time.Millisecond) // polling the state with a deadline
	}
}

func mustCreate(t *testing.T, c *Conn, path string) {
	t.Helper()
	if _, err := c.Create(path, nil, 0, WorldACL(PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// A recursive watch reports every change below its node, keeps firing, survives a reconnection (setWatches2)
// and goes with RemoveAllWatches.
func TestPersistentRecursiveWatch(t *testing.T) {
	ev := make(events, 64)
	c := connect(t, ev, func(c *Conn) { c.setWatchLimit = 64 }) // several setWatches2 packets
	root := "/" + namespace("fork")
	mustCreate(t, c, root)
	if err := c.AddWatch(root, AddWatchModePersistentRecursive); err != nil {
		t.Fatal(err)
	}
	if got := c.PersistentWatches(); got != 1 {
		t.Fatalf("persistent watches %d", got)
	}
	mustCreate(t, c, root+"/a")
	ev.expect(t, EventNodeCreated, root+"/a")
	if _, err := c.Set(root+"/a", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	ev.expect(t, EventNodeDataChanged, root+"/a")
	mustCreate(t, c, root+"/a/b")
	ev.expect(t, EventNodeCreated, root+"/a/b")
	if err := c.Delete(root+"/a/b", -1); err != nil {
		t.Fatal(err)
	}
	ev.expect(t, EventNodeDeleted, root+"/a/b")

	// some one-shot watches beside it, so that the re-sent watches take several packets
	for _, p := range []string{"/zookeeper", "/zookeeper/config", "/zookeeper/quota"} {
		if _, _, _, err := c.GetW(p); err != nil {
			t.Fatal(err)
		}
	}
	// a reconnection within the session: the watch is re-sent and fires again
	id := c.SessionID()
	c.conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for c.State() == StateHasSession && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling the state with a deadline
	}
	waitSession(t, c)
	if c.SessionID() != id {
		t.Fatal("the session changed")
	}
	// the re-sent watches may still be in flight: their acknowledgement orders them before the next change
	ev.expect(t, EventPersistentWatchesRestored, "")
	mustCreate(t, c, root+"/c")
	ev.expect(t, EventNodeCreated, root+"/c")

	if err := c.RemoveAllWatches(root); err != nil {
		t.Fatal(err)
	}
	if got := c.PersistentWatches(); got != 0 {
		t.Fatalf("persistent watches after removal %d", got)
	}
	if err := c.RemoveAllWatches(root); err != ErrNoWatcher {
		t.Fatalf("second removal: %v", err)
	}
	// nothing more from root: changes there, then a change under a second watch, whose event comes first
	mustCreate(t, c, root+"/d")
	other := root + "-other"
	mustCreate(t, c, other)
	if err := c.AddWatch(other, AddWatchModePersistentRecursive); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, other+"/e")
	ev.expect(t, EventNodeCreated, other+"/e")
}

// A persistent (non-recursive) watch reports its node's data and children, more than once.
func TestPersistentWatch(t *testing.T) {
	ev := make(events, 64)
	c := connect(t, ev)
	root := "/" + namespace("forkp")
	mustCreate(t, c, root)
	if err := c.AddWatch(root, AddWatchModePersistent); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		mustCreate(t, c, root+"/"+k)
		ev.expect(t, EventNodeChildrenChanged, root)
	}
	if _, err := c.Set(root, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	ev.expect(t, EventNodeDataChanged, root)
}

// The session's end takes the persistent watches with it.
func TestPersistentWatchesGoWithTheSession(t *testing.T) {
	ev := make(events, 64)
	c := connect(t, ev)
	if err := c.AddWatch("/"+namespace("forkg"), AddWatchModePersistentRecursive); err != nil {
		t.Fatal(err)
	}
	c.invalidateWatches(ErrSessionExpired)
	if got := c.PersistentWatches(); got != 0 {
		t.Fatalf("persistent watches %d", got)
	}
}
