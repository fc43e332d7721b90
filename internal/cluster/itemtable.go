package cluster

import (
	"iter"
	"slices"
)

// itemTable holds a job's sharding/{i} states by item number, sorted: every peer keeps one per job, and a
// map per job (its header and first group, ~0.2 KB for one item) cost more than the items themselves; a
// sorted slice costs 16 bytes an item. Its zero value is empty.
type itemTable []itemSlot

type itemSlot struct {
	num int
	it  *ItemState
	// completed: the item's completed node is known to exist (this process wrote or read it, or the recursive
	// watch reported it), so its next end sets the node instead of creating it (Registry.completedAbsent).
	// Kept here, not in a map of its own: a sync.Map of every job's items cost a peer of 100,000 jobs ~13 MB
	// and ~175,000 live objects (docs/benchmarks.md, "Issue 21's targets on `d266a66`").
	completed bool
}

func (t itemTable) find(i int) (int, bool) {
	return slices.BinarySearchFunc(t, i, func(s itemSlot, i int) int { return s.num - i })
}

// get returns item i's state, or nil.
func (t itemTable) get(i int) *ItemState {
	if k, ok := t.find(i); ok {
		return t[k].it
	}
	return nil
}

// set puts item i's state, replacing the one held.
func (t *itemTable) set(i int, it *ItemState) {
	k, ok := t.find(i)
	if ok {
		(*t)[k].it = it
		return
	}
	*t = slices.Insert(*t, k, itemSlot{num: i, it: it})
}

// completed reports item i's completed flag (false for an item not held).
func (t itemTable) completed(i int) bool {
	k, ok := t.find(i)
	return ok && t[k].completed
}

// setCompleted sets item i's completed flag; an item not held is left alone.
func (t itemTable) setCompleted(i int, known bool) {
	if k, ok := t.find(i); ok {
		t[k].completed = known
	}
}

// retain drops the items for which keep is false and reports whether it dropped any.
func (t *itemTable) retain(keep func(i int) bool) bool {
	n := len(*t)
	*t = slices.DeleteFunc(*t, func(s itemSlot) bool { return !keep(s.num) })
	return len(*t) != n
}

// all yields the items in ascending order.
func (t itemTable) all() iter.Seq2[int, *ItemState] {
	return func(yield func(int, *ItemState) bool) {
		for _, s := range t {
			if !yield(s.num, s.it) {
				return
			}
		}
	}
}

// end is the highest item number plus one (0 when empty).
func (t itemTable) end() int {
	if len(t) == 0 {
		return 0
	}
	return t[len(t)-1].num + 1
}
