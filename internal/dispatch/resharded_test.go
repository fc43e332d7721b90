package dispatch

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// TestExecutorSkipsItemsTheirPreviousOwnerRanThisFire: a fire handed items by a resharding seen near its
// time (without waiting for it) reads their completed nodes and leaves out the items whose previous owner
// already ran this very fire; a resharding seen long before the fire costs no read.
func TestExecutorSkipsItemsTheirPreviousOwnerRanThisFire(t *testing.T) {
	at := time.Unix(100, 0)
	for _, tc := range []struct {
		name      string
		changedAt time.Time
		want      map[int]bool
	}{
		{"resharded just before the fire", at.Add(-time.Second), map[int]bool{0: true, 2: true}},
		{"resharded just after the fire was due", at.Add(300 * time.Millisecond), map[int]bool{0: true, 2: true}},
		{"resharded long before", at.Add(-time.Minute), map[int]bool{0: true, 1: true, 2: true}},
		{"never resharded here", time.Time{}, map[int]bool{0: true, 1: true, 2: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, send := newFakeRegistry(3), newFakeSender()
			reg.snap.OwnersChangedAt = tc.changedAt
			reg.completed[1] = cluster.Completed{InstanceID: "old", ExecutionID: "x", Source: ejserver.SourceNormal, ScheduledAt: at}
			reg.completed[2] = cluster.Completed{InstanceID: "old", ExecutionID: "y", Source: ejserver.SourceNormal, ScheduledAt: at.Add(-time.Second)}
			e := newTestExecutor(reg, send)
			defer e.Drain(time.Second)
			e.Fire("j", at, 0)
			got := map[int]bool{}
			for range tc.want {
				got[send.next(t).ShardingItem] = true
			}
			send.none(t)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("posted items %v, want %v", got, tc.want)
			}
		})
	}
}
