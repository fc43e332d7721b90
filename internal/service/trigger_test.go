package service

import (
	"context"
	"slices"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

func snapshotOf(instances []string, owners ...string) *cluster.JobSnapshot {
	s := &cluster.JobSnapshot{Instances: map[string]string{}, Config: &ejserver.JobConfig{JobName: "j", ShardingTotalCount: len(owners)}}
	for _, id := range instances {
		s.Instances[id] = "127.0.0.1"
	}
	for _, o := range owners {
		s.Items = append(s.Items, cluster.ItemState{Exists: o != "", Owner: o})
	}
	return s
}

func TestOwnersListed(t *testing.T) {
	live := func(ids ...string) func(string) bool { return func(id string) bool { return slices.Contains(ids, id) } }
	tests := []struct {
		name string
		snap *cluster.JobSnapshot
		live func(string) bool
		want bool
	}{
		{"no instance", snapshotOf(nil, "a", "b"), live("a", "b"), false},
		{"every owner listed", snapshotOf([]string{"a", "b"}, "a", "b"), live("a", "b"), true},
		{"a live owner not listed yet", snapshotOf([]string{"b"}, "a", "b"), live("a", "b"), false},
		{"an owner that is gone", snapshotOf([]string{"b"}, "a", "b"), live("b"), true},
		{"not sharded yet", snapshotOf([]string{"b"}, "", ""), live("a", "b"), true},
		{"a listed peer owning nothing", snapshotOf([]string{"a", "b", "c"}, "a", "b"), live("a", "b", "c"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownersListed(tt.snap, tt.live); got != tt.want {
				t.Fatalf("ownersListed = %v, want %v", got, tt.want)
			}
		})
	}
}

// triggerRegistry is a job sharded at its creation over two live peers whose snapshot lists one peer's
// instance node before the other's (the creating peer's own registration still on its way).
type triggerRegistry struct {
	Registry
	snaps   []*cluster.JobSnapshot // the snapshots Wait sees, one after the other
	written []string               // the instances CreateTriggers wrote to
}

func (r *triggerRegistry) GetJob(string) (ejserver.JobConfig, int32, error) {
	return ejserver.JobConfig{JobName: "j", ShardingTotalCount: 2}, 0, nil
}

func (r *triggerRegistry) PeerLive(id string) bool { return id == "a" || id == "b" }

func (r *triggerRegistry) Wait(ctx context.Context, _ string, cond func(*cluster.JobSnapshot) bool) (*cluster.JobSnapshot, error) {
	for _, s := range r.snaps {
		if cond(s) {
			return s, nil
		}
	}
	return r.snaps[len(r.snaps)-1], context.DeadlineExceeded
}

func (r *triggerRegistry) CreateTriggers(_ string, instances []string, _ cluster.TriggerRequest) error {
	r.written = instances
	return nil
}

func (r *triggerRegistry) ItemDetails(string, int) ([]cluster.ItemDetail, error) { return nil, nil }

// A trigger right after a job's creation reaches every peer its first sharding names, not only the peers
// whose instance nodes were listed first (the async completion test once saw half its items never run).
func TestATriggerWaitsForTheFirstShardingsOwners(t *testing.T) {
	reg := &triggerRegistry{snaps: []*cluster.JobSnapshot{
		snapshotOf([]string{"b"}, "a", "b"),
		snapshotOf([]string{"a", "b"}, "a", "b"),
	}}
	s := New(Config{Registry: reg})
	res, err := s.TriggerJob(context.Background(), "j", TriggerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reg.written, []string{"a", "b"}) {
		t.Fatalf("triggers written for %v, want both owners", reg.written)
	}
	if !slices.Equal(res.Items, []int{0, 1}) {
		t.Fatalf("items reported %v, want [0 1]", res.Items)
	}
}
