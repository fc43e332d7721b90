package zk

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// MultiRead answers data and children reads in order, each on its own: an absent node is its read's
// ErrNoNode and the others still answer.
func TestMultiRead(t *testing.T) {
	c := connect(t, make(events, 16))
	root := "/" + namespace("multiread")
	mustCreate(t, c, root)
	if _, err := c.Create(root+"/a", []byte("hello"), 0, WorldACL(PermAll)); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, root+"/b")
	if _, err := c.Set(root+"/b", []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	res, err := c.MultiRead(
		ReadOp{Path: root + "/a"},
		ReadOp{Path: root, Children: true},
		ReadOp{Path: root + "/missing"},
		ReadOp{Path: root + "/missing", Children: true},
		ReadOp{Path: root + "/b"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 {
		t.Fatalf("%d results, want 5", len(res))
	}
	_, st, err := c.Get(root + "/a")
	if err != nil {
		t.Fatal(err)
	}
	if string(res[0].Data) != "hello" || res[0].Err != nil || !reflect.DeepEqual(*res[0].Stat, *st) {
		t.Errorf("a: %q %v %+v, want hello and %+v", res[0].Data, res[0].Err, res[0].Stat, st)
	}
	if kids := res[1].Children; res[1].Err != nil || len(kids) != 2 || !strings.Contains(strings.Join(kids, ","), "a") || !strings.Contains(strings.Join(kids, ","), "b") {
		t.Errorf("children: %v %v", kids, res[1].Err)
	}
	for _, i := range []int{2, 3} {
		if !errors.Is(res[i].Err, ErrNoNode) {
			t.Errorf("read %d of an absent node: %v, want ErrNoNode", i, res[i].Err)
		}
	}
	if string(res[4].Data) != "v1" || res[4].Stat == nil || res[4].Stat.Version != 1 {
		t.Errorf("b: %q %+v", res[4].Data, res[4].Stat)
	}
	// no read at all, and a bad path
	if res, err := c.MultiRead(); err != nil || len(res) != 0 {
		t.Errorf("empty MultiRead: %v %v", res, err)
	}
	if _, err := c.MultiRead(ReadOp{Path: "no-slash"}); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("bad path: %v, want ErrInvalidPath", err)
	}
}
