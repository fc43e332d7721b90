package history

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/notify"
)

// NotificationFilter selects notification records; zero fields don't filter.
type NotificationFilter struct {
	Channel string
	JobName string
	Outcome string
	// Jobs, if set, keeps only the rows of these jobs (a scoped token's view; rows of no job are left out).
	Jobs *JobSet
	// Cursor is a previous page's NextCursor.
	Cursor string
	// Limit is the page size: 0 means DefaultLimit; at most MaxLimit.
	Limit int
}

// NotificationPage is one page of notification records, newest first.
type NotificationPage struct {
	Items      []notify.Record
	NextCursor string
}

type checkedNotifications struct {
	NotificationFilter
	after *cursor
	limit int
}

func (f NotificationFilter) check() (checkedNotifications, error) {
	c := checkedNotifications{NotificationFilter: f}
	var err error
	if c.limit, err = checkLimit(f.Limit); err != nil {
		return c, err
	}
	switch f.Outcome {
	case "", notify.OutcomeSent, notify.OutcomeFailed, notify.OutcomeDropped, notify.OutcomeUnknown:
	default:
		return c, ejserver.Invalid("outcome", "must be one of sent, failed, dropped, unknown, not %q", f.Outcome)
	}
	if f.Cursor != "" {
		cur, err := decodeCursor(f.Cursor)
		if err != nil {
			return c, err
		}
		c.after = &cur
	}
	return c, nil
}

const notificationColumns = `id, notification_id, channel, channel_kind, kind, severity, job_name, rule, dedup_key, ` +
	`is_resolve, title, outcome, attempts, status_code, error, instance_id, created_at, finished_at`

// notificationID is a record's key: one row per notification per channel.
func notificationID(r notify.Record) string { return r.NotificationID + "/" + r.Channel }

func notificationArgs(d dialect, r notify.Record) []any {
	return []any{notificationID(r), r.NotificationID, r.Channel, r.ChannelKind, string(r.Kind), string(r.Severity),
		r.Job, r.Rule, r.DedupKey, r.Resolve, clean(truncate(r.Title, 1000)), r.Outcome, r.Attempts, r.Status,
		clean(truncate(r.Error, 2000)), r.Instance, d.timeArg(r.CreatedAt), d.timeArg(r.FinishedAt)}
}

func insertNotification(d dialect) string {
	q := &query{d: d}
	ph := make([]string, 18)
	for i := range ph {
		ph[i] = q.arg(nil)
	}
	return "INSERT INTO NOTIFICATION_LOG (" + notificationColumns + ") VALUES (" + joinComma(ph) +
		") ON CONFLICT (id) DO UPDATE SET outcome = excluded.outcome, attempts = excluded.attempts, " +
		"status_code = excluded.status_code, error = excluded.error, instance_id = excluded.instance_id, " +
		"finished_at = excluded.finished_at"
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

func listNotifications(d dialect, f checkedNotifications) *query {
	q := &query{d: d}
	q.write("SELECT ", notificationColumns, " FROM NOTIFICATION_LOG")
	if f.Channel != "" {
		q.where("channel = " + q.arg(f.Channel))
	}
	if f.JobName != "" {
		q.where("job_name = " + q.arg(f.JobName))
	}
	if f.Outcome != "" {
		q.where("outcome = " + q.arg(f.Outcome))
	}
	if f.Jobs != nil {
		q.where(q.jobSet(*f.Jobs))
	}
	q.keyset("finished_at", f.after, f.limit)
	return q
}

func notificationPage(items []notify.Record, limit int) NotificationPage {
	p := NotificationPage{}
	p.Items, p.NextCursor = cutPage(items, limit, func(r notify.Record) cursor {
		return cursor{start: micros(r.FinishedAt), id: notificationID(r)}
	})
	return p
}

func (s *sqliteStore) WriteNotification(ctx context.Context, r notify.Record) error {
	return s.inTx(ctx, "write notification", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, insertNotification(sqliteDialect), notificationArgs(sqliteDialect, r)...)
		return err
	})
}

func (s *sqliteStore) ListNotifications(ctx context.Context, f NotificationFilter) (NotificationPage, error) {
	c, err := f.check()
	if err != nil {
		return NotificationPage{}, err
	}
	out, err := sqliteCollect(ctx, s, "list notifications", listNotifications(sqliteDialect, c),
		func(rows *sql.Rows) (notify.Record, error) {
			var (
				r                 notify.Record
				id, job           string
				created, finished int64
			)
			if err := rows.Scan(&id, &r.NotificationID, &r.Channel, &r.ChannelKind, &r.Kind, &r.Severity, &job, &r.Rule,
				&r.DedupKey, &r.Resolve, &r.Title, &r.Outcome, &r.Attempts, &r.Status, &r.Error, &r.Instance,
				&created, &finished); err != nil {
				return r, err
			}
			r.Job, r.CreatedAt, r.FinishedAt = job, fromMicros(created), fromMicros(finished)
			return r, nil
		})
	if err != nil {
		return NotificationPage{}, err
	}
	return notificationPage(out, c.limit), nil
}

func (s *postgresStore) WriteNotification(ctx context.Context, r notify.Record) error {
	_, err := s.pool.Exec(ctx, insertNotification(postgresDialect), notificationArgs(postgresDialect, r)...)
	return pgError("write notification", err)
}

func (s *postgresStore) ListNotifications(ctx context.Context, f NotificationFilter) (NotificationPage, error) {
	c, err := f.check()
	if err != nil {
		return NotificationPage{}, err
	}
	q := listNotifications(postgresDialect, c)
	rows, err := s.pool.Query(ctx, q.String(), q.args...)
	if err != nil {
		return NotificationPage{}, pgError("list notifications", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (notify.Record, error) {
		var (
			r  notify.Record
			id string
		)
		err := row.Scan(&id, &r.NotificationID, &r.Channel, &r.ChannelKind, &r.Kind, &r.Severity, &r.Job, &r.Rule,
			&r.DedupKey, &r.Resolve, &r.Title, &r.Outcome, &r.Attempts, &r.Status, &r.Error, &r.Instance,
			&r.CreatedAt, &r.FinishedAt)
		r.CreatedAt, r.FinishedAt = r.CreatedAt.UTC(), r.FinishedAt.UTC()
		return r, err
	})
	if err != nil {
		return NotificationPage{}, pgError("list notifications", err)
	}
	return notificationPage(out, c.limit), nil
}

// WriteNotification implements Store.
func (d *Deferred) WriteNotification(ctx context.Context, r notify.Record) error {
	s, err := d.get()
	if err != nil {
		return err
	}
	return s.WriteNotification(ctx, r)
}

// ListNotifications implements Store.
func (d *Deferred) ListNotifications(ctx context.Context, f NotificationFilter) (NotificationPage, error) {
	s, err := d.get()
	if err != nil {
		return NotificationPage{}, err
	}
	return s.ListNotifications(ctx, f)
}
