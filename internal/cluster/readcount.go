package cluster

import "sync/atomic"

// readCounts counts a session's reads by operation (gets, exists checks, children lists, multiReads), so the tests can
// hold a peer's first load of a job to its budget of requests (issue 21: at 100,000 jobs a peer's start-up
// is bound by the requests it sends ZooKeeper, not by their latency); with its writes (creates, sets,
// deletes, multis) and the watch events it received, they are the peer's ZooKeeper requests (Requests).
type readCounts struct {
	get, exists, children, multi         atomic.Int64
	create, set, del, writeMulti, events atomic.Int64
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

// Requests are a session's ZooKeeper requests since it was made, by operation, and the watch events it
// received (ejserver_zookeeper_requests_total{op}, ejserver_zookeeper_events_total): which requests a peer
// floods an ensemble with (a leaving peer's campaigns, a joining peer's reads).
type Requests struct {
	Get, Exists, Children, MultiRead, Create, Set, Delete, Multi, Events int64
}

// Requests counts this session's requests (see Requests).
func (s *Session) Requests() Requests {
	c := &s.reads
	return Requests{Get: c.get.Load(), Exists: c.exists.Load(), Children: c.children.Load(), MultiRead: c.multi.Load(),
		Create: c.create.Load(), Set: c.set.Load(), Delete: c.del.Load(), Multi: c.writeMulti.Load(), Events: c.events.Load()}
}
