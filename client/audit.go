package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// AuditFilter selects audit entries; zero fields don't filter.
type AuditFilter struct {
	// From and To bound the time an entry was recorded: From <= time < To.
	From, To time.Time
	// Actor is a token or certificate name, "zookeeper" or "jobs-file"; Action one such as job.replace.
	Actor, Action, Job string
	Cursor             string
	Limit              int
}

// AuditChange is one field's difference in a config change; a secret has no Before and After, only Note
// ("changed", "set", "removed").
type AuditChange struct {
	Field  string `json:"field"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	Note   string `json:"note,omitempty"`
}

// AuditEntry is one entry of the audit trail: who did what, when, from where, with what outcome.
type AuditEntry struct {
	ID        string        `json:"id"`
	Time      time.Time     `json:"time"`
	Actor     string        `json:"actor"`
	ActorKind string        `json:"actorKind"`
	Role      string        `json:"role,omitempty"`
	Scope     string        `json:"scope,omitempty"`
	Source    string        `json:"source,omitempty"`
	UserAgent string        `json:"userAgent,omitempty"`
	RequestID string        `json:"requestId,omitempty"`
	Action    string        `json:"action"`
	Job       string        `json:"job,omitempty"`
	Item      *int          `json:"item,omitempty"`
	Server    string        `json:"server,omitempty"`
	Channel   string        `json:"channel,omitempty"`
	Outcome   string        `json:"outcome"`
	Status    int           `json:"status,omitempty"`
	Changes   []AuditChange `json:"changes,omitempty"`
	Detail    string        `json:"detail,omitempty"`
	Count     int           `json:"count"`
	// Instance is the peer that recorded the entry (with SQLite history, the peer whose store holds it).
	Instance string `json:"instance,omitempty"`
}

// AuditList is a page of the audit trail, newest first.
type AuditList struct {
	Items      []AuditEntry `json:"items"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// Audit returns one page of the audit trail, newest first (a scoped token sees only its jobs' entries).
func (c *Client) Audit(ctx context.Context, f AuditFilter) (*AuditList, error) {
	q := url.Values{}
	if !f.From.IsZero() {
		q.Set("from", f.From.UTC().Format(time.RFC3339Nano))
	}
	if !f.To.IsZero() {
		q.Set("to", f.To.UTC().Format(time.RFC3339Nano))
	}
	set(q, "actor", f.Actor)
	set(q, "action", f.Action)
	set(q, "job", f.Job)
	set(q, "cursor", f.Cursor)
	setInt(q, "limit", f.Limit)
	var out AuditList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/audit", query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
