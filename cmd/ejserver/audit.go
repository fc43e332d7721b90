package main

import (
	"context"
	"fmt"

	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/cluster"
)

// externalEntry is the audit entry of a change made in ZooKeeper outside the API.
func externalEntry(ch cluster.ExternalChange) audit.Entry {
	e := audit.Entry{Actor: "zookeeper", ActorKind: audit.ActorZooKeeper, Job: ch.Job, Outcome: audit.OutcomeOK, Count: 1}
	switch {
	case ch.Created:
		e.Action, e.Detail = audit.ZKJobCreate, "job created outside the API"
		e.Changes = audit.Diff(nil, audit.JobFields(ch.After))
		return e
	case ch.Deleted:
		e.Action, e.Detail = audit.ZKJobDelete, "job deleted outside the API"
		e.Changes = audit.Diff(audit.JobFields(ch.Before), nil)
		return e
	case ch.Server != "":
		e.Action, e.Server = audit.ZKServerState, ch.Server
		if ch.PrevState != ch.State {
			e.Changes = []audit.Change{{Field: "servers/" + ch.Server, Before: ch.PrevState, After: ch.State}}
		}
		e.Detail = fmt.Sprintf("servers/%s set to %q outside the API", ch.Server, ch.State)
	default:
		e.Action = audit.ZKJobConfig
		e.Changes = audit.Diff(audit.JobFields(ch.Before), audit.JobFields(ch.After))
		e.Detail = fmt.Sprintf("config version %d → %d outside the API", ch.FromVersion, ch.ToVersion)
	}
	n := ch.Changes()
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
	e.Count = max(1, n-ch.ThroughAPI-ch.OtherPeer)
	return e
}

// recordExternal records each change made outside the API that this peer claimed.
func recordExternal(rec *audit.Recorder) func(cluster.ExternalChange) {
	return func(ch cluster.ExternalChange) { _ = rec.Record(context.Background(), externalEntry(ch)) }
}
