package main

import (
	"context"
	"fmt"

	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/cluster"
)

// externalEntry is the audit entry of a change made in ZooKeeper outside the API.
func externalEntry(ch cluster.ExternalChange) audit.Entry {
	e := audit.Entry{Actor: "zookeeper", ActorKind: audit.ActorZooKeeper, Job: ch.Job, Outcome: audit.OutcomeOK}
	if ch.Server != "" {
		e.Action, e.Server = audit.ZKServerState, ch.Server
		e.Changes = []audit.Change{{Field: "servers/" + ch.Server, Before: ch.PrevState, After: ch.State}}
		e.Detail = fmt.Sprintf("servers/%s set to %q outside the API", ch.Server, ch.State)
		return e
	}
	e.Action = audit.ZKJobConfig
	e.Changes = audit.Diff(audit.JobFields(ch.Before), audit.JobFields(ch.After))
	n := ch.Changes()
	e.Detail = fmt.Sprintf("config version %d → %d outside the API", ch.FromVersion, ch.ToVersion)
	if n > 1 {
		e.Detail += fmt.Sprintf(": %d changes", n)
		if ch.Unseen > 0 {
			e.Detail += fmt.Sprintf(", %d not seen", ch.Unseen)
		}
		if ch.ThroughAPI > 0 {
			e.Detail += fmt.Sprintf(", %d made through the API (recorded on their own)", ch.ThroughAPI)
		}
		if ch.OtherPeer > 0 {
			e.Detail += fmt.Sprintf(", %d recorded by another peer", ch.OtherPeer)
		}
		e.Detail += "; the difference is of them all"
	}
	e.Count = n - ch.ThroughAPI - ch.OtherPeer
	return e
}

// recordExternal records each change made outside the API that this peer claimed.
func recordExternal(rec *audit.Recorder) func(cluster.ExternalChange) {
	return func(ch cluster.ExternalChange) { _ = rec.Record(context.Background(), externalEntry(ch)) }
}
