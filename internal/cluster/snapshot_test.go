package cluster

import (
	"slices"
	"testing"

	"github.com/ejserver/ejserver"
)

func TestIsMyItemAgreesWithMyItems(t *testing.T) {
	s := &JobSnapshot{Me: "me", Config: &ejserver.JobConfig{}, Items: []ItemState{
		{Exists: true, Owner: "me"},
		{Exists: true, Owner: "other"},
		{Exists: true, Owner: "me", Disabled: true},
		{Exists: true, Owner: "me", FailoverTo: "other"},
		{Exists: false, Owner: "me"},
		{Exists: true, Owner: "me"},
		{Exists: true, Owner: "me"}, // beyond shardingTotalCount: left over from a larger total
	}}
	s.Config.ShardingTotalCount = 6
	if got := s.MyItems(); !slices.Equal(got, []int{0, 5}) {
		t.Fatalf("MyItems %v", got)
	}
	for i := -1; i <= len(s.Items); i++ {
		if want := slices.Contains(s.MyItems(), i); s.IsMyItem(i) != want {
			t.Fatalf("IsMyItem(%d) = %v, want %v", i, !want, want)
		}
	}
}
