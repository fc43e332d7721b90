package history

// queueBufs keeps the arrays of the Writer's queues for the next batches (issue 21: a peer's allocations per
// item). Each take split the queue into the records to write and those held back (StartHold) by appending to
// new slices, and Enqueue then grew the next queue from empty again: ~10 KB allocated per item of
// steady-10k (BenchmarkWriterQueue), a third of what a peer allocated per item. An array goes back here once
// its records are written (or copied on) and cleared, so that nothing it held stays reachable; a few are
// kept, and none larger than bufKeepMax records (a backlog's arrays go when it is written).
type queueBufs struct {
	execs  []queued
	traces []queuedTraces
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

func (b *queueBufs) getExecs() queued {
	if n := len(b.execs); n > 0 {
		q := b.execs[n-1]
		b.execs = b.execs[:n-1]
		return q
	}
	return queued{}
}

// putExecs keeps q's arrays, cleared, unless enough are kept already or they are too large.
func (b *queueBufs) putExecs(q queued) {
	if cap(q.recs) == 0 || cap(q.recs) > bufKeepMax || len(b.execs) >= bufKeep {
		return
	}
	clear(q.recs)
	clear(q.waits)
	clear(q.at)
	b.execs = append(b.execs, queued{q.recs[:0], q.waits[:0], q.at[:0]})
}

func (b *queueBufs) getTraces() queuedTraces {
	if n := len(b.traces); n > 0 {
		q := b.traces[n-1]
		b.traces = b.traces[:n-1]
		return q
	}
	return queuedTraces{}
}

// putTraces keeps q's arrays, cleared, unless enough are kept already or they are too large.
func (b *queueBufs) putTraces(q queuedTraces) {
	if cap(q.recs) == 0 || cap(q.recs) > bufKeepMax || len(b.traces) >= bufKeep {
		return
	}
	clear(q.recs)
	clear(q.at)
	b.traces = append(b.traces, queuedTraces{q.recs[:0], q.at[:0]})
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
