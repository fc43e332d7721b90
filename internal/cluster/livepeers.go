package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// livePeers is the registry's cache of the namespace's live peers (/{namespace}.ejserver/peers), kept fresh by
// one children watch: a new job's first sharding is computed from it (FirstOwners), and a job's leader tells
// an owner that has not registered on the job yet (a live peer still loading it) from one that is gone.
// A peer's node is written once, so its identity is read once, when it appears.
type livePeers struct {
	mu     sync.RWMutex
	byID   map[string]Identity
	loaded bool // listed at least once
	// left holds the peers this cache listed and then saw go (a stopping peer's Leave, a session's end),
	// until they come back; at most maxLeft of them
	left map[string]bool
	// selfGone is closed once a listing without this peer's own node was read after Leave
	selfGone       chan struct{}
	selfGoneClosed bool
}

// maxLeft bounds livePeers.left: a peer that left long ago is gone from every job by then.
const maxLeft = 1024

// LivePeers lists the live peers (sorted by instance id) and whether the list was read at least once.
func (r *Registry) LivePeers() ([]Identity, bool) {
	r.peers.mu.RLock()
	defer r.peers.mu.RUnlock()
	out := make([]Identity, 0, len(r.peers.byID))
	for _, p := range r.peers.byID {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Identity) int { return strings.Compare(a.InstanceID, b.InstanceID) })
	return out, r.peers.loaded
}

// PeerLive reports whether instance id has a live peer node, as the cache last saw it.
func (r *Registry) PeerLive(id string) bool {
	r.peers.mu.RLock()
	defer r.peers.mu.RUnlock()
	_, ok := r.peers.byID[id]
	return ok
}

// peerIP is the server IP of live peer id, or "" when the cache does not know it.
func (r *Registry) peerIP(id string) string {
	r.peers.mu.RLock()
	defer r.peers.mu.RUnlock()
	return r.peers.byID[id].ServerIP
}

// PeerGone reports whether instance id is known to have no live peer node: the peers were listed at least
// once and id is not among them. Before the first listing no peer is taken for gone.
func (r *Registry) PeerGone(id string) bool {
	r.peers.mu.RLock()
	defer r.peers.mu.RUnlock()
	_, ok := r.peers.byID[id]
	return r.peers.loaded && !ok
}

// PeerLeft reports whether instance id had a live peer node that this peer saw go (and not come back): a
// stopping peer removes its node first (Leave), while its instance nodes stay until its session closes.
func (r *Registry) PeerLeft(id string) bool {
	r.peers.mu.RLock()
	defer r.peers.mu.RUnlock()
	return r.peers.left[id]
}

// Leave is a stopping peer's first step: it removes the peer's node (/{namespace}.ejserver/peers/{id}) and
// never writes it again, so that the other peers hold the fires of the items it owns (PeerLeft) until their
// leaders have resharded them away, which they do as its instance nodes go (Withdraw, or its session's close). It
// returns once this peer's own watch has seen the node go (the others' watches see it about then), or when
// ctx ends. The peer should go on firing its items for a fire lead after that: a fire another peer prepared
// before it saw the node go is not held there; the held ones skip the items this peer ran.
func (r *Registry) Leave(ctx context.Context) error {
	r.leaving.Store(true)
	r.peers.mu.Lock()
	if r.peers.selfGone == nil {
		r.peers.selfGone = make(chan struct{})
	}
	seen := r.peers.selfGone
	r.peers.mu.Unlock()
	err := r.s.del(r.p.Peer(r.me.InstanceID), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("remove peer node %s: %w", r.me.InstanceID, err)
	}
	r.w.kick(refreshKey{kind: kindPeers}) // should the watch's event be lost with a connection
	select {
	case <-seen:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("this peer's watch did not see its node go: %w", ctx.Err())
	}
}

// refreshPeers lists (and re-watches) the peers and reads the identity of each new one. A peer that left is
// reported as PeersChanged (Job ""), so the leaders look again at the jobs whose items it owned.
func (r *Registry) refreshPeers() error {
	ids, _, err := r.s.childrenW(r.p.Peers())
	if err != nil {
		return err
	}
	r.peers.mu.RLock()
	var fresh []string
	for _, id := range ids {
		if _, ok := r.peers.byID[id]; !ok {
			fresh = append(fresh, id)
		}
	}
	r.peers.mu.RUnlock()
	read := make(map[string]Identity, len(fresh))
	for _, id := range fresh {
		data, _, err := r.s.get(r.p.Peer(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone already
		}
		if err != nil {
			return err
		}
		var p Identity
		if json.Unmarshal(data, &p) != nil || p.InstanceID == "" {
			p = Identity{InstanceID: id}
		}
		read[id] = p
	}
	r.peers.mu.Lock()
	now := make(map[string]Identity, len(ids))
	var removed, added []string
	for _, id := range ids {
		if p, ok := r.peers.byID[id]; ok {
			now[id] = p
		} else if p, ok := read[id]; ok {
			now[id] = p
			added = append(added, id)
		}
	}
	for id := range r.peers.byID {
		if _, ok := now[id]; !ok {
			removed = append(removed, id)
		}
	}
	r.peers.left = leftAfter(r.peers.left, added, removed)
	if _, ok := now[r.me.InstanceID]; !ok && r.peers.selfGone != nil && !r.peers.selfGoneClosed {
		close(r.peers.selfGone)
		r.peers.selfGoneClosed = true
	}
	r.peers.byID, r.peers.loaded = now, true
	r.peers.mu.Unlock()
	if len(added) > 0 || len(removed) > 0 {
		slices.Sort(added)
		slices.Sort(removed)
		r.emit([]Event{{Kind: PeersChanged, Added: added, Removed: removed}})
	}
	return nil
}

// leftAfter updates the set of peers that left with a listing's changes: the removed join it, the added (a
// peer back under the same id) leave it. Past maxLeft it starts afresh.
func leftAfter(left map[string]bool, added, removed []string) map[string]bool {
	if left == nil || len(left)+len(removed) > maxLeft {
		left = map[string]bool{}
	}
	for _, id := range removed {
		left[id] = true
	}
	for _, id := range added {
		delete(left, id)
	}
	return left
}
