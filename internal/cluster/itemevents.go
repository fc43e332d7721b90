package cluster

import (
	"strings"

	"github.com/go-zookeeper/zk"
)

// The events of the items' running and completed nodes, handled where they arrive.
//
// The namespace's recursive watch reports every node that changes in every job, and at work almost all of
// them are items' running nodes (created at a begin, deleted at an end) and completed nodes (set at an end):
// each peer gets three events for every item its cluster runs, three times as many as it runs itself. No
// refresh reads these nodes. All a peer does with such an event is wake a WaitGone waiter of the node (the
// sharding leader waits for running nodes to go) and learn whether a completed node exists (noteCompleted).
// Both take a short lock and never block, so they run on go-zookeeper's receive loop (Session.onEvent),
// and the event is not queued for the session goroutine: each such event had cost that goroutine a wake-up
// and a pass through every route of onWatch (~3,000 a second a peer at steady-10k).

// itemStateNode parses a path /{ns}/{job}/sharding/{i}/running or .../completed into the job, the item
// and the node's name. Unlike JobOf and ItemOf it builds no string, since it sees every event on the receive
// loop; FuzzItemStateNode holds it to their reading.
func (p Paths) itemStateNode(pth string) (job string, item int, name string, ok bool) {
	rest, found := strings.CutPrefix(pth, p.ns)
	if !found || !strings.HasPrefix(rest, "/") {
		return "", 0, "", false
	}
	job, rest, found = strings.Cut(rest[1:], "/")
	if !found || job == "" {
		return "", 0, "", false
	}
	if rest, found = strings.CutPrefix(rest, "sharding/"); !found {
		return "", 0, "", false
	}
	num, name, found := strings.Cut(rest, "/")
	if !found || (name != NodeRunning && name != NodeCompleted) {
		return "", 0, "", false
	}
	if item, ok = itemNumber(num); !ok {
		return "", 0, "", false
	}
	return job, item, name, true
}

// onItemStateEvent handles an event of an item's running or completed node and reports whether ev was
// one. It runs on go-zookeeper's receive loop (and on the session goroutine for an event queued before it
// was set), so it must not block.
func (r *Registry) onItemStateEvent(ev zk.Event) bool {
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged:
	default:
		return false
	}
	job, item, name, ok := r.p.itemStateNode(ev.Path)
	if !ok {
		return false
	}
	r.oneShot(ev.Path)
	if name == NodeCompleted {
		r.noteCompleted(job, item, ev.Type)
	}
	return true
}
