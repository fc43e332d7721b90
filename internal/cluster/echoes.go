package cluster

import (
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// A leader's own commits come back as events (issue 21). A resharding's commit is applied to the leader's
// cache at once (committed), and then its echo, the NodeDataChanged event of each item's instance node it
// wrote, queued a read of that node: the job's items were "still being read" (ItemsSettled false) until the
// read came back, and the leader's own fire, which its peers' fires waited for, waited behind its read lane.
// When a peer of three stops at 100,000 jobs, a survivor commits ~16,000 reshardings in a minute while its
// read lane holds the stopped peer's ~130,000 deletions: hundreds of fires were skipped after 30 s of "the
// job's sharding nodes still being read" with their resharding committed (docs/benchmarks.md, run 33).
//
// ZooKeeper sends a client the events of the changes applied before its write ahead of the write's answer,
// and the session queues them in that order (eventQueue's sequence numbers). So the events of a written node
// that the session queued after the write was sent and before its answer came are those of changes up to the
// write: the write's own, and any another writer made meanwhile. When there is exactly one, it is the write's
// own, and the cache holds what the write wrote: no read. A second one in that window is read (the read sees
// both), as is any event after it and any event of a write that failed or whose outcome is unknown. Only under
// the namespace's recursive watch, whose events are exact and need no re-arming.

// echoWindow is the span of events in which a write's echo comes: after from (events queued when it was sent)
// and up to to (queued when its answer was handled; 0 while it is on its way).
type echoWindow struct {
	from, to uint64
	seen     int  // events of the node handled in the window
	spoiled  bool // another write of this peer's to the node overlapped it: every event is read
}

// echoes holds the windows of this peer's writes of items' instance nodes, by path.
type echoes struct {
	mu      sync.Mutex
	windows map[string]*echoWindow
	// answered are the windows with an answer, in the order they got it: dropped once the session has handled
	// every event up to their end
	answered []answeredWindow
}

type answeredWindow struct {
	path string
	w    *echoWindow
}

// echoBegin opens the windows of a write of paths about to be sent; end closes them with the write's outcome
// (ok: it was applied). Without the recursive watch it tracks nothing.
func (r *Registry) echoBegin(paths []string) (end func(ok bool)) {
	if len(paths) == 0 || !r.recursiveArmed() {
		return func(bool) {}
	}
	mine := r.echo.begin(paths, r.s.queue.pushedCount())
	return func(ok bool) {
		for _, p := range r.echo.end(paths, mine, r.s.queue.pushedCount(), ok) {
			if k, ok := r.keyFor(p); ok {
				r.w.kick(k)
			}
		}
	}
}

// ownEcho reports whether the event the session handles now, of an item's instance node at path, is this
// peer's own write's echo (see above), which needs no read.
func (r *Registry) ownEcho(path string) bool { return r.echo.handle(path, r.s.eventSeq.Load()) }

// begin opens a window for each path of a write sent after from events were queued, and returns them (nil
// for a path with a write on its way already: both are spoiled).
func (x *echoes) begin(paths []string, from uint64) []*echoWindow {
	mine := make([]*echoWindow, len(paths))
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.windows == nil {
		x.windows = map[string]*echoWindow{}
	}
	for i, p := range paths {
		if w := x.windows[p]; w != nil && w.to == 0 {
			w.spoiled = true // two writes on their way: neither's echo is told apart
			continue
		}
		mine[i] = &echoWindow{from: from}
		x.windows[p] = mine[i]
	}
	return mine
}

// end closes the windows mine of a write of paths answered after to events were queued: applied (ok), or
// failed or of unknown outcome, whose windows go and whose paths with an event skipped are returned (to read).
func (x *echoes) end(paths []string, mine []*echoWindow, to uint64, ok bool) (read []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, p := range paths {
		w := mine[i]
		if w == nil || x.windows[p] != w {
			continue
		}
		if !ok {
			if w.seen > 0 { // the event skipped was not this write's
				read = append(read, p)
			}
			delete(x.windows, p)
			continue
		}
		w.to = to
		x.answered = append(x.answered, answeredWindow{p, w})
	}
	return read
}

// handle reports whether the event with sequence number seq of path needs no read: the first in an open or
// answered window of an applied write, not spoiled.
func (x *echoes) handle(path string, seq uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for len(x.answered) > 0 && x.answered[0].w.to < seq { // every event of these windows was handled
		a := x.answered[0]
		if x.windows[a.path] == a.w {
			delete(x.windows, a.path)
		}
		x.answered[0] = answeredWindow{}
		x.answered = x.answered[1:]
	}
	if len(x.answered) == 0 {
		x.answered = nil
	}
	w := x.windows[path]
	switch {
	case w == nil || seq <= w.from:
		return false
	case w.to != 0 && seq > w.to:
		delete(x.windows, path)
		return false
	}
	w.seen++
	return w.seen == 1 && !w.spoiled
}

// instancePaths are the paths of the items' instance nodes that ops write.
func instancePaths(ops []any) []string {
	var out []string
	for _, op := range ops {
		var p string
		switch o := op.(type) {
		case *zk.SetDataRequest:
			p = o.Path
		case *zk.CreateRequest:
			p = o.Path
		default:
			continue
		}
		if strings.HasSuffix(p, "/"+NodeInstance) {
			out = append(out, p)
		}
	}
	return out
}
