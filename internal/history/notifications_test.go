package history

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/notify"
)

func newRecord(i int, channel, job, outcome string) notify.Record {
	at := t0.Add(time.Duration(i) * time.Second)
	return notify.Record{NotificationID: fmt.Sprintf("n%02d", i), Channel: channel, ChannelKind: "slack",
		Kind: notify.KindFireFailed, Severity: notify.SeverityError, Job: job, Rule: "job/" + job + "/0",
		DedupKey: "ns/" + job + "/0", Title: "job failed", Outcome: outcome, Attempts: 2, Status: 500,
		Error: "HTTP 500: boom", Instance: "10.0.0.7@-@1", CreatedAt: at, FinishedAt: at.Add(time.Millisecond)}
}

// TestNotifications writes notification records and reads them back filtered and paged, newest first, on both
// stores; a second write of the same notification and channel updates the row; Prune removes old ones.
func TestNotifications(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		ctx := testCtx(t)
		var all []notify.Record
		for i := range 7 {
			ch, job, outcome := "ops", "settle", notify.OutcomeSent
			if i%2 == 1 {
				ch, outcome = "mail", notify.OutcomeFailed
			}
			if i == 6 {
				job = "report"
			}
			r := newRecord(i, ch, job, outcome)
			if err := s.WriteNotification(ctx, r); err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
		// a retried write of n00 to ops (same key) replaces the row
		all[0].Attempts, all[0].Outcome = 3, notify.OutcomeFailed
		if err := s.WriteNotification(ctx, all[0]); err != nil {
			t.Fatal(err)
		}

		p, err := s.ListNotifications(ctx, NotificationFilter{Channel: "ops", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 2 || p.Items[0].NotificationID != "n06" || p.Items[1].NotificationID != "n04" || p.NextCursor == "" {
			t.Fatalf("first page %+v", p)
		}
		if !reflect.DeepEqual(p.Items[0], all[6]) {
			t.Fatalf("read back\n got %+v\nwant %+v", p.Items[0], all[6])
		}
		p, err = s.ListNotifications(ctx, NotificationFilter{Channel: "ops", Limit: 2, Cursor: p.NextCursor})
		if err != nil || len(p.Items) != 2 || p.Items[0].NotificationID != "n02" || p.Items[1].Attempts != 3 || p.NextCursor != "" {
			t.Fatalf("second page %+v %v", p, err)
		}
		p, err = s.ListNotifications(ctx, NotificationFilter{JobName: "settle", Outcome: notify.OutcomeFailed})
		if err != nil || len(p.Items) != 4 {
			t.Fatalf("failed of settle: %+v %v", p, err)
		}
		// a scoped token's view: only its jobs' rows, by prefix or by name
		p, err = s.ListNotifications(ctx, NotificationFilter{Jobs: &JobSet{Prefixes: []string{"rep"}}})
		if err != nil || len(p.Items) != 1 || p.Items[0].NotificationID != "n06" {
			t.Fatalf("the jobs starting rep: %+v %v", p, err)
		}
		p, err = s.ListNotifications(ctx, NotificationFilter{Jobs: &JobSet{Names: []string{"settle"}}, Limit: 100})
		if err != nil || len(p.Items) != 6 {
			t.Fatalf("the job settle: %+v %v", p, err)
		}
		if p, err = s.ListNotifications(ctx, NotificationFilter{Jobs: &JobSet{}}); err != nil || len(p.Items) != 0 {
			t.Fatalf("an empty job set shows nothing: %+v %v", p, err)
		}
		if _, err := s.ListNotifications(ctx, NotificationFilter{Outcome: "great"}); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
			t.Fatalf("a bad outcome: %v", err)
		}
		if _, err := s.ListNotifications(ctx, NotificationFilter{Cursor: "nope"}); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
			t.Fatalf("a bad cursor: %v", err)
		}
		if _, err := s.Prune(ctx, t0.Add(3*time.Second), 100); err != nil {
			t.Fatal(err)
		}
		p, err = s.ListNotifications(ctx, NotificationFilter{})
		if err != nil || len(p.Items) != 4 {
			t.Fatalf("after pruning what finished before 3s: %+v %v", p, err)
		}
	})
}
