package dispatch

import (
	"container/heap"
	"slices"
	"strings"
)

// fireQueue orders the scheduled jobs by their hand-off time (entry.at). Cron fires land on whole seconds, so
// thousands of jobs share each hand-off instant: the queue keeps the jobs of one instant in a bucket and the
// instants in a min-heap, so that scheduling or firing a job is a map access and an append, and the heap's
// work is per instant rather than per job. (A heap of the jobs themselves sifted each fire through ~17 levels
// at 100,000 jobs, most of the scheduler's time: BenchmarkSchedulerFires.)
type fireQueue struct {
	buckets  map[int64]*fireBucket // by hand-off time, Unix ns
	instants instantHeap           // the buckets' times, each once; an emptied bucket's stays until it is first
}

// fireBucket is the jobs handed off at one instant, in no order; entry.slot is a job's place in it.
type fireBucket struct {
	entries []*entry
	queued  bool // its instant is in the heap
}

// push queues e at e.at.
func (q *fireQueue) push(e *entry) {
	if q.buckets == nil {
		q.buckets = map[int64]*fireBucket{}
	}
	k := e.at.UnixNano()
	b := q.buckets[k]
	if b == nil {
		b = &fireBucket{}
		q.buckets[k] = b
	}
	if !b.queued {
		heap.Push(&q.instants, k)
		b.queued = true
	}
	e.slot = len(b.entries)
	b.entries = append(b.entries, e)
}

// remove takes e out of the queue (it must be queued, at the e.at it was pushed with).
func (q *fireQueue) remove(e *entry) {
	b := q.buckets[e.at.UnixNano()]
	last := len(b.entries) - 1
	b.entries[e.slot] = b.entries[last]
	b.entries[e.slot].slot = e.slot
	b.entries[last] = nil
	b.entries = b.entries[:last]
}

// first returns the earliest instant that has jobs, dropping the emptied instants before it.
func (q *fireQueue) first() (int64, bool) {
	for len(q.instants) > 0 {
		k := q.instants[0]
		if len(q.buckets[k].entries) > 0 {
			return k, true
		}
		heap.Pop(&q.instants)
		delete(q.buckets, k)
	}
	return 0, false
}

// take removes the earliest instant's jobs from the queue and returns them in the order of their names.
func (q *fireQueue) take() []*entry {
	k, ok := q.first()
	if !ok {
		return nil
	}
	heap.Pop(&q.instants)
	out := q.buckets[k].entries
	delete(q.buckets, k)
	slices.SortFunc(out, func(a, b *entry) int { return strings.Compare(a.job, b.job) })
	return out
}

// instantHeap is a min-heap of Unix ns times.
type instantHeap []int64

func (h instantHeap) Len() int           { return len(h) }
func (h instantHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h instantHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *instantHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *instantHeap) Pop() any {
	old := *h
	k := old[len(old)-1]
	*h = old[:len(old)-1]
	return k
}
