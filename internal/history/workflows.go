package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/ejserver/ejserver"
)

// WorkflowRun is a workflow run as the history keeps it: a few columns to select by, and the run's JSON.
type WorkflowRun struct {
	ID       string
	Workflow string
	State    string
	Trigger  string
	Attempt  int
	Created  time.Time
	Ended    time.Time // zero: not ended
	Run      json.RawMessage
}

func upsertWorkflowRun(d dialect, r WorkflowRun) *query {
	q := &query{d: d}
	var ended any
	if !r.Ended.IsZero() {
		ended = d.timeArg(r.Ended)
	}
	q.write("INSERT INTO WORKFLOW_RUNS (id, workflow, state, trigger, attempt, created_at, ended_at, run) VALUES (",
		q.arg(r.ID), ", ", q.arg(r.Workflow), ", ", q.arg(r.State), ", ", q.arg(r.Trigger), ", ", q.arg(r.Attempt), ", ",
		q.arg(d.timeArg(r.Created)), ", ", q.arg(ended), ", ", q.arg(string(r.Run)), ")",
		" ON CONFLICT (id) DO UPDATE SET state = excluded.state, attempt = excluded.attempt,",
		" ended_at = excluded.ended_at, run = excluded.run")
	return q
}

func listWorkflowRuns(d dialect, workflow string, limit int) *query {
	q := &query{d: d}
	q.write("SELECT run FROM WORKFLOW_RUNS")
	q.where("workflow = " + q.arg(workflow))
	q.write(" ORDER BY created_at DESC, id DESC LIMIT ", q.arg(limit))
	return q
}

func checkRunLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultLimit, nil
	}
	if limit < 1 || limit > MaxLimit {
		return 0, ejserver.Invalid("limit", "must be between 1 and %d", MaxLimit)
	}
	return limit, nil
}

func (s *sqliteStore) WriteWorkflowRun(ctx context.Context, r WorkflowRun) error {
	q := upsertWorkflowRun(sqliteDialect, r)
	return s.inTx(ctx, "write workflow run", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, q.String(), q.args...)
		return err
	})
}

func (s *sqliteStore) ListWorkflowRuns(ctx context.Context, workflow string, limit int) ([]json.RawMessage, error) {
	limit, err := checkRunLimit(limit)
	if err != nil {
		return nil, err
	}
	return sqliteCollect(ctx, s, "list workflow runs", listWorkflowRuns(sqliteDialect, workflow, limit),
		func(rows *sql.Rows) (json.RawMessage, error) {
			var run string
			err := rows.Scan(&run)
			return json.RawMessage(run), err
		})
}

func (s *postgresStore) WriteWorkflowRun(ctx context.Context, r WorkflowRun) error {
	q := upsertWorkflowRun(postgresDialect, r)
	if _, err := s.pool.Exec(ctx, q.String(), q.args...); err != nil {
		return pgError("write workflow run", err)
	}
	return nil
}

func (s *postgresStore) ListWorkflowRuns(ctx context.Context, workflow string, limit int) ([]json.RawMessage, error) {
	limit, err := checkRunLimit(limit)
	if err != nil {
		return nil, err
	}
	q := listWorkflowRuns(postgresDialect, workflow, limit)
	rows, err := s.pool.Query(ctx, q.String(), q.args...)
	if err != nil {
		return nil, pgError("list workflow runs", err)
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var run string
		if err := rows.Scan(&run); err != nil {
			return nil, pgError("list workflow runs", err)
		}
		out = append(out, json.RawMessage(run))
	}
	if err := rows.Err(); err != nil {
		return nil, pgError("list workflow runs", err)
	}
	return out, nil
}

// WriteWorkflowRun implements Store.
func (d *Deferred) WriteWorkflowRun(ctx context.Context, r WorkflowRun) error {
	s, err := d.get()
	if err != nil {
		return err
	}
	return s.WriteWorkflowRun(ctx, r)
}

// ListWorkflowRuns implements Store.
func (d *Deferred) ListWorkflowRuns(ctx context.Context, workflow string, limit int) ([]json.RawMessage, error) {
	s, err := d.get()
	if err != nil {
		return nil, err
	}
	return s.ListWorkflowRuns(ctx, workflow, limit)
}
