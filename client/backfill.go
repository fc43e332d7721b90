package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// BackfillRequest asks for a job's past fires from From to To (RFC 3339, both included).
type BackfillRequest struct {
	From          string `json:"from"`
	To            string `json:"to"`
	OverlapPolicy string `json:"overlapPolicy,omitempty"` // BUFFER_ONE (default), SKIP or ALLOW
}

// Backfill is one backfill and its progress.
type Backfill struct {
	ID            string    `json:"id"`
	Job           string    `json:"job"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	OverlapPolicy string    `json:"overlapPolicy"`
	State         string    `json:"state"` // RUNNING, DONE, CANCELLED or FAILED
	Total         int       `json:"total"`
	Done          int       `json:"done"`
	Cursor        time.Time `json:"cursor,omitzero"`
	Current       time.Time `json:"current,omitzero"`
	Items         int       `json:"items"`
	Failed        int       `json:"failed"`
	Skipped       int       `json:"skipped"`
	Owner         string    `json:"owner,omitempty"`
	Claims        int       `json:"claims"`
	CreatedBy     string    `json:"createdBy,omitempty"`
	CancelledBy   string    `json:"cancelledBy,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	EndedAt       time.Time `json:"endedAt,omitzero"`
	Reason        string    `json:"reason,omitempty"`
}

// StartBackfill starts a backfill of the job's past fires.
func (c *Client) StartBackfill(ctx context.Context, job string, req BackfillRequest) (*Backfill, error) {
	var out Backfill
	if _, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(job, "backfill"), body: req, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Backfills lists the job's backfills, newest first.
func (c *Client) Backfills(ctx context.Context, job string) ([]Backfill, error) {
	var out struct {
		Items []Backfill `json:"items"`
	}
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(job, "backfill"), out: &out}); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// GetBackfill returns one backfill's progress.
func (c *Client) GetBackfill(ctx context.Context, job, id string) (*Backfill, error) {
	var out Backfill
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(job, "backfill", url.PathEscape(id)), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelBackfill cancels a running backfill.
func (c *Client) CancelBackfill(ctx context.Context, job, id string) (*Backfill, error) {
	var out Backfill
	if _, err := c.do(ctx, request{method: http.MethodPost, path: jobPath(job, "backfill", url.PathEscape(id), "cancel"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReplayExecution re-runs one failed execution; the answer is the new execution (its ReplayOf is id).
func (c *Client) ReplayExecution(ctx context.Context, id string) (*Execution, error) {
	var out Execution
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/executions/" + url.PathEscape(id) + "/replay", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
