package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// withdrawBatchOps bounds the deletions a stopping peer sends in one multi (Withdraw): at ZooKeeper's ~70 µs a
// deleted node with its watch notifications (the close measured at 30,000 and 60,000 jobs, docs/benchmarks.md),
// a multi holds the other sessions' requests back some 35 ms.
const withdrawBatchOps = 500

// withdrawInFlight is how many of those multis Withdraw keeps in flight: one waits on its round trip and
// ZooKeeper's log while the other is applied.
const withdrawInFlight = 2

// Withdrawal counts what Withdraw did: the jobs whose nodes it deleted, the nodes, the multis that carried them,
// the deletions ZooKeeper refused (the node gone or replaced already: left as they are) and those not sent
// (ctx ended or ZooKeeper failed first: they go when the session closes).
type Withdrawal struct {
	Jobs, Deleted, Multis, Refused, Left int
}

// add counts a batch's outcome (withdrawBatch) into w.
func (w *Withdrawal) add(b Withdrawal) {
	w.Deleted, w.Multis, w.Refused, w.Left = w.Deleted+b.Deleted, w.Multis+b.Multis, w.Refused+b.Refused, w.Left+b.Left
}

// heldNodes is what this peer's session holds of one job: its leader node (leads, at leaderVersion) and its
// instance node (registered); owns: an item of the job is this peer's (its owner or failover).
type heldNodes struct {
	job           string
	leads         bool
	leaderVersion int32
	registered    bool
	owns          bool
}

// withdrawOrder is the order Withdraw deletes the jobs' nodes in: first the jobs whose items this peer owns,
// whose fires the others hold until their leader has resharded them away (and that leader may have to be
// elected first), then the jobs it leads, then the rest, whose instance node only goes from a list; by name
// within each. Past the 10-s bound at 100,000 jobs, what goes with the session is then the instance nodes of
// jobs no fire waits for.
func withdrawOrder(a, b heldNodes) int {
	rank := func(h heldNodes) int {
		switch {
		case h.owns && h.leads:
			return 0
		case h.owns:
			return 1
		case h.leads:
			return 2
		}
		return 3
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	return cmp.Compare(a.job, b.job)
}

// Withdraw is a stopping peer's last step before it closes its session, after Stop: it deletes the job nodes
// the session holds (each job's leader node where this peer leads, and its instance node) in multis of
// withdrawBatchOps, withdrawInFlight at a time. Closing the session would delete them all in one transaction,
// and ZooKeeper answers no other session while it runs: ~3 s at 30,000 jobs, ~5.5 s at 60,000, longer than the
// other peers' lease at 100,000 (docs/benchmarks.md). Between the multis ZooKeeper answers everyone else, and
// the other peers elect and reshard job by job as the nodes go instead of all at once. ElasticJob's shutdown
// hook removes a job's leader and instance nodes the same way. It removes this session's watch of the jobs
// first (disarmNamespace): a stopped registry reads no event, and ZooKeeper sends one notification fewer a
// deleted node. It returns when every node is deleted, when ctx ends, or after the first failure that is not
// one node's refusal; what is left goes with the session.
func (r *Registry) Withdraw(ctx context.Context) (Withdrawal, error) {
	// the watch's removal is a round trip ctx does not bound: not sent once ctx has ended
	if ctx.Err() == nil {
		if err := r.disarmNamespace(); err != nil {
			r.log.Warn("could not remove this peer's watch before withdrawing: its deletions' events come to it too", "err", err)
		}
	}
	held := r.heldNodes()
	var w Withdrawal
	for _, h := range held {
		if h.leads || h.registered {
			w.Jobs++
		}
	}
	batches := withdrawBatches(r.p, r.me.InstanceID, held, withdrawBatchOps, maxBatchBytes)
	queue := make(chan []any, len(batches))
	for _, ops := range batches {
		queue <- ops
	}
	close(queue)
	var (
		mu     sync.Mutex
		failed error
		wg     sync.WaitGroup
	)
	for range withdrawInFlight {
		wg.Go(func() {
			for ops := range queue {
				mu.Lock()
				stop := failed != nil || ctx.Err() != nil
				mu.Unlock()
				var b Withdrawal
				var err error
				if stop {
					b.Left = len(ops) // goes with the session
				} else {
					b, err = r.withdrawBatch(ops)
				}
				mu.Lock()
				w.add(b)
				if err != nil && failed == nil {
					failed = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed == nil && w.Left > 0 {
		failed = ctx.Err()
	}
	if failed != nil {
		return w, fmt.Errorf("withdrawing this peer's job nodes: %w", failed)
	}
	return w, nil
}

// withdrawBatch sends one batch of deletions, again without each op ZooKeeper refuses (a node gone or
// replaced already). It counts the batch's deletions, multis and refusals, and on any other failure the ops
// left unsent.
func (r *Registry) withdrawBatch(ops []any) (Withdrawal, error) {
	var w Withdrawal
	for len(ops) > 0 {
		resps, err := r.s.multi(ops...)
		w.Multis++
		if err == nil {
			w.Deleted += len(ops)
			return w, nil
		}
		bad, _ := failedOp(resps)
		if bad < 0 {
			w.Left = len(ops)
			return w, err
		}
		w.Refused++
		ops = slices.Delete(ops, bad, bad+1)
	}
	return w, nil
}

// heldNodes lists, in withdrawOrder, what this session holds of each job by the registry's cache.
func (r *Registry) heldNodes() []heldNodes {
	session := r.s.ID()
	r.mu.RLock()
	entries := make([]*jobEntry, 0, len(r.jobs))
	for _, e := range r.jobs {
		entries = append(entries, e)
	}
	r.mu.RUnlock()
	held := make([]heldNodes, 0, len(entries))
	for _, e := range entries {
		e.mu.Lock()
		h := heldNodes{job: e.name, registered: e.st.registered, leads: e.st.leaderHeld(r.me.InstanceID, session),
			leaderVersion: e.st.leaderVersion}
		for _, it := range e.st.items.all() {
			if it.Owner == r.me.InstanceID || it.FailoverTo == r.me.InstanceID {
				h.owns = true
				break
			}
		}
		e.mu.Unlock()
		held = append(held, h)
	}
	slices.SortFunc(held, withdrawOrder)
	return held
}

// withdrawBatches packs the deletions of the held nodes into multis of at most maxOps ops and maxBytes bytes,
// a job's leader node before its instance node and both in one multi, so that a peer electing the job's next
// leader already sees this peer's instance gone.
func withdrawBatches(p Paths, me string, held []heldNodes, maxOps, maxBytes int) [][]any {
	var batches [][]any
	var cur []any
	size := 0
	for _, h := range held {
		var ops []any
		if h.leads {
			ops = append(ops, opDelete(p.LeaderInstance(h.job), h.leaderVersion))
		}
		if h.registered {
			ops = append(ops, opDelete(p.Instance(h.job, me), -1))
		}
		n := 0
		for _, op := range ops {
			n += opSize(op)
		}
		if len(cur) > 0 && (len(cur)+len(ops) > maxOps || size+n > maxBytes) {
			batches = append(batches, cur)
			cur, size = nil, 0
		}
		cur = append(cur, ops...)
		size += n
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}
