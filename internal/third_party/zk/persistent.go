package zk

// ejserver's fork: ZooKeeper 3.6's persistent watches (addWatch), which go-zookeeper v1.0.4 does not speak.
// See FORK.md for the whole difference to v1.0.4.
//
// A persistent watch stays armed after it fires: one addWatch replaces the re-arming read after every event,
// and a recursive one covers a node's whole subtree (NodeCreated, NodeDeleted and NodeDataChanged of the node
// and of every descendant; no NodeChildrenChanged). Its events reach the connection's event callback and
// event channel only (no per-watch channel is kept, so a persistent watch costs the client a map entry). The
// watch survives reconnections within the session (re-sent with setWatches2); it goes with the session.
// ZooKeeper does not replay, for a persistent watch re-sent after a reconnection, the changes made while the
// client was away: re-read what it covers once EventPersistentWatchesRestored arrives (the re-sent watches
// travel beside other requests, so a read sent before that event may precede them).

// AddWatchMode is the mode of a persistent watch.
type AddWatchMode int32

const (
	// AddWatchModePersistent watches the node's data and children, like GetW and ChildrenW, without firing once.
	AddWatchModePersistent AddWatchMode = 0
	// AddWatchModePersistentRecursive watches the node and every node below it (created, deleted, data changed).
	AddWatchModePersistentRecursive AddWatchMode = 1
)

type addWatchRequest struct {
	Path string
	Mode int32
}

type addWatchResponse struct{}

// watcherTypeAny removes every kind of watch of a path (removeWatches' WatcherType.Any).
const watcherTypeAny = 3

type removeWatchesRequest struct {
	Path string
	Type int32
}

type removeWatchesResponse struct{}

type setWatches2Request struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// AddWatch arms a persistent watch on path (the node need not exist). ZooKeeper before 3.6 answers
// ErrUnimplemented. Arming the same path again changes its mode.
func (c *Conn) AddWatch(path string, mode AddWatchMode) error {
	if err := validatePath(path, false); err != nil {
		return err
	}
	_, err := c.request(opAddWatch, &addWatchRequest{Path: path, Mode: int32(mode)}, &addWatchResponse{},
		func(_ *request, _ *responseHeader, err error) {
			if err != nil {
				return
			}
			// recorded on the receive loop, before any event the server sends after its answer
			c.watchersLock.Lock()
			defer c.watchersLock.Unlock()
			if c.persistent == nil {
				c.persistent = make(map[string]AddWatchMode)
			}
			c.persistent[path] = mode
		})
	return err
}

// RemoveAllWatches removes every watch of this session on path: persistent, data and children. The
// channels of one-shot watches on path are closed with an EventNotWatching. ErrNoWatcher: there was none.
func (c *Conn) RemoveAllWatches(path string) error {
	if err := validatePath(path, false); err != nil {
		return err
	}
	_, err := c.request(opRemoveWatches, &removeWatchesRequest{Path: path, Type: watcherTypeAny}, &removeWatchesResponse{},
		func(_ *request, _ *responseHeader, err error) {
			if err != nil {
				return
			}
			c.watchersLock.Lock()
			defer c.watchersLock.Unlock()
			delete(c.persistent, path)
			for _, t := range []watchType{watchTypeData, watchTypeExist, watchTypeChild} {
				wpt := watchPathType{path, t}
				for _, ch := range c.watchers[wpt] {
					ch <- Event{Type: EventNotWatching, State: StateConnected, Path: path}
					close(ch)
				}
				delete(c.watchers, wpt)
			}
		})
	return err
}

// PersistentWatches counts the persistent watches this connection holds.
func (c *Conn) PersistentWatches() int {
	c.watchersLock.Lock()
	defer c.watchersLock.Unlock()
	return len(c.persistent)
}

// sendSetWatches2Locked re-sends every watch, persistent ones included, after a reconnection, in packets of
// at most 128 KB as sendSetWatches does. The caller holds watchersLock.
func (c *Conn) sendSetWatches2Locked() {
	limit := 128 * 1024
	if c.setWatchLimit > 0 {
		limit = c.setWatchLimit
	}
	var reqs []*setWatches2Request
	var req *setWatches2Request
	size := 0
	add := func(path string) *setWatches2Request {
		n := 4 + len(path)
		if req == nil || size+n > limit {
			req = &setWatches2Request{RelativeZxid: c.lastZxid, DataWatches: []string{}, ExistWatches: []string{},
				ChildWatches: []string{}, PersistentWatches: []string{}, PersistentRecursiveWatches: []string{}}
			reqs = append(reqs, req)
			size = 48 // fixed overhead of a setWatches2 packet
		}
		size += n
		return req
	}
	for pt, watchers := range c.watchers {
		if len(watchers) == 0 {
			continue
		}
		r := add(pt.path)
		switch pt.wType {
		case watchTypeData:
			r.DataWatches = append(r.DataWatches, pt.path)
		case watchTypeExist:
			r.ExistWatches = append(r.ExistWatches, pt.path)
		case watchTypeChild:
			r.ChildWatches = append(r.ChildWatches, pt.path)
		}
	}
	for path, mode := range c.persistent {
		r := add(path)
		if mode == AddWatchModePersistentRecursive {
			r.PersistentRecursiveWatches = append(r.PersistentRecursiveWatches, path)
		} else {
			r.PersistentWatches = append(r.PersistentWatches, path)
		}
	}
	// other requests may pass these on the connection: only once the last is answered does a read see
	// every change that comes after it. The event is sent on the receive loop, whose connection's life
	// bounds it (the event channel closes after the loop ends).
	restored := func(_ *request, _ *responseHeader, err error) {
		if err == nil {
			c.sendEvent(Event{Type: EventPersistentWatchesRestored, State: StateHasSession})
		}
	}
	go func() {
		res := &setWatchesResponse{}
		for i, req := range reqs {
			var recv func(*request, *responseHeader, error)
			if i == len(reqs)-1 {
				recv = restored
			}
			if _, err := c.request(opSetWatches2, req, res, recv); err != nil {
				c.logger.Printf("Failed to set previous watches: %v", err)
				return // the next connection sends them again
			}
		}
	}()
}
