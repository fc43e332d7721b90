package cluster

import (
	"maps"
	"testing"
)

func TestItemTable(t *testing.T) {
	var tb itemTable
	if tb.get(0) != nil || tb.end() != 0 {
		t.Fatal("an empty table holds an item")
	}
	a, b, c := &ItemState{Owner: "a"}, &ItemState{Owner: "b"}, &ItemState{Owner: "c"}
	tb.set(2, c)
	tb.set(0, a)
	tb.set(1, b)
	if tb.get(0) != a || tb.get(1) != b || tb.get(2) != c || tb.get(3) != nil || tb.end() != 3 {
		t.Fatalf("after set: %v", tb)
	}
	tb.set(1, c)
	if tb.get(1) != c || len(tb) != 3 {
		t.Fatalf("a set of a held item added one: %v", tb)
	}
	if tb.retain(func(int) bool { return true }) {
		t.Fatal("retain of every item reported a drop")
	}
	if !tb.retain(func(i int) bool { return i != 2 }) || tb.get(2) != nil || tb.end() != 2 {
		t.Fatalf("after retain: %v", tb)
	}
	var order []int
	for i := range tb.all() {
		order = append(order, i)
	}
	if len(order) != 2 || order[0] != 0 || order[1] != 1 {
		t.Fatalf("all yields %v", order)
	}
}

// TestItemTableCompleted: an item's completed flag is its slot's: it outlives a new state of the item, goes
// with the item, and an item not held takes none.
func TestItemTableCompleted(t *testing.T) {
	var tb itemTable
	tb.setCompleted(0, true)
	if tb.completed(0) || len(tb) != 0 {
		t.Fatalf("a flag set on an empty table: %v", tb)
	}
	tb.set(1, &ItemState{Owner: "b"})
	tb.setCompleted(1, true)
	tb.setCompleted(5, true)
	if !tb.completed(1) || tb.completed(5) || len(tb) != 1 {
		t.Fatalf("after setCompleted(1) and (5): %v", tb)
	}
	tb.set(0, &ItemState{Owner: "a"}) // inserted before item 1: its slot moves along the slice, flag and all
	tb.set(1, &ItemState{Owner: "c"}) // a new state of item 1
	if tb.completed(0) || !tb.completed(1) || tb.get(1).Owner != "c" {
		t.Fatalf("item 1's flag after an insert before it and a new state of it: %v", tb)
	}
	tb.setCompleted(1, false)
	if tb.completed(1) {
		t.Fatalf("setCompleted(1, false): %v", tb)
	}
	tb.setCompleted(0, true)
	tb.retain(func(i int) bool { return i != 0 })
	tb.set(0, &ItemState{Owner: "e"})
	if tb.completed(0) {
		t.Fatalf("an item dropped and held again kept its flag: %v", tb)
	}
}

// FuzzItemTable: the table answers as the map it replaced did, for any sequence of sets and drops.
func FuzzItemTable(f *testing.F) {
	f.Add([]byte{3, 1, 0x82, 2, 0xff})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var tb itemTable
		m := map[int]*ItemState{}
		for k, op := range ops {
			i := int(op & 0x3f)
			switch {
			case op&0xc0 == 0xc0: // drop items above i
				dropped := false
				for n := range m {
					if n > i {
						delete(m, n)
						dropped = true
					}
				}
				if got := tb.retain(func(n int) bool { return n <= i }); got != dropped {
					t.Fatalf("op %d: retain reported %v, want %v", k, got, dropped)
				}
			default:
				it := &ItemState{OwnerVersion: int32(k)}
				m[i] = it
				tb.set(i, it)
			}
		}
		got := maps.Collect(tb.all())
		if !maps.Equal(got, m) {
			t.Fatalf("table %v, map %v", got, m)
		}
		end := 0
		for n := range m {
			end = max(end, n+1)
			if tb.get(n) != m[n] {
				t.Fatalf("get(%d)", n)
			}
		}
		if tb.end() != end {
			t.Fatalf("end %d, want %d", tb.end(), end)
		}
		for k := 1; k < len(tb); k++ {
			if tb[k-1].num >= tb[k].num {
				t.Fatalf("not sorted: %v", tb)
			}
		}
	})
}
