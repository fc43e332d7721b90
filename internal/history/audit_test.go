package history

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
)

func newEntry(i int, actor string, action audit.Action, job string) audit.Entry {
	at := t0.Add(time.Duration(i) * time.Second)
	e := audit.Entry{ID: fmt.Sprintf("e%02d", i), Time: at, Actor: actor, ActorKind: audit.ActorToken, Role: "admin",
		Source: "10.0.0.8", UserAgent: "curl/8", RequestID: "r" + fmt.Sprint(i), Action: action, Job: job,
		Outcome: audit.OutcomeOK, Status: 200, Count: 1, Instance: "10.0.0.7@-@1"}
	if action == audit.JobReplace {
		e.Changes = []audit.Change{{Field: "cron", Before: "@hourly", After: "@daily"}, {Field: "webhook.secret", Note: audit.NoteChanged}}
	}
	if action == audit.ItemDisable {
		e.Item = ptr(2)
	}
	return e
}

// TestAudit writes audit entries and reads them back filtered and paged, newest first, on both stores; an
// entry written twice stays as first written; Prune removes old ones.
func TestAudit(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		ctx := testCtx(t)
		var all []audit.Entry
		for i := range 7 {
			actor, action, job := "ops", audit.JobReplace, "settle"
			if i%2 == 1 {
				actor, action = "dev", audit.ItemDisable
			}
			if i == 6 {
				job, action = "report", audit.JobDisable
			}
			all = append(all, newEntry(i, actor, action, job))
		}
		zk := audit.Entry{ID: "e07", Time: t0.Add(7 * time.Second), Actor: "zookeeper", ActorKind: audit.ActorZooKeeper,
			Action: audit.ZKServerState, Server: "10.0.0.9", Outcome: audit.OutcomeOK, Count: 1, Detail: "2 changes, 1 not seen"}
		all = append(all, zk)
		if err := s.WriteAudit(ctx, all); err != nil {
			t.Fatal(err)
		}
		again := all[0]
		again.Actor = "mallory"
		if err := s.WriteAudit(ctx, []audit.Entry{again}); err != nil {
			t.Fatal(err)
		}
		p, err := s.ListAudit(ctx, AuditFilter{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 3 || p.Items[0].ID != "e07" || p.NextCursor == "" || !reflect.DeepEqual(p.Items[0], zk) {
			t.Fatalf("first page %+v", p)
		}
		if !reflect.DeepEqual(p.Items[2], all[5]) {
			t.Fatalf("read back\n got %+v\nwant %+v", p.Items[2], all[5])
		}
		p, err = s.ListAudit(ctx, AuditFilter{Actor: "ops", Limit: 2})
		if err != nil || len(p.Items) != 2 || p.Items[0].ID != "e06" || p.NextCursor == "" {
			t.Fatalf("ops %+v %v", p, err)
		}
		p, err = s.ListAudit(ctx, AuditFilter{Actor: "ops", Limit: 2, Cursor: p.NextCursor})
		if err != nil || len(p.Items) != 2 || !reflect.DeepEqual(p.Items[1], all[0]) || p.NextCursor != "" {
			t.Fatalf("ops, second page %+v %v", p, err)
		}
		p, err = s.ListAudit(ctx, AuditFilter{Action: audit.ItemDisable, JobName: "settle", From: t0.Add(2 * time.Second), To: t0.Add(5 * time.Second)})
		if err != nil || len(p.Items) != 1 || p.Items[0].ID != "e03" || *p.Items[0].Item != 2 {
			t.Fatalf("item.disable of settle in [2s,5s): %+v %v", p, err)
		}
		p, err = s.ListAudit(ctx, AuditFilter{Jobs: &JobSet{Prefixes: []string{"rep"}}})
		if err != nil || len(p.Items) != 1 || p.Items[0].ID != "e06" {
			t.Fatalf("scoped to rep*: %+v %v", p, err)
		}
		if p, err = s.ListAudit(ctx, AuditFilter{Jobs: &JobSet{}}); err != nil || len(p.Items) != 0 {
			t.Fatalf("an empty job set shows nothing (not even entries of no job): %+v %v", p, err)
		}
		for _, f := range []AuditFilter{{Action: "job.explode"}, {Cursor: "nope"}, {From: t0, To: t0}, {Limit: MaxLimit + 1}} {
			if _, err := s.ListAudit(ctx, f); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
				t.Fatalf("%+v: %v", f, err)
			}
		}
		if _, err := s.Prune(ctx, t0.Add(3*time.Second), 100); err != nil {
			t.Fatal(err)
		}
		if p, err = s.ListAudit(ctx, AuditFilter{}); err != nil || len(p.Items) != 5 {
			t.Fatalf("after pruning what was recorded before 3s: %+v %v", p, err)
		}
	})
}

// TestTraceID: an execution's trace id is stored and read back on both stores; a later record of the same
// execution without one (a callback's end) keeps it.
func TestTraceID(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		run := running(newExec("traced", 0, t0))
		run.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		mustWrite(t, s, run)
		if got := mustGet(t, s, run.ID); got.TraceID != run.TraceID {
			t.Fatalf("trace id %q", got.TraceID)
		}
		end := newExec("traced", 0, t0)
		end.ID = run.ID
		mustWrite(t, s, end)
		got := mustGet(t, s, run.ID)
		if got.TraceID != run.TraceID || got.CompletedAt.IsZero() {
			t.Fatalf("after the end record: %+v", got)
		}
	})
}
