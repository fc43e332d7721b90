package main

import (
	"fmt"
	"strings"
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
	e := externalEntry(cluster.ExternalChange{Job: "settle", Server: "10.0.0.2", PrevState: "", State: "DISABLED", FromVersion: 0, ToVersion: 1})
	if e.Action != audit.ZKServerState || e.Server != "10.0.0.2" || e.Changes[0].After != "DISABLED" || e.Count != 1 ||
		e.Detail != `servers/10.0.0.2 set to "DISABLED" outside the API` {
		t.Fatalf("%+v", e)
	}
	// quick edits that left the state as it was: no change of state shown, the versions counted
	e = externalEntry(cluster.ExternalChange{Job: "settle", Server: "10.0.0.2", PrevState: "ENABLED", State: "ENABLED",
		FromVersion: 1, ToVersion: 4, Unseen: 1, ThroughAPI: 1})
	if e.Count != 2 || len(e.Changes) != 0 ||
		e.Detail != `servers/10.0.0.2 set to "ENABLED" outside the API: 3 changes, 1 not seen, 1 made through the API (recorded on their own); the difference is of them all` {
		t.Fatalf("%+v", e)
	}
	secret := ejserver.JobConfig{JobName: "settle", Cron: "@daily", Webhook: ejserver.Webhook{URL: "http://r/", Secret: "whsec_c2VjcmV0MQ=="}}
	for _, tt := range []struct {
		ch     cluster.ExternalChange
		action audit.Action
		detail string
		note   string
	}{
		{cluster.ExternalChange{Job: "settle", Created: true, After: secret}, audit.ZKJobCreate, "job created outside the API", audit.NoteSet},
		{cluster.ExternalChange{Job: "settle", Deleted: true, Before: secret}, audit.ZKJobDelete, "job deleted outside the API", audit.NoteRemoved},
	} {
		e := externalEntry(tt.ch)
		fields := map[string]audit.Change{}
		for _, c := range e.Changes {
			fields[c.Field] = c
		}
		if e.Action != tt.action || e.Detail != tt.detail || e.Count != 1 || fields["webhook.secret"] != (audit.Change{Field: "webhook.secret", Note: tt.note}) ||
			fields["cron"].Before+fields["cron"].After != "@daily" || strings.Contains(fmt.Sprint(e), "whsec_") {
			t.Fatalf("%s: %+v", tt.action, e)
		}
	}
}
