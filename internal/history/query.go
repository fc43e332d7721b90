package history

import (
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
)

// The columns of JOB_EXECUTION_LOG in the order the stores read and write them: version 1's, then the
// accepted items' (0002_long_running), then the trace id (0006_trace_id), then the replayed execution (0007_replay_of).
const executionColumns = `id, job_name, task_id, hostname, ip, sharding_item, execution_source, ` +
	`failure_cause, is_success, start_time, complete_time, status_code, attempts, duration_ms, ` +
	`response_excerpt, instance_id, scheduled_at, sharding_total_count, permanent, ` +
	`is_async, state, progress, message, heartbeat_at, lease_expires_at, output, trace_id, replay_of`

// executionColumnCount is the number of executionColumns: the parameters of a row.
const executionColumnCount = 28

// executionSelect is what queries read (NULL text reads as "").
const executionSelect = `id, job_name, task_id, hostname, ip, sharding_item, execution_source, ` +
	`COALESCE(failure_cause, '') AS failure_cause, is_success, start_time, complete_time, status_code, attempts, duration_ms, ` +
	`COALESCE(response_excerpt, '') AS response_excerpt, instance_id, scheduled_at, sharding_total_count, permanent, ` +
	`is_async, COALESCE(state, '') AS state, progress, COALESCE(message, '') AS message, heartbeat_at, ` +
	`lease_expires_at, COALESCE(output, '') AS output, COALESCE(trace_id, '') AS trace_id, COALESCE(replay_of, '') AS replay_of`

// executionUpdate is the upsert's SET list: an accepted record replaces every column but the id.
const executionUpdate = `job_name = excluded.job_name, task_id = excluded.task_id, hostname = excluded.hostname, ` +
	`ip = excluded.ip, sharding_item = excluded.sharding_item, execution_source = excluded.execution_source, ` +
	`failure_cause = excluded.failure_cause, is_success = excluded.is_success, start_time = excluded.start_time, ` +
	`complete_time = excluded.complete_time, status_code = excluded.status_code, attempts = excluded.attempts, ` +
	`duration_ms = excluded.duration_ms, response_excerpt = excluded.response_excerpt, ` +
	`instance_id = excluded.instance_id, scheduled_at = excluded.scheduled_at, ` +
	`sharding_total_count = excluded.sharding_total_count, permanent = excluded.permanent, ` +
	`is_async = excluded.is_async, state = excluded.state, progress = excluded.progress, ` +
	`message = excluded.message, heartbeat_at = excluded.heartbeat_at, ` +
	`lease_expires_at = excluded.lease_expires_at, output = excluded.output, ` +
	`trace_id = COALESCE(excluded.trace_id, t.trace_id), ` + // a record written without one keeps the stored one
	`replay_of = COALESCE(excluded.replay_of, t.replay_of)`

// executionWins is the upsert's condition, with the stored row named t: see replaces. A NULL heartbeat_at
// (none) comes before every time; each comparison is guarded so that no branch relies on NULL being false.
const executionWins = `(t.complete_time IS NULL AND (excluded.complete_time IS NOT NULL OR t.heartbeat_at IS NULL OR ` +
	`(excluded.heartbeat_at IS NOT NULL AND excluded.heartbeat_at >= t.heartbeat_at))) OR ` +
	`(t.complete_time IS NOT NULL AND excluded.complete_time IS NOT NULL AND ` +
	`excluded.complete_time >= t.complete_time)`

const traceColumns = `id, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, ` +
	`state, message, creation_time`

const traceSelect = `id, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, ` +
	`state, COALESCE(message, '') AS message, creation_time`

// dialect is what differs between the stores' SQL.
type dialect struct {
	placeholder func(n int) string
	timeArg     func(t time.Time) any // a time as the driver binds it
	// epochMicros reads a time column as integer microseconds since the epoch (NULL stays NULL).
	epochMicros func(col string) string
	// isTrue is the condition "the boolean column is true".
	isTrue func(col string) string
	// rollupTimeFirst: the job level of the stats' rollup is keyed by its period first (SQLite's migration
	// 0014), so a job's cells are read a period at a time (statsAggregator.rollupFrom).
	rollupTimeFirst bool
	// byteOrder is written after a column compared with the rollup's frontier's job: names compare byte by
	// byte, as Go's strings do (PostgreSQL's COLLATE "C"; SQLite's TEXT compares so).
	byteOrder string
	// traceByTask is written after the status traces' table when a task is asked for: SQLite's planner would
	// otherwise walk the job's whole (job_name, creation_time) index, which gives the order, rather than seek the
	// task's few traces and sort them (its 0018 keys the task index by the task id's unique part: traceTaskKey).
	traceByTask string
	// traceTaskKey is the task index's key of a task id (SQLite's 0018: its unique part, time-ordered), taken
	// of the column and of the asked id and compared before the id itself; nil: the index is the id's.
	traceTaskKey func(taskID string) string
}

var (
	postgresDialect = dialect{
		placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		timeArg:     func(t time.Time) any { return normalize(t) },
		epochMicros: func(col string) string { return "CAST(EXTRACT(EPOCH FROM " + col + ") * 1000000 AS BIGINT)" },
		isTrue:      func(col string) string { return col },
		byteOrder:   ` COLLATE "C"`,
	}
	sqliteDialect = dialect{
		placeholder: func(int) string { return "?" },
		timeArg:     func(t time.Time) any { return micros(normalize(t)) },
		epochMicros: func(col string) string { return col },
		isTrue:      func(col string) string { return "(" + col + " <> 0)" },

		rollupTimeFirst: true,
		traceByTask:     " INDEXED BY job_status_trace_log_task",
		traceTaskKey:    func(id string) string { return "substr(" + id + ", -36)" },
	}
)

// query builds an SQL statement and its arguments.
type query struct {
	d    dialect
	sb   strings.Builder
	args []any
	and  bool
}

func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return q.d.placeholder(len(q.args))
}

func (q *query) write(s ...string) {
	for _, x := range s {
		q.sb.WriteString(x)
	}
}

// where adds one condition, joined with AND.
func (q *query) where(cond string) {
	if q.and {
		q.sb.WriteString(" AND ")
	} else {
		q.sb.WriteString(" WHERE ")
		q.and = true
	}
	q.sb.WriteString(cond)
}

func (q *query) String() string { return q.sb.String() }

// jobSet is the condition "job_name is in set". A prefix is compared with substr, not LIKE: SQLite's LIKE
// ignores ASCII case and both databases' LIKE would read '_' in a prefix as a wildcard. Prefixes are ASCII
// (job names are), so their length in bytes is their length in characters; it is written into the SQL as
// a number, never taken from the input's text.
func (q *query) jobSet(set JobSet) string {
	var alts []string
	for _, p := range set.Prefixes {
		alts = append(alts, "substr(job_name, 1, "+strconv.Itoa(len(p))+") = "+q.arg(p))
	}
	if len(set.Names) > 0 {
		ph := make([]string, len(set.Names))
		for i, n := range set.Names {
			ph[i] = q.arg(n)
		}
		alts = append(alts, "job_name IN ("+strings.Join(ph, ", ")+")")
	}
	if len(alts) == 0 {
		return "1 = 0"
	}
	return "(" + strings.Join(alts, " OR ") + ")"
}

// listExecutions builds the page query: one row more than the page, to tell whether another page follows.
func listExecutions(d dialect, f checked) *query {
	q := &query{d: d}
	q.write("SELECT ", executionSelect, " FROM JOB_EXECUTION_LOG")
	if f.JobName != "" {
		q.where("job_name = " + q.arg(f.JobName))
	}
	if f.Jobs != nil {
		q.where(q.jobSet(*f.Jobs))
	}
	if f.ShardingItem != nil {
		q.where("sharding_item = " + q.arg(*f.ShardingItem))
	}
	if f.Success != nil {
		q.where("complete_time IS NOT NULL AND is_success = " + q.arg(*f.Success))
	}
	if f.Source != "" {
		q.where("execution_source = " + q.arg(string(f.Source)))
	}
	if f.InstanceID != "" {
		q.where("instance_id = " + q.arg(f.InstanceID))
	}
	if f.State != "" {
		q.where("state = " + q.arg(f.State))
	}
	if f.Running {
		q.where("complete_time IS NULL")
	}
	if !f.ScheduledAt.IsZero() {
		q.where("scheduled_at = " + q.arg(d.timeArg(f.ScheduledAt)))
	}
	if !f.From.IsZero() {
		q.where("start_time >= " + q.arg(d.timeArg(f.From)))
	}
	if !f.To.IsZero() {
		q.where("start_time < " + q.arg(d.timeArg(f.To)))
	}
	q.keyset("start_time", f.after, f.limit)
	return q
}

// keyset ends a newest-first page query on (column, id): the rows after the cursor, if any, and one row more
// than the page, to tell whether another page follows. A row value comparison, which both databases answer
// from the (…, column, id) indexes.
func (q *query) keyset(column string, after *cursor, limit int) {
	if after != nil {
		at := q.arg(q.d.timeArg(fromMicros(after.start)))
		q.where("(" + column + ", id) < (" + at + ", " + q.arg(after.id) + ")")
	}
	q.write(" ORDER BY ", column, " DESC, id DESC LIMIT ", q.arg(limit+1))
}

// cutPage cuts keyset's extra row off and makes the cursor of the next page from the last row's key.
func cutPage[T any](items []T, limit int, key func(T) cursor) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, key(items[limit-1]).encode()
}

// page cuts the extra row off and makes the cursor.
func page(items []ejserver.Execution, limit int) ExecutionPage {
	p := ExecutionPage{}
	p.Items, p.NextCursor = cutPage(items, limit, func(e ejserver.Execution) cursor {
		return cursor{start: micros(e.StartedAt), id: e.ID}
	})
	return p
}

func listTraces(d dialect, f TraceFilter, limit int) *query {
	q := &query{d: d}
	q.write("SELECT ", traceSelect, " FROM JOB_STATUS_TRACE_LOG")
	if f.TaskID != "" {
		q.write(d.traceByTask)
	}
	if f.JobName != "" {
		q.where("job_name = " + q.arg(f.JobName))
	}
	if f.TaskID != "" {
		if d.traceTaskKey != nil {
			q.where(d.traceTaskKey("task_id") + " = " + d.traceTaskKey(q.arg(f.TaskID)))
		}
		q.where("task_id = " + q.arg(f.TaskID))
	}
	q.write(" ORDER BY creation_time DESC, id DESC LIMIT ", q.arg(limit))
	return q
}
