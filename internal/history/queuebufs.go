package history

// queueBufs keeps the arrays of the Writer's queues for the next batches (issue 21: a peer's allocations per
// item). Each take split the queue into the records to write and those held back (StartHold) by appending to
// new slices, and Enqueue then grew the next queue from empty again: ~10 KB allocated per item of
// steady-10k (BenchmarkWriterQueue), a third of what a peer allocated per item. An array goes back here once
// its records are written (or copied on) and cleared, so that nothing it held stays reachable; a few are
// kept, and none larger than bufKeepMax records (a backlog's arrays go when it is written).
type queueBufs struct {
	execs  bufPool[queued]
	traces bufPool[queuedTraces]
	// last and ended are the hold's indexes, emptied by each take
	last  map[string]int
	ended map[[2]string]bool
}

const (
	// bufKeep is how many emptied arrays of each kind are kept: the queue, the batch taken and the records
	// held back.
	bufKeep = 3
	// bufKeepMax is the largest array kept, in records.
	bufKeepMax = 4096
)

// reusable is a queue whose arrays can serve again: size is their capacity, emptied clears them (nothing
// they held stays reachable) and returns them at length 0.
type reusable[Q any] interface {
	size() int
	emptied() Q
}

// bufPool keeps up to bufKeep emptied queues of one kind.
type bufPool[Q reusable[Q]] struct {
	free []Q
}

// get returns a kept queue, or an empty one (its arrays grow on first use).
func (p *bufPool[Q]) get() Q {
	var q Q
	if n := len(p.free); n > 0 {
		q, p.free = p.free[n-1], p.free[:n-1]
	}
	return q
}

// put keeps q's arrays, emptied, unless enough are kept already or they are too large.
func (p *bufPool[Q]) put(q Q) {
	if q.size() == 0 || q.size() > bufKeepMax || len(p.free) >= bufKeep {
		return
	}
	p.free = append(p.free, q.emptied())
}

func (q queued) size() int { return cap(q.recs) }

func (q queued) emptied() queued {
	clear(q.recs)
	clear(q.waits)
	clear(q.at)
	return queued{q.recs[:0], q.waits[:0], q.at[:0]}
}

func (q queuedTraces) size() int { return cap(q.recs) }

func (q queuedTraces) emptied() queuedTraces {
	clear(q.recs)
	clear(q.at)
	return queuedTraces{q.recs[:0], q.at[:0]}
}

func (b *queueBufs) lastIndex() map[string]int {
	if b.last == nil {
		b.last = map[string]int{}
	}
	return b.last
}

func (b *queueBufs) endedSet() map[[2]string]bool {
	if b.ended == nil {
		b.ended = map[[2]string]bool{}
	}
	return b.ended
}
