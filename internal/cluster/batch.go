package cluster

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Batch limits: ZooKeeper refuses packets over 1 MiB (jute.maxbuffer); stay well below.
const (
	maxBatchOps   = 1000
	maxBatchBytes = 512 << 10
	batchFlushers = 2
)

// ErrOpFailed wraps the error of the op that made a group fail; Op is its index in the group.
type OpError struct {
	Op   int
	Path string
	Err  error
}

func (e *OpError) Error() string { return fmt.Sprintf("op %d on %s: %v", e.Op, e.Path, e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// group is a set of ops that succeed or fail together, submitted by one caller.
type group struct {
	ops   []any
	size  int
	done  chan struct{}
	resps []zk.MultiResponse
	err   error
	// then, when set, is called with the outcome (on a flusher: it must not block)
	then func([]zk.MultiResponse, error)
	// sent counts the multis the group was sent in
	sent int
}

// finish records that the group has its outcome.
func (g *group) finish() {
	close(g.done)
	if g.then != nil {
		g.then(g.resps, g.err)
	}
}

// batcher packs the groups submitted by concurrent callers into as few multi requests as it can: while one
// multi is in flight the next groups queue up and leave together (natural batching: no added delay when
// idle, large batches under a burst). A multi is atomic, so when one group's op fails, that group alone gets
// the error and the others are sent again; a group whose op an earlier group of its multi may have made fail
// (writtenNear) is judged again after that group is written, so that what refuses it is ZooKeeper's state.
type batcher struct {
	s *Session

	mu      sync.Mutex
	pending []*group
	// first holds the groups that go before pending (submitFirst): they leave in the next multi
	first  []*group
	wake   chan struct{}
	closed bool
	wg     sync.WaitGroup
	// refused counts the groups failed by one of their own ops: each made every group batched with it wait
	// for one more multi.
	refused atomic.Int64
	// groups submitted, multis sent and the nanoseconds they took, summed (WriteStats)
	groups, multis, nanos atomic.Int64
}

// WriteStats are the counts of a peer's batched ZooKeeper writes since it started: Groups submitted (an
// item's begin or end, a resharding's commit, a registration...), the Multis that carried them and the time
// they took, summed (Seconds / Multis is their mean latency), the groups Refused by one of their own ops
// (each sent the groups batched with it again), and the groups Waiting for a multi now.
type WriteStats struct {
	Groups, Multis, Refused int64
	Seconds                 float64
	Waiting                 int
}

func (b *batcher) stats() WriteStats {
	b.mu.Lock()
	waiting := len(b.first) + len(b.pending)
	b.mu.Unlock()
	return WriteStats{Groups: b.groups.Load(), Multis: b.multis.Load(), Refused: b.refused.Load(),
		Seconds: time.Duration(b.nanos.Load()).Seconds(), Waiting: waiting}
}

func newBatcher(s *Session) *batcher {
	b := &batcher{s: s, wake: make(chan struct{}, 1)}
	for range batchFlushers {
		b.wg.Add(1)
		go b.flusher()
	}
	return b
}

// close fails pending groups and waits for the flushers.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	pending := append(b.first, b.pending...)
	b.first, b.pending = nil, nil
	b.mu.Unlock()
	for _, g := range pending {
		g.err = zk.ErrClosing
		g.finish()
	}
	close(b.wake)
	b.wg.Wait()
}

// submit sends ops as one atomic group and waits for the outcome.
func (b *batcher) submit(ops ...any) ([]zk.MultiResponse, error) {
	g := b.enqueue(ops, nil, false)
	<-g.done
	return g.resps, g.err
}

// submitFirst is submit for a group that goes before the groups queued (in the next multi): a leader's commit
// of a resharding, which a fire of the job waits for on every peer. At a stop at 100,000 jobs a survivor's
// commits waited ~11 s behind ~14,000 queued begins and ends of items (docs/benchmarks.md, run 33), and a fire
// held for one waited its 30 s. Overtaking is safe: any peer's commit may land between this peer's writes, and
// the commit's fence and the items' owner fences hold for every order.
func (b *batcher) submitFirst(ops ...any) ([]zk.MultiResponse, error) {
	g := b.enqueue(ops, nil, true)
	<-g.done
	return g.resps, g.err
}

// submitThen sends ops as one atomic group and returns at once; then gets the outcome, on a flusher (it must
// not block). A caller that does not wait lets many more groups share a multi than the callers waiting at once.
func (b *batcher) submitThen(then func([]zk.MultiResponse, error), ops ...any) {
	b.enqueue(ops, then, false)
}

func (b *batcher) enqueue(ops []any, then func([]zk.MultiResponse, error), first bool) *group {
	g := &group{ops: ops, done: make(chan struct{}), then: then}
	for _, op := range ops {
		g.size += opSize(op)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		g.err = zk.ErrClosing
		g.finish()
		return g
	}
	if first {
		b.first = append(b.first, g)
	} else {
		b.pending = append(b.pending, g)
	}
	b.mu.Unlock()
	b.groups.Add(1)
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return g
}

func (b *batcher) flusher() {
	defer b.wg.Done()
	for {
		batch := b.take()
		if batch == nil {
			if _, ok := <-b.wake; !ok {
				return
			}
			continue
		}
		b.send(batch)
	}
}

// take removes the next batch from the queues (first, then pending), or returns nil when they are empty.
func (b *batcher) take() []*group {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []*group
	ops, size := 0, 0
	for _, q := range []*[]*group{&b.first, &b.pending} {
		n := 0
		for n < len(*q) {
			g := (*q)[n]
			if len(batch)+n > 0 && (ops+len(g.ops) > maxBatchOps || size+g.size > maxBatchBytes) {
				break
			}
			ops += len(g.ops)
			size += g.size
			n++
		}
		batch = append(batch, (*q)[:n]...)
		clear((*q)[:n]) // the queue's array lets the groups go
		*q = (*q)[n:]
		if len(*q) > 0 {
			break // the multi is full
		}
	}
	if len(batch) == 0 {
		return nil
	}
	if len(b.first)+len(b.pending) > 0 {
		select {
		case b.wake <- struct{}{}: // let the other flusher take the rest now
		default:
		}
	}
	return batch
}

// send runs the batch as multis until every group has an outcome. A multi is atomic and ZooKeeper names only
// the first op that refused it: that op's group gets the error; the groups before it (their ops passed) go
// again as one multi, and the groups after it (not looked at) as two halves, the three at once. A batch with
// k refused groups then costs each group about log2 of the batch's size multis at most, not k+1 in a row: in
// a restart at 100,000 jobs, items' begins fenced by a resharding and commits that lost a race are refused by
// the hundred, and every item begun in the same batch waited behind them (~2,200 per peer in BeginItem).
// The parts' goroutines end before send returns.
func (b *batcher) send(batch []*group) {
	var ops []any
	for _, g := range batch {
		ops = append(ops, g.ops...)
		g.sent++
	}
	start := time.Now()
	resps, err := b.s.multi(ops...)
	b.multis.Add(1)
	b.nanos.Add(int64(time.Since(start)))
	if err == nil {
		i := 0
		for _, g := range batch {
			g.resps = resps[i : i+len(g.ops)]
			i += len(g.ops)
			g.finish()
		}
		return
	}
	bad, opErr := failedOp(resps)
	if bad < 0 {
		// connection loss or a server error: the outcome is unknown for every group
		for _, g := range batch {
			g.err = err
			g.finish()
		}
		return
	}
	gi, i := 0, 0
	for bad >= i+len(batch[gi].ops) {
		i += len(batch[gi].ops)
		gi++
	}
	g := batch[gi]
	k := bad - i
	pth := opPath(g.ops[k])
	if gi > 0 && writtenNear(batch[:gi], pth) {
		// the op may have failed for an earlier group of this multi, whose ops ZooKeeper applied before it and
		// then rolled back with it: a registration's create of servers/{ip} refused a second registration of the
		// same job (NodeExists), which then registered without it while the first's resend came behind and was
		// refused in turn (its instance node was there), and the job had no servers/{ip} at all. The earlier
		// groups are written first, and the group is judged again leading a multi: what refuses it then is what
		// ZooKeeper holds.
		b.send(batch[:gi])
		b.send(batch[gi:])
		return
	}
	g.err = &OpError{Op: k, Path: pth, Err: opErr}
	b.refused.Add(1)
	g.finish()
	var wg sync.WaitGroup
	for _, part := range resendParts(batch, gi) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.send(part)
		}()
	}
	wg.Wait()
}

// resendParts splits a batch refused by its group gi into the parts sent again: the groups before gi, and
// the groups after it in two halves; empty parts are left out.
func resendParts(batch []*group, gi int) [][]*group {
	after := batch[gi+1:]
	mid := len(after) / 2
	var parts [][]*group
	for _, part := range [][]*group{batch[:gi], after[:mid], after[mid:]} {
		if len(part) > 0 {
			parts = append(parts, part)
		}
	}
	return parts
}

// writtenNear reports whether one of the groups writes (creates, sets or deletes: a check changes nothing) the
// node at pth, a node above it or a node below it: the writes that can make an op on pth fail in the same
// multi (NodeExists, NoNode, BadVersion, NotEmpty, NoChildrenForEphemerals).
func writtenNear(groups []*group, pth string) bool {
	for _, g := range groups {
		for _, op := range g.ops {
			if _, check := op.(*zk.CheckVersionRequest); check {
				continue
			}
			p := opPath(op)
			if p == pth || strings.HasPrefix(pth, p+"/") || strings.HasPrefix(p, pth+"/") {
				return true
			}
		}
	}
	return false
}

// failedOp finds the op whose error made the multi fail: the first with an API error (the others report
// success or ZooKeeper's "runtime inconsistency"). It returns -1 when the responses name none.
func failedOp(resps []zk.MultiResponse) (int, error) {
	for i, r := range resps {
		switch {
		case r.Error == nil:
		case errors.Is(r.Error, zk.ErrNoNode), errors.Is(r.Error, zk.ErrNodeExists),
			errors.Is(r.Error, zk.ErrBadVersion), errors.Is(r.Error, zk.ErrNotEmpty),
			errors.Is(r.Error, zk.ErrNoChildrenForEphemerals), errors.Is(r.Error, zk.ErrNoAuth),
			errors.Is(r.Error, zk.ErrInvalidACL), errors.Is(r.Error, zk.ErrBadArguments):
			return i, r.Error
		}
	}
	return -1, nil
}

func opPath(op any) string {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return o.Path
	case *zk.SetDataRequest:
		return o.Path
	case *zk.DeleteRequest:
		return o.Path
	case *zk.CheckVersionRequest:
		return o.Path
	}
	return "?"
}

func opSize(op any) int {
	const overhead = 32
	switch o := op.(type) {
	case *zk.CreateRequest:
		return overhead + len(o.Path) + len(o.Data) + 16*len(o.Acl)
	case *zk.SetDataRequest:
		return overhead + len(o.Path) + len(o.Data)
	}
	return overhead + len(opPath(op))
}

// WriteStats are the peer's batched ZooKeeper writes so far (the metrics scrape reads them).
func (r *Registry) WriteStats() WriteStats { return r.b.stats() }
