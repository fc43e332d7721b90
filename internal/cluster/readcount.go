package cluster

import "sync/atomic"

// readCounts counts a session's reads by operation (gets, exists checks, children lists, multiReads), so the tests can
// hold a peer's first load of a job to its budget of requests (issue 21: at 100,000 jobs a peer's start-up
// is bound by the requests it sends ZooKeeper, not by their latency).
type readCounts struct {
	get, exists, children, multi atomic.Int64
	// one path whose children lists are counted apart (a test's choice: the namespace's root)
	path     atomic.Pointer[string]
	pathList atomic.Int64
}

// countLists makes children lists of path counted apart (listsOf).
func (c *readCounts) countLists(path string) { c.path.Store(&path) }

// listsOf is the number of children lists of the path given to countLists since then.
func (c *readCounts) listsOf() int64 { return c.pathList.Load() }

func (c *readCounts) listed(path string) {
	c.children.Add(1)
	if p := c.path.Load(); p != nil && *p == path {
		c.pathList.Add(1)
	}
}

// readTotals is a snapshot of readCounts.
type readTotals struct{ get, exists, children, multi int64 }

func (c *readCounts) totals() readTotals {
	return readTotals{get: c.get.Load(), exists: c.exists.Load(), children: c.children.Load(), multi: c.multi.Load()}
}

func (t readTotals) minus(o readTotals) readTotals {
	return readTotals{get: t.get - o.get, exists: t.exists - o.exists, children: t.children - o.children,
		multi: t.multi - o.multi}
}

// requests is the number of requests the reads took.
func (t readTotals) requests() int64 { return t.get + t.exists + t.children + t.multi }
