package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
)

// AuditFilter selects audit entries; zero fields don't filter.
type AuditFilter struct {
	// From and To bound the entry's time: From <= at < To.
	From, To time.Time
	Actor    string
	Action   audit.Action
	JobName  string
	// Jobs, if set, keeps only the entries of these jobs (a scoped token's view; entries of no job are left
	// out).
	Jobs *JobSet
	// Cursor is a previous page's NextCursor.
	Cursor string
	// Limit is the page size: 0 means DefaultLimit; at most MaxLimit.
	Limit int
}

// AuditPage is one page of audit entries, newest first.
type AuditPage struct {
	Items      []audit.Entry
	NextCursor string
}

type checkedAudit struct {
	AuditFilter
	after *cursor
	limit int
}

func (f AuditFilter) check() (checkedAudit, error) {
	c := checkedAudit{AuditFilter: f}
	var err error
	if c.limit, err = checkLimit(f.Limit); err != nil {
		return c, err
	}
	if f.Action != "" && !f.Action.Valid() {
		return c, ejserver.Invalid("action", "must be one of the audit actions (README: Audit trail), not %q", f.Action)
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return c, ejserver.Invalid("from", "must be before to")
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

const auditColumns = `id, at, actor, actor_kind, role, scope, source, user_agent, request_id, action, job_name, ` +
	`item, server, channel, outcome, status_code, changes, detail, count, instance_id`

const auditColumnCount = 20

func auditArgs(d dialect, e audit.Entry) []any {
	changes := ""
	if len(e.Changes) > 0 {
		b, _ := json.Marshal(e.Changes)
		changes = string(b)
	}
	var item any
	if e.Item != nil {
		item = *e.Item
	}
	return []any{e.ID, d.timeArg(e.Time), clean(truncate(e.Actor, 200)), string(e.ActorKind), e.Role,
		clean(truncate(e.Scope, 500)), clean(truncate(e.Source, 200)), clean(truncate(e.UserAgent, 300)),
		clean(truncate(e.RequestID, 100)), string(e.Action), e.Job, item, e.Server, e.Channel, e.Outcome, e.Status,
		changes, clean(truncate(e.Detail, 2000)), e.Count, e.Instance}
}

func insertAudit(d dialect, n int) *query {
	q := &query{d: d}
	q.write("INSERT INTO AUDIT_LOG (", auditColumns, ") VALUES ")
	for i := range n {
		if i > 0 {
			q.write(", ")
		}
		ph := make([]string, auditColumnCount)
		for j := range ph {
			ph[j] = q.arg(nil)
		}
		q.write("(", joinComma(ph), ")")
	}
	q.write(" ON CONFLICT (id) DO NOTHING") // append-only: an entry written twice stays as it was
	return q
}

func listAudit(d dialect, f checkedAudit) *query {
	q := &query{d: d}
	q.write("SELECT ", auditColumns, " FROM AUDIT_LOG")
	if f.JobName != "" {
		q.where("job_name = " + q.arg(f.JobName))
	}
	if f.Actor != "" {
		q.where("actor = " + q.arg(f.Actor))
	}
	if f.Action != "" {
		q.where("action = " + q.arg(string(f.Action)))
	}
	if f.Jobs != nil {
		q.where(q.jobSet(*f.Jobs))
	}
	if !f.From.IsZero() {
		q.where("at >= " + q.arg(d.timeArg(f.From)))
	}
	if !f.To.IsZero() {
		q.where("at < " + q.arg(d.timeArg(f.To)))
	}
	q.keyset("at", f.after, f.limit)
	return q
}

func auditPage(items []audit.Entry, limit int) AuditPage {
	p := AuditPage{}
	p.Items, p.NextCursor = cutPage(items, limit, func(e audit.Entry) cursor { return cursor{start: micros(e.Time), id: e.ID} })
	return p
}

// auditRow is what a row scans into before it becomes an Entry.
type auditRow struct {
	e        audit.Entry
	kind     string
	action   string
	item     *int64
	changes  string
	atMicros int64
	atTime   time.Time
	postgres bool
}

func (r *auditRow) dest() []any {
	var at any = &r.atMicros
	if r.postgres {
		at = &r.atTime
	}
	return []any{&r.e.ID, at, &r.e.Actor, &r.kind, &r.e.Role, &r.e.Scope, &r.e.Source, &r.e.UserAgent,
		&r.e.RequestID, &r.action, &r.e.Job, &r.item, &r.e.Server, &r.e.Channel, &r.e.Outcome, &r.e.Status,
		&r.changes, &r.e.Detail, &r.e.Count, &r.e.Instance}
}

func (r *auditRow) entry() (audit.Entry, error) {
	e := r.e
	e.ActorKind, e.Action = audit.ActorKind(r.kind), audit.Action(r.action)
	if r.postgres {
		e.Time = r.atTime.UTC()
	} else {
		e.Time = fromMicros(r.atMicros)
	}
	if r.item != nil {
		i := int(*r.item)
		e.Item = &i
	}
	if r.changes != "" {
		if err := json.Unmarshal([]byte(r.changes), &e.Changes); err != nil {
			return e, err
		}
	}
	return e, nil
}

// auditBatch bounds the entries of one INSERT (20 parameters each).
const auditBatch = 100

func (s *sqliteStore) WriteAudit(ctx context.Context, es []audit.Entry) error {
	return s.inTx(ctx, "write audit", func(tx *sql.Tx) error {
		for len(es) > 0 {
			n := min(len(es), auditBatch)
			q := insertAudit(sqliteDialect, n)
			args := make([]any, 0, n*auditColumnCount)
			for _, e := range es[:n] {
				args = append(args, auditArgs(sqliteDialect, e)...)
			}
			if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
				return err
			}
			es = es[n:]
		}
		return nil
	})
}

func (s *sqliteStore) ListAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	c, err := f.check()
	if err != nil {
		return AuditPage{}, err
	}
	out, err := sqliteCollect(ctx, s, "list audit", listAudit(sqliteDialect, c), func(rows *sql.Rows) (audit.Entry, error) {
		var r auditRow
		if err := rows.Scan(r.dest()...); err != nil {
			return audit.Entry{}, err
		}
		return r.entry()
	})
	if err != nil {
		return AuditPage{}, err
	}
	return auditPage(out, c.limit), nil
}

func (s *postgresStore) WriteAudit(ctx context.Context, es []audit.Entry) error {
	for len(es) > 0 {
		n := min(len(es), auditBatch)
		q := insertAudit(postgresDialect, n)
		args := make([]any, 0, n*auditColumnCount)
		for _, e := range es[:n] {
			args = append(args, auditArgs(postgresDialect, e)...)
		}
		if _, err := s.pool.Exec(ctx, q.String(), args...); err != nil {
			return pgError("write audit", err)
		}
		es = es[n:]
	}
	return nil
}

func (s *postgresStore) ListAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	c, err := f.check()
	if err != nil {
		return AuditPage{}, err
	}
	q := listAudit(postgresDialect, c)
	rows, err := s.pool.Query(ctx, q.String(), q.args...)
	if err != nil {
		return AuditPage{}, pgError("list audit", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (audit.Entry, error) {
		r := auditRow{postgres: true}
		if err := row.Scan(r.dest()...); err != nil {
			return audit.Entry{}, err
		}
		return r.entry()
	})
	if err != nil {
		return AuditPage{}, pgError("list audit", err)
	}
	return auditPage(out, c.limit), nil
}

// WriteAudit implements Store.
func (d *Deferred) WriteAudit(ctx context.Context, es []audit.Entry) error {
	s, err := d.get()
	if err != nil {
		return err
	}
	return s.WriteAudit(ctx, es)
}

// ListAudit implements Store.
func (d *Deferred) ListAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	s, err := d.get()
	if err != nil {
		return AuditPage{}, err
	}
	return s.ListAudit(ctx, f)
}
