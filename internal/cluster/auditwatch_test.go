package cluster

import (
	"testing"

	"github.com/ejserver/ejserver"
)

func TestInteresting(t *testing.T) {
	t.Parallel()
	cfg := &ejserver.JobConfig{JobName: "j"}
	tests := []struct {
		name string
		ev   Event
		want bool
	}{
		{"config edited", Event{Kind: JobUpdated, Config: cfg, PrevConfig: cfg, PrevVersion: 3, Version: 4}, true},
		{"config read again", Event{Kind: JobUpdated, Config: cfg, PrevConfig: cfg, PrevVersion: 4, Version: 4}, false},
		{"job loaded at start-up", Event{Kind: JobAdded, Config: cfg, Czxid: 9}, false},
		{"job created", Event{Kind: JobAdded, Config: cfg, Czxid: 9, Created: true}, true},
		{"job created through the API", Event{Kind: JobAdded, Config: cfg, Czxid: 9, Created: true, ThroughAPI: true}, false},
		{"job removed", Event{Kind: JobRemoved, PrevConfig: cfg, Czxid: 9}, true},
		{"job never loaded removed", Event{Kind: JobRemoved}, false},
		{"server disabled", Event{Kind: ServersChanged, PrevState: ServerEnabled, State: ServerDisabled, PrevVersion: 0, Version: 1}, true},
		{"server registering", Event{Kind: ServersChanged, State: ServerEnabled, PrevVersion: -1, Version: 0}, false},
		{"server gone", Event{Kind: ServersChanged, PrevState: ServerEnabled, PrevVersion: -1, Version: -1}, false},
		{"server edited back and forth", Event{Kind: ServersChanged, PrevState: ServerEnabled, State: ServerEnabled, PrevVersion: 1, Version: 3}, true},
		{"server read first time", Event{Kind: ServersChanged, PrevState: ServerEnabled, State: ServerEnabled, PrevVersion: -1, Version: 3}, false},
		{"instances", Event{Kind: InstancesChanged}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := interesting(tt.ev); got != tt.want {
				t.Fatalf("interesting = %v, want %v", got, tt.want)
			}
		})
	}
}
