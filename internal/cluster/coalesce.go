package cluster

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// Single reads together (issue 21). A read of one node that sets no watch (a get, an exists check) is sent
// on its own while fewer than coalesceLanes such requests are on their way; past that it waits, and the
// reads that waited go in one multiRead as soon as a request comes back. At rest a read is one get as
// before; when hundreds are asked at once they cost a few requests.
//
// The reads that wait are the ones no batch of the registry's knew to make together: the fires of items a
// peer gained read each item's running and completed nodes (did its owner run it before it left?), a stopped
// peer's jobs' leaders read what they reshard. When a peer of three stopped at 100,000 jobs, each survivor
// sent 9,000-18,000 single gets in the 30 s after (docs/benchmarks.md, run 31) while ZooKeeper stood at its
// limit of outstanding requests (1,000), its item writes queued behind them.
//
// A multiRead is answered from one state of the tree and after every request the session sent before it,
// so a read in one sees what it would alone: its caller's earlier writes, and what any read alone sent at
// the same time could see. ZooKeeper before 3.6 refuses multiRead: the reads are then sent alone.

// coalesceLanes bounds the single-read requests on their way at once (a get alone, or a multiRead of the
// reads that waited): past it a read waits for the next multiRead.
const coalesceLanes = 8

// readCoalescer holds the reads that wait for a lane (see coalesceLanes).
type readCoalescer struct {
	mu      sync.Mutex
	lanes   int // requests on their way
	waiting []*coalescedRead
	// refused: the server does not speak multiRead
	refused atomic.Bool
}

// coalescedRead is one waiting read: its path, its answer once done is closed, and send when its caller
// is the one to send a batch (itself first).
type coalescedRead struct {
	path   string
	exists bool // an exists check: alone, an exists request
	res    zk.ReadResult
	done   chan struct{}
	send   []*coalescedRead
}

// readOne reads one node, alone or with others (see above): its data and stat (exists: its stat; the data
// may come too), or ErrNoNode for an absent node.
func (s *Session) readOne(p string, exists bool) zk.ReadResult {
	c := &s.coalesce
	if c.refused.Load() {
		return s.readAlone(p, exists)
	}
	c.mu.Lock()
	if c.lanes < coalesceLanes {
		c.lanes++ // nothing waits while a lane is free
		c.mu.Unlock()
		res := s.readAlone(p, exists)
		s.laneFree()
		return res
	}
	rd := &coalescedRead{path: p, exists: exists, done: make(chan struct{})}
	c.waiting = append(c.waiting, rd)
	c.mu.Unlock()
	<-rd.done
	if rd.send != nil {
		s.sendReads(rd.send)
		s.laneFree()
	}
	return rd.res
}

// laneFree hands the lane of a request that came back to the reads waiting (their first read's caller
// sends them), or frees it.
func (s *Session) laneFree() {
	c := &s.coalesce
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		c.lanes--
		return
	}
	n := min(len(c.waiting), bulkChunk)
	batch := c.waiting[:n:n]
	c.waiting = c.waiting[n:]
	if len(c.waiting) == 0 {
		c.waiting = nil // a burst's array goes
	}
	batch[0].send = batch
	close(batch[0].done)
}

// sendReads sends a batch's reads, one multiRead for two or more, and answers them (the first, its
// sender's, is answered by returning).
func (s *Session) sendReads(batch []*coalescedRead) {
	if len(batch) == 1 {
		batch[0].res = s.readAlone(batch[0].path, batch[0].exists)
		return
	}
	ops := make([]zk.ReadOp, len(batch))
	for i, rd := range batch {
		ops[i] = zk.ReadOp{Path: rd.path}
	}
	s.reads.multi.Add(1)
	res, err := s.conn.MultiRead(ops...)
	if errors.Is(err, zk.ErrUnimplemented) {
		s.coalesce.refused.Store(true)
	}
	for i, rd := range batch {
		switch {
		case errors.Is(err, zk.ErrUnimplemented) || errors.Is(err, zk.ErrInvalidPath):
			rd.res = s.readAlone(rd.path, rd.exists) // one bad path fails the whole: each alone gets its own answer
		case err != nil:
			rd.res = zk.ReadResult{Err: err}
		default:
			rd.res = res[i]
		}
		if i > 0 {
			close(rd.done)
		}
	}
}

// readAlone sends one read as a request of its own: a get, or for an exists check an exists request.
func (s *Session) readAlone(p string, exists bool) zk.ReadResult {
	if !exists {
		s.reads.get.Add(1)
		data, st, err := s.conn.Get(p)
		return zk.ReadResult{Data: data, Stat: st, Err: err}
	}
	s.reads.exists.Add(1)
	ok, st, err := s.conn.Exists(p)
	switch {
	case err != nil: // go-zookeeper can return true together with an error
		return zk.ReadResult{Err: err}
	case !ok:
		return zk.ReadResult{Err: zk.ErrNoNode}
	}
	return zk.ReadResult{Stat: st}
}
