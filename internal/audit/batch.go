package audit

import (
	"context"
	"sync"
)

// batcher writes the entries of concurrent callers together (group commit): while one batch is being
// written, the entries that arrive wait and go in the next, one write for all of them, led by the first of
// them to arrive. The store is a peer's history database, whose one write connection the history writer keeps
// busy under load: each change written in a transaction of its own waited for that connection, and while
// 100,000 jobs registered, 73 creations' entries timed out (5 s) on three peers. A caller returns once the
// batch holding its entries is written (or failed), as before.
type batcher struct {
	mu      sync.Mutex
	writing bool          // a batch is being written
	next    *pendingBatch // the entries waiting for the write in progress to end
}

// pendingBatch is one batch being gathered: its entries, and done, closed once err is set.
type pendingBatch struct {
	entries []Entry
	err     error
	done    chan struct{}
	// lead is closed when the write in progress ends: the batch's first caller then writes it
	lead chan struct{}
}

// write adds es to a batch, writes it with writeFn if this caller leads it, and returns the batch's error.
func (b *batcher) write(ctx context.Context, es []Entry, writeFn func(context.Context, []Entry) error) error {
	b.mu.Lock()
	if !b.writing {
		b.writing = true
		b.mu.Unlock()
		return b.lead(ctx, &pendingBatch{entries: es, done: make(chan struct{})}, writeFn)
	}
	p := b.next
	first := p == nil
	if first {
		p = &pendingBatch{done: make(chan struct{}), lead: make(chan struct{})}
		b.next = p
	}
	p.entries = append(p.entries, es...)
	b.mu.Unlock()
	if first {
		<-p.lead
		return b.lead(ctx, p, writeFn)
	}
	<-p.done
	return p.err
}

// lead writes p (b.writing is set for it), hands the writing on to the batch gathered meanwhile, if any, and
// returns p's error.
func (b *batcher) lead(ctx context.Context, p *pendingBatch, writeFn func(context.Context, []Entry) error) error {
	b.mu.Lock()
	if b.next == p {
		b.next = nil // no more entries join p: the ones arriving now gather in a new batch
	}
	b.mu.Unlock()
	p.err = writeFn(ctx, p.entries)
	close(p.done)
	b.mu.Lock()
	if n := b.next; n != nil {
		close(n.lead) // b.writing stays set: n's leader writes next
	} else {
		b.writing = false
	}
	b.mu.Unlock()
	return p.err
}

// waiting is the number of entries gathered for the next write.
func (b *batcher) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == nil {
		return 0
	}
	return len(b.next.entries)
}
