package history

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/notify"
)

// Store is the execution history. SQLite and PostgreSQL implement it; Open returns one of them.
type Store interface {
	// WriteExecutions upserts executions by id in one transaction, under the rule of replaces: an end record
	// replaces a running record (CompletedAt zero) or an end record that completed no later; a running record
	// replaces a running record whose HeartbeatAt is no later, never an end record.
	WriteExecutions(ctx context.Context, recs []ejserver.Execution) error
	// WriteTraces inserts status traces in one transaction; a trace whose id exists is left as it is.
	WriteTraces(ctx context.Context, recs []ejserver.StatusTrace) error

	// ListExecutions returns one page of executions matching f, newest start first.
	ListExecutions(ctx context.Context, f ExecutionFilter) (ExecutionPage, error)
	// GetExecution returns execution id, or an ENOTFOUND *ejserver.Error.
	GetExecution(ctx context.Context, id string) (ejserver.Execution, error)
	// ListTraces returns the status traces of a job and/or a task, newest first.
	ListTraces(ctx context.Context, f TraceFilter) ([]ejserver.StatusTrace, error)
	// CountsSince counts each job's executions that started at or after since. Every job asked for is in
	// the map, with zero counts when it has none.
	CountsSince(ctx context.Context, jobs []string, since time.Time) (map[string]Counts, error)
	// LastExecutions returns the execution that started last of each job that has one (it may still be
	// running: see Execution.Done).
	LastExecutions(ctx context.Context, jobs []string) (map[string]ejserver.Execution, error)

	// WriteNotification upserts one notification's delivery to one channel (keyed by notification id and
	// channel).
	WriteNotification(ctx context.Context, r notify.Record) error
	// ListNotifications returns one page of notification records, newest finish first.
	ListNotifications(ctx context.Context, f NotificationFilter) (NotificationPage, error)

	// WriteAudit inserts audit entries (append-only: an id that exists is left as it is).
	WriteAudit(ctx context.Context, entries []audit.Entry) error
	// ListAudit returns one page of audit entries, newest first.
	ListAudit(ctx context.Context, f AuditFilter) (AuditPage, error)

	// WriteWorkflowRun upserts a workflow run by id (the engine writes a run when it starts, ends or is
	// retried).
	WriteWorkflowRun(ctx context.Context, r WorkflowRun) error
	// ListWorkflowRuns returns a workflow's runs (their JSON), newest first, at most limit (0: DefaultLimit).
	ListWorkflowRuns(ctx context.Context, workflow string, limit int) ([]json.RawMessage, error)

	// Prune deletes up to batch executions that started before before, up to batch status traces created
	// before it, up to batch notification records finished before it, up to batch audit entries recorded
	// before it and up to batch workflow runs made before it, and returns how many rows it deleted.
	Prune(ctx context.Context, before time.Time, batch int) (int64, error)
	// Stats are the console's aggregates (stats.go).
	Stats

	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	Close() error
}

// Query limits.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Bounds of what an accepted item's receiver reports, in characters (docs/long-running.md): the store keeps
// the start of a longer message or output.
const (
	maxMessageLen = lease.MaxMessageLen
	maxOutputLen  = lease.MaxOutputLen
)

// ExecutionFilter selects executions. Zero fields don't filter; the others must all match.
type ExecutionFilter struct {
	JobName      string
	ShardingItem *int
	// Success selects ended executions that succeeded (true) or failed (false); running ones match neither.
	Success    *bool
	Source     ejserver.Source
	InstanceID string
	// State selects accepted (async) items in that state (RUNNING, RETRYING, SUCCEEDED, FAILED, EXPIRED or
	// CANCELLED); synchronous items have none.
	State string
	// Running selects the executions that have not ended (CompletedAt zero), async or not.
	Running bool
	// From and To bound start_time: From <= start_time < To.
	From, To time.Time
	// ScheduledAt selects the items of one fire: those scheduled at that time.
	ScheduledAt time.Time
	// Cursor is a previous page's NextCursor.
	Cursor string
	// Limit is the page size: 0 means DefaultLimit; at most MaxLimit.
	Limit int
	// Jobs, when not nil, keeps only the executions of these jobs (an API token's scope): the filter is in
	// the query, so pages stay full and cursors stay right.
	Jobs *JobSet
}

// JobSet is a set of jobs: those whose name starts with one of Prefixes, and those named in Names. An
// empty JobSet holds no job.
type JobSet struct {
	Prefixes []string
	Names    []string
}

// ExecutionPage is one page of executions.
type ExecutionPage struct {
	Items []ejserver.Execution
	// NextCursor fetches the next (older) page; it is empty on the last page.
	NextCursor string
}

// TraceFilter selects status traces: by job, by task, or both (at least one is required).
type TraceFilter struct {
	JobName string
	TaskID  string
	// Limit is the number of traces: 0 means DefaultLimit; at most MaxLimit.
	Limit int
}

// Counts are a job's executions in a time window.
type Counts struct {
	Success int64 `json:"success"`
	Failure int64 `json:"failure"`
	Running int64 `json:"running"`
}

// Option configures Open.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	maxConns int
	clock    clock.Clock
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMaxConns bounds the connections a store opens: the PostgreSQL pool, or the SQLite readers (SQLite
// always has exactly one writer connection besides). Default: PostgreSQL 8, SQLite 4.
func WithMaxConns(n int) Option { return func(o *options) { o.maxConns = n } }

// WithClock sets the clock the store's writes read to tell which minutes are over, whose rows they then count
// into the stats' rollup (default: the system's). Tests give their own.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// Open opens the history store named by dsnOrPath, creating or migrating its schema: PostgreSQL for a
// postgres:// or postgresql:// URL, otherwise an SQLite file at that path (created with its directory).
func Open(ctx context.Context, dsnOrPath string, opts ...Option) (Store, error) {
	o := options{logger: slog.Default(), clock: clock.Real{}}
	for _, opt := range opts {
		opt(&o)
	}
	if strings.HasPrefix(dsnOrPath, "postgres://") || strings.HasPrefix(dsnOrPath, "postgresql://") {
		return openPostgres(ctx, dsnOrPath, o)
	}
	return openSQLite(ctx, dsnOrPath, o)
}

// cursor is a position in the (start_time DESC, id DESC) order: the last row of a page.
type cursor struct {
	start int64 // microseconds since the Unix epoch
	id    string
}

const cursorVersion = "1"

func (c cursor) encode() string {
	raw := cursorVersion + ":" + strconv.FormatInt(c.start, 10) + ":" + c.id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(s string) (cursor, error) {
	bad := ejserver.Invalid("cursor", "not a cursor this server issued")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, bad
	}
	parts := strings.SplitN(string(raw), ":", 3)
	if len(parts) != 3 || parts[0] != cursorVersion || parts[2] == "" {
		return cursor{}, bad
	}
	start, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return cursor{}, bad
	}
	return cursor{start: start, id: parts[2]}, nil
}

// checked is an ExecutionFilter after validation.
type checked struct {
	ExecutionFilter
	after *cursor
	limit int
}

func (f ExecutionFilter) check() (checked, error) {
	c := checked{ExecutionFilter: f}
	var err error
	if c.limit, err = checkLimit(f.Limit); err != nil {
		return c, err
	}
	if f.Source != "" && !f.Source.Valid() {
		return c, ejserver.Invalid("source", "must be one of NORMAL_TRIGGER, MISFIRE, FAILOVER, MANUAL, BACKFILL, not %q", f.Source)
	}
	if f.State != "" && !lease.State(f.State).Valid() {
		names := make([]string, len(lease.States))
		for i, s := range lease.States {
			names[i] = string(s)
		}
		return c, ejserver.Invalid("state", "must be one of %s, not %q", strings.Join(names, ", "), f.State)
	}
	if f.ShardingItem != nil && *f.ShardingItem < 0 {
		return c, ejserver.Invalid("shardingItem", "must not be negative, not %d", *f.ShardingItem)
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.To.After(f.From) {
		return c, ejserver.Invalid("to", "must be after from")
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

func (f TraceFilter) check() (int, error) {
	if f.JobName == "" && f.TaskID == "" {
		return 0, ejserver.Invalid("jobName", "give a job name, a task id or both")
	}
	return checkLimit(f.Limit)
}

func checkLimit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultLimit, nil
	case n < 0 || n > MaxLimit:
		return 0, ejserver.Invalid("limit", "must be between 1 and %d, not %d", MaxLimit, n)
	}
	return n, nil
}

func checkBatch(n int) error {
	if n <= 0 {
		return ejserver.Invalid("batch", "must be positive, not %d", n)
	}
	return nil
}

// micros converts t to microseconds since the Unix epoch (the stored precision).
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros is the inverse of micros, in UTC.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// normalize gives t the stored precision and location, so that values read back compare equal.
func normalize(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Truncate(time.Microsecond).UTC()
}

// mergeExecutions orders recs by id and keeps one record per id: the one the upsert rule (replaces) would
// leave after writing them in order. A multi-row upsert may not touch a row twice, and a fixed order avoids
// lock-order deadlocks between peers.
func mergeExecutions(recs []ejserver.Execution) []ejserver.Execution {
	byID := make(map[string]int, len(recs))
	out := make([]ejserver.Execution, 0, len(recs))
	for _, r := range recs {
		r = sanitizeExecution(r)
		i, ok := byID[r.ID]
		if !ok {
			byID[r.ID] = len(out)
			out = append(out, r)
			continue
		}
		if replaces(r, out[i]) {
			out[i] = r
		}
	}
	sortByID(out)
	return out
}

// replaces reports whether record n replaces the stored record old (the upsert's WHERE clause,
// executionWins). An item's records progress in one order whichever peer writes them and whenever they
// arrive: running records (CompletedAt zero) by HeartbeatAt, zero first, and end records after every running
// record, by CompletedAt. A record replaces one that is not after it in that order, so of two equal ones the
// later write wins:
//
//   - an end record replaces a running record, and an end record that completed no later;
//   - a running record never replaces an end record;
//   - a running record replaces a running record whose HeartbeatAt is no later (a heartbeat that arrives
//     after a newer one, at this peer or another, is dropped). A synchronous item's running records have
//     no HeartbeatAt: the later write wins, as before accepted items existed.
//
// Whoever writes a running record that must supersede an earlier one of an accepted item gives it a
// HeartbeatAt no earlier than that one's.
func replaces(n, old ejserver.Execution) bool {
	switch {
	case !old.Done():
		return n.Done() || !n.HeartbeatAt.Before(old.HeartbeatAt)
	case !n.Done():
		return false
	}
	return !n.CompletedAt.Before(old.CompletedAt)
}

func sortByID(recs []ejserver.Execution) {
	slices.SortFunc(recs, func(a, b ejserver.Execution) int { return strings.Compare(a.ID, b.ID) })
}

// sanitizeExecution normalizes times and makes strings storable: PostgreSQL's text rejects NUL bytes and
// invalid UTF-8, which a receiver's response body (or its callbacks' message and output) may well contain.
// It bounds Message and Output.
func sanitizeExecution(e ejserver.Execution) ejserver.Execution {
	e.ScheduledAt = normalize(e.ScheduledAt)
	e.StartedAt = normalize(e.StartedAt)
	e.CompletedAt = normalize(e.CompletedAt)
	e.HeartbeatAt = normalize(e.HeartbeatAt)
	e.LeaseExpiresAt = normalize(e.LeaseExpiresAt)
	e.State = clean(e.State)
	e.Message = truncate(clean(e.Message), maxMessageLen)
	e.Output = truncate(clean(e.Output), maxOutputLen)
	e.JobName = clean(e.JobName)
	e.TaskID = clean(e.TaskID)
	e.InstanceID = clean(e.InstanceID)
	e.IP = clean(e.IP)
	e.Hostname = clean(e.Hostname)
	e.FailureCause = clean(e.FailureCause)
	e.ResponseExcerpt = clean(e.ResponseExcerpt)
	return e
}

func sanitizeTrace(t ejserver.StatusTrace) ejserver.StatusTrace {
	t.CreationTime = normalize(t.CreationTime)
	t.JobName = clean(t.JobName)
	t.OriginalTaskID = clean(t.OriginalTaskID)
	t.TaskID = clean(t.TaskID)
	t.InstanceID = clean(t.InstanceID)
	t.ExecutionType = clean(t.ExecutionType)
	t.ShardingItems = clean(t.ShardingItems)
	t.Message = clean(t.Message)
	return t
}

func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// truncate returns the first n characters of s.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s // n bytes hold at most n characters
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func notFound(id string) error {
	return ejserver.Errorf(ejserver.ENOTFOUND, "execution %q not found", id)
}

// storeError wraps a driver error: transient ones (the store is unreachable, busy or overloaded) become
// EUNAVAILABLE, so the API answers 503 and the Writer keeps the batch to retry; others stay internal.
func storeError(op string, err error, transient bool) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		transient = true
	}
	if transient {
		return ejserver.Unavailable(err, "history store: %s", op)
	}
	return fmt.Errorf("history store: %s: %w", op, err)
}
