package main

import (
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/cluster"
)

func TestExternalEntry(t *testing.T) {
	before := ejserver.JobConfig{JobName: "settle", Cron: "@hourly"}
	after := ejserver.JobConfig{JobName: "settle", Cron: "@daily"}
	tests := []struct {
		name   string
		ch     cluster.ExternalChange
		detail string
		count  int
	}{
		{"one edit", cluster.ExternalChange{Job: "settle", Before: before, After: after, FromVersion: 3, ToVersion: 4},
			"config version 3 → 4 outside the API", 1},
		{"one missed", cluster.ExternalChange{Job: "settle", Before: before, After: after, FromVersion: 3, ToVersion: 5, Unseen: 1},
			"config version 3 → 5 outside the API: 2 changes, 1 not seen; the difference is of them all", 2},
		{"one through the API", cluster.ExternalChange{Job: "settle", Before: before, After: after, FromVersion: 3, ToVersion: 5, ThroughAPI: 1},
			"config version 3 → 5 outside the API: 2 changes, 1 made through the API (recorded on their own); the difference is of them all", 1},
		{"one by another peer", cluster.ExternalChange{Job: "settle", Before: before, After: after, FromVersion: 3, ToVersion: 6, Unseen: 1, OtherPeer: 1},
			"config version 3 → 6 outside the API: 3 changes, 1 not seen, 1 recorded by another peer; the difference is of them all", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := externalEntry(tt.ch)
			if e.Detail != tt.detail || e.Count != tt.count || e.Action != audit.ZKJobConfig || e.Actor != "zookeeper" ||
				len(e.Changes) != 1 || e.Changes[0] != (audit.Change{Field: "cron", Before: "@hourly", After: "@daily"}) {
				t.Fatalf("%+v", e)
			}
		})
	}
	e := externalEntry(cluster.ExternalChange{Job: "settle", Server: "10.0.0.2", PrevState: "", State: "DISABLED"})
	if e.Action != audit.ZKServerState || e.Server != "10.0.0.2" || e.Changes[0].After != "DISABLED" {
		t.Fatalf("%+v", e)
	}
}
