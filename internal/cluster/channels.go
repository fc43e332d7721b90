package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Errors of the channel writes.
var (
	// ErrNoChannel: no channel node of that name.
	ErrNoChannel = errors.New("no such channel")
	// ErrChannelExists: a channel of that name exists already.
	ErrChannelExists = errors.New("a channel of that name exists")
	// ErrChannelChanged: the channel node was written since the version the caller gave.
	ErrChannelChanged = errors.New("the channel changed meanwhile")
)

// MetaNode is one node of a meta folder (a channel, a calendar): its name, stored JSON and version (the
// API's ETag).
type MetaNode struct {
	Name    string
	Data    []byte
	Version int32
}

// ChannelNode is one notification channel's node (secrets included: the node is readable only with the
// cluster's digest).
type ChannelNode = MetaNode

// channelWatch is the one signal every channel watch fires: closed on the first change of the channels
// folder or of any channel node, then made anew by the next ChannelNodes.
type channelWatch struct {
	mu sync.Mutex
	ch chan struct{}
}

func (w *channelWatch) arm() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *channelWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// onChannelWatch handles a watch event under the channels folder; it reports whether the path was one.
func (r *Registry) onChannelWatch(pth string) bool {
	folder := r.p.Channels()
	if pth != folder && !strings.HasPrefix(pth, folder+"/") {
		return false
	}
	r.chw.fire()
	return true
}

// ChannelNodes reads every channel node, by name. With watch it watches the folder and each node: the
// returned channel is closed on the first change (or when the watches are lost with the session).
func (r *Registry) ChannelNodes(watch bool) ([]ChannelNode, <-chan struct{}, error) {
	return r.metaNodes("channel", r.p.Channels(), r.p.Channel, &r.chw, watch)
}

// metaNodes reads every node of a meta folder (channels, calendars), by name, optionally watching the folder
// and each node through w. A missing folder is created.
func (r *Registry) metaNodes(what, folder string, node func(string) string, w *channelWatch, watch bool) ([]MetaNode, <-chan struct{}, error) {
	var changed <-chan struct{}
	list, get := r.s.children, r.s.get
	if watch {
		changed = w.arm()
		list, get = r.s.childrenW, r.s.getW
	}
	names, _, err := list(folder)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(folder); err == nil {
			names, _, err = list(folder)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list %ss: %w", what, err)
	}
	slices.Sort(names)
	out := make([]MetaNode, 0, len(names))
	for _, name := range names {
		data, st, err := get(node(name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // deleted since the listing: the folder's watch fires
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read %s %q: %w", what, name, err)
		}
		out = append(out, MetaNode{Name: name, Data: data, Version: st.Version})
	}
	return out, changed, nil
}

// ReadChannel reads one channel node now (not from a cache): ErrNoChannel if there is none.
func (r *Registry) ReadChannel(name string) (ChannelNode, error) {
	data, st, err := r.s.get(r.p.Channel(name))
	if errors.Is(err, zk.ErrNoNode) {
		return ChannelNode{}, ErrNoChannel
	}
	if err != nil {
		return ChannelNode{}, err
	}
	return ChannelNode{Name: name, Data: data, Version: st.Version}, nil
}

// CreateChannel creates a channel node (ErrChannelExists if there is one) with the secret ACL: with
// --zk-digest only the cluster reads it, since it holds the channel's secrets.
func (r *Registry) CreateChannel(name string, data []byte) (int32, error) {
	if err := r.s.ensurePath(r.p.Channels()); err != nil {
		return -1, err
	}
	_, err := r.s.conn.Create(r.p.Channel(name), data, 0, r.s.secretACL())
	if errors.Is(err, zk.ErrNodeExists) {
		return -1, ErrChannelExists
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// SetChannel replaces a channel node if it still has version (-1: any version); the new version is
// returned.
func (r *Registry) SetChannel(name string, data []byte, version int32) (int32, error) {
	st, err := r.s.set(r.p.Channel(name), data, version)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return -1, ErrNoChannel
	case errors.Is(err, zk.ErrBadVersion):
		return -1, ErrChannelChanged
	case err != nil:
		return -1, err
	}
	return st.Version, nil
}

// DeleteChannel removes a channel node if it still has version (-1: any version).
func (r *Registry) DeleteChannel(name string, version int32) error {
	err := r.s.del(r.p.Channel(name), version)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ErrNoChannel
	case errors.Is(err, zk.ErrBadVersion):
		return ErrChannelChanged
	}
	return err
}
