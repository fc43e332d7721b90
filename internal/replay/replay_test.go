package replay

import (
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

func TestCheckAndNew(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	failed := ejserver.Execution{ID: "orig", JobName: "j", ShardingItem: 2, ShardingTotalCount: 4, ScheduledAt: at,
		StartedAt: at, CompletedAt: at.Add(time.Second), Source: ejserver.SourceNormal}
	tests := []struct {
		name string
		mod  func(*ejserver.Execution)
		ok   bool
	}{
		{"failed", func(*ejserver.Execution) {}, true},
		{"running", func(e *ejserver.Execution) { e.CompletedAt = time.Time{} }, false},
		{"succeeded", func(e *ejserver.Execution) { e.Success = true }, false},
	}
	for _, tt := range tests {
		e := failed
		tt.mod(&e)
		err := Check(e)
		if (err == nil) != tt.ok || (err != nil && ejserver.ErrorCodeOf(err) != ejserver.ECONFLICT) {
			t.Errorf("%s: Check = %v", tt.name, err)
		}
	}
	me := cluster.Identity{InstanceID: "10.0.0.7@-@1", ServerIP: "10.0.0.7", Hostname: "h"}
	r := New(failed, "new", me, at.Add(time.Hour))
	if r.ID != "new" || r.ReplayOf != "orig" || r.Source != ejserver.SourceManual || !r.ScheduledAt.Equal(at) ||
		r.ShardingItem != 2 || r.InstanceID != me.InstanceID || r.Done() {
		t.Fatalf("replay record %+v", r)
	}
}
