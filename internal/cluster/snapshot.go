package cluster

import (
	"slices"
	"time"

	"github.com/ejserver/ejserver"
)

// JobSnapshot is an immutable view of one job's registry state, as this peer's watches last saw it. Readers
// must not modify it (maps and slices are shared between snapshots).
type JobSnapshot struct {
	Name string
	// Config is shared by every snapshot of one config version (and the registry's events): never nil,
	// never to be written.
	Config        *ejserver.JobConfig
	ConfigVersion int32
	// ConfigChanged is when the config node was last written (ZooKeeper's clock): the job's creation, an
	// edit, a disable or enable, a pause or resume.
	ConfigChanged time.Time
	// ConfigErr is set when the config node can't be parsed; such a job never fires.
	ConfigErr error
	// Instances maps each online instance id to its server IP.
	Instances map[string]string
	// Servers maps each server IP to its node's content (ENABLED, DISABLED or empty).
	Servers map[string]string
	// Leader is the instance id in leader/election/instance, or "".
	Leader string
	// Necessary: leader/sharding/necessary exists; nobody fires until the leader reshards.
	Necessary bool
	// OwnersChangedAt is when this peer last saw an item's owner change (a resharding, by its clock); zero
	// if it has not since it loaded the job.
	OwnersChangedAt time.Time
	// FailoverItems are the items in leader/failover/items, waiting to be taken over.
	FailoverItems []int
	// Items holds sharding/{i} for i in [0, len); Exists is false for a missing item.
	Items []ItemState

	// Me is this peer's instance id and MyIP its server IP.
	Me   string
	MyIP string
	// Registered: this peer's instance node exists. An operator who deletes it stops this peer running the job.
	Registered bool
	// Registering: it does not exist yet and this peer is to write it (the job was just loaded, or the
	// session renewed); false when an operator removed it.
	Registering bool
	// Settled is false while a watch event of this job is being read.
	Settled bool
	// ItemsSettled is false while a node that decides which items a fire runs is being read (the config,
	// sharding/, each item's nodes, leader/sharding/necessary, leader/failover/items; settled.go).
	ItemsSettled bool
	Generation   uint64
	// entry is the registry's entry the snapshot was made from (Ref)
	entry *jobEntry
}

// ItemState is one sharding/{i}.
type ItemState struct {
	Exists bool
	// Owner is sharding/{i}/instance; OwnerVersion its data version (-1 when absent).
	Owner        string
	OwnerVersion int32
	Disabled     bool
	// FailoverTo is sharding/{i}/failover: the instance that took the item over.
	FailoverTo string
}

// IsLeader reports whether this peer's instance holds the job's leadership.
func (s *JobSnapshot) IsLeader() bool { return s.Leader != "" && s.Leader == s.Me }

// ServerDisabled reports whether servers/{ip} is DISABLED.
func (s *JobSnapshot) ServerDisabled(ip string) bool { return s.Servers[ip] == ServerDisabled }

// Online reports whether instance id is registered.
func (s *JobSnapshot) Online(id string) bool {
	_, ok := s.Instances[id]
	return ok
}

// Available lists the instances that can own items: online and on an enabled server.
func (s *JobSnapshot) Available() []string {
	var out []string
	for id, ip := range s.Instances {
		if !s.ServerDisabled(ip) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// MyItems are the items this peer runs at a normal fire: those it owns, minus disabled items and items
// another instance took over (ElasticJob's rule; items still running are the caller's business).
func (s *JobSnapshot) MyItems() []int {
	var out []int
	for i := range min(len(s.Items), s.Config.ShardingTotalCount) {
		if s.IsMyItem(i) {
			out = append(out, i)
		}
	}
	return out
}

// IsMyItem reports whether item i is among MyItems, without listing them.
func (s *JobSnapshot) IsMyItem(i int) bool {
	if i < 0 || i >= len(s.Items) || i >= s.Config.ShardingTotalCount {
		return false
	}
	it := s.Items[i]
	return it.Exists && it.Owner == s.Me && !it.Disabled && it.FailoverTo == ""
}

// Sharded reports whether every item below shardingTotalCount has an owner.
func (s *JobSnapshot) Sharded() bool {
	if len(s.Items) < s.Config.ShardingTotalCount {
		return false
	}
	for i := range s.Config.ShardingTotalCount {
		if !s.Items[i].Exists || s.Items[i].Owner == "" {
			return false
		}
	}
	return true
}

// Item returns item i's state, or the zero state when it does not exist.
func (s *JobSnapshot) Item(i int) ItemState {
	if i < 0 || i >= len(s.Items) {
		return ItemState{OwnerVersion: -1}
	}
	return s.Items[i]
}
