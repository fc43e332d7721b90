package cluster

import "github.com/go-zookeeper/zk"

// Items' reads together (issue 21, a peer restarted at 100,000 jobs). A resharding writes the new owner of
// each item it moves, and every peer reads each such node back (kindItemInstance), urgent: the job's fires
// wait for it (ItemsSettled). When a peer of three stops, ~33,000 jobs are resharded at once; read one node
// per refresh worker, the 32 workers read ~550 nodes a second against a ZooKeeper answering in ~58 ms on
// average, and the read-backs queued behind ~90,000 reports of the stopped instance's deletions in the one
// urgent lane: the jobs the stopped peer owned missed their next fire (~30,000 fires, counted by the
// refresher's own backlog log). Under the namespace's recursive watch an item's read needs no watch of its
// own, so the item reads wait in a lane of their own, ahead of the other urgent keys, and a worker takes up to
// itemBatch of them as one multiRead request.

// itemBatch bounds the item reads sent together: one multiRead request.
const itemBatch = bulkChunk

// itemReadBatched selects the item reads that travel together: those the namespace's recursive watch covers,
// on a server that speaks multiRead. The others are read one by one, with a watch each.
func (r *Registry) itemReadBatched(k refreshKey) bool {
	switch k.kind {
	case kindItemInstance, kindItemDisabled, kindItemFailover:
		return !r.noMultiRead.Load() && r.recursiveArmed()
	}
	return false
}

// refreshItems reads the items' nodes of keys (laneItems) in one multiRead and applies them; errs[i] is
// keys[i]'s outcome. A key whose job is not loaded yet (its load reads the items), or whose node the recursive
// watch no longer covers (the session changed since it was queued), is refreshed on its own.
func (r *Registry) refreshItems(keys []refreshKey) []error {
	errs := make([]error, len(keys))
	var ops []zk.ReadOp
	var at []int // the key of each op
	var es []*jobEntry
	for i, k := range keys {
		e := r.entry(k.job)
		if e == nil {
			continue // the job went away
		}
		pth := r.p.ItemNode(k.job, k.item, itemNodeOf(k.kind))
		if !e.ready() || !r.s.isCovered(pth) {
			errs[i] = r.refresh(k)
			continue
		}
		ops, at, es = append(ops, zk.ReadOp{Path: pth}), append(at, i), append(es, e)
	}
	res, err := r.multiReadChunked(ops)
	if r.multiReadRefused(err) {
		for _, i := range at {
			errs[i] = r.refresh(keys[i])
		}
		return errs
	}
	if err != nil {
		for _, i := range at {
			errs[i] = err
		}
		return errs
	}
	for j, x := range res {
		k := keys[at[j]]
		value, version, present := readValue(x)
		r.applyItem(es[j], k.kind, k.item, value, version, present)
	}
	return errs
}
