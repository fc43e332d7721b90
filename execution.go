package ejserver

import (
	"bufio"
	"crypto/rand"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Source says why an item ran: ElasticJob's execution sources plus MANUAL (an operator's trigger) and
// WORKFLOW (a node of a workflow run).
type Source string

// The execution sources.
const (
	SourceNormal   Source = "NORMAL_TRIGGER"
	SourceMisfire  Source = "MISFIRE"
	SourceFailover Source = "FAILOVER"
	SourceManual   Source = "MANUAL"
	SourceWorkflow Source = "WORKFLOW"
	// SourceBackfill: a past fire run again by a backfill (scheduledAt is the original time).
	SourceBackfill Source = "BACKFILL"
)

// Valid reports whether s is one of the sources.
func (s Source) Valid() bool {
	switch s {
	case SourceNormal, SourceMisfire, SourceFailover, SourceManual, SourceWorkflow, SourceBackfill:
		return true
	}
	return false
}

// OnRequest reports whether the source is a fire asked for now (MANUAL, WORKFLOW) rather than by the
// schedule: such a fire queues behind an item still running here, and has no next fire to finish before.
func (s Source) OnRequest() bool { return s == SourceManual || s == SourceWorkflow }

// NewExecutionID returns a new execution id: a UUIDv7, so ids sort by creation time. One id names one item of
// one fire; it is the webhook-id of every attempt and of a failover re-POST of that item.
func NewExecutionID() string { return uuid.Must(uuid.NewV7FromReader(idRandom)).String() }

// idRandom feeds ids the system's randomness read in blocks: reading 16 bytes per id was a getrandom call
// per id, several per item of a fire. The ids are public (webhook-id); secrets never come from here.
var idRandom io.Reader = &lockedReader{r: bufio.NewReaderSize(rand.Reader, 4096)}

type lockedReader struct {
	mu sync.Mutex
	r  *bufio.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return io.ReadFull(l.r, p)
}

// TaskID builds ElasticJob's task id for one fire on one instance:
// {jobName}@-@{items}@-@{READY|FAILOVER}@-@{instanceId}@-@{unique}. The unique is a UUIDv7, ordered by time
// (the SQLite history's task index is keyed by it: a new task's entry goes at the index's end).
func TaskID(jobName string, items []int, failover bool, instanceID string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = strconv.Itoa(it)
	}
	kind := "READY"
	if failover {
		kind = "FAILOVER"
	}
	return strings.Join([]string{jobName, strings.Join(parts, ","), kind, instanceID, uuid.Must(uuid.NewV7FromReader(idRandom)).String()}, "@-@")
}

// Execution is one item of one fire on one instance: ElasticJob's JOB_EXECUTION_LOG row plus what HTTP adds.
// It is recorded when the item starts (CompletedAt zero) and again when it ends.
type Execution struct {
	ID                 string    `json:"id"` // the executionId, also the webhook-id
	JobName            string    `json:"jobName"`
	TaskID             string    `json:"taskId"`
	ShardingItem       int       `json:"shardingItem"`
	ShardingTotalCount int       `json:"shardingTotalCount"`
	Source             Source    `json:"source"`
	InstanceID         string    `json:"instanceId"`
	IP                 string    `json:"ip"`
	Hostname           string    `json:"hostname"`
	ScheduledAt        time.Time `json:"scheduledAt"`
	StartedAt          time.Time `json:"startedAt"`
	// CompletedAt is zero while the item runs.
	CompletedAt  time.Time `json:"completedAt,omitzero"`
	Success      bool      `json:"success"`
	StatusCode   int       `json:"statusCode,omitempty"` // the last attempt's HTTP status, 0 if none arrived
	Attempts     int       `json:"attempts"`
	DurationMs   int64     `json:"durationMs"`
	FailureCause string    `json:"failureCause,omitempty"`
	// ResponseExcerpt is the start of the receiver's last response body.
	ResponseExcerpt string `json:"responseExcerpt,omitempty"`
	// Permanent marks a failure that retrying cannot cure (410 Gone, a refused target).
	Permanent bool `json:"permanent,omitempty"`

	// The fields below are set for an item whose receiver answered 202 Accepted (docs/long-running.md).

	// Async: the receiver accepted the item and reports its end through callbacks.
	Async bool `json:"async,omitempty"`
	// State is the accepted item's state: RUNNING, RETRYING, SUCCEEDED, FAILED, EXPIRED or CANCELLED.
	State string `json:"state,omitempty"`
	// Progress (0-100) and Message are the last heartbeat's (or the completion's message).
	Progress *int   `json:"progress,omitempty"`
	Message  string `json:"message,omitempty"`
	// HeartbeatAt is the last heartbeat's time; LeaseExpiresAt when the lease runs out without another.
	HeartbeatAt    time.Time `json:"heartbeatAt,omitzero"`
	LeaseExpiresAt time.Time `json:"leaseExpiresAt,omitzero"`
	// Output is the start of the output the receiver reported with its completion.
	Output string `json:"output,omitempty"`
	// TraceID is the W3C trace id the item's webhooks carried (32 hex digits): the caller's trace for a
	// traced trigger, else the item's own (README "Tracing").
	TraceID string `json:"traceId,omitempty" example:"4bf92f3577b34da6a3ce929d0e0e4736"`
	// ReplayOf is the execution this one re-runs (POST /api/v1/executions/{id}/replay), if it is a replay.
	ReplayOf string `json:"replayOf,omitempty" example:"0193a3c2-7d4e-7b3a-9c55-1f0e5a3c9d21"`
}

// Done reports whether the execution has ended.
func (e *Execution) Done() bool { return !e.CompletedAt.IsZero() }

// TaskState is a state of ElasticJob's JOB_STATUS_TRACE_LOG.
type TaskState string

// The task states ejserver records.
const (
	TaskStaging  TaskState = "TASK_STAGING"
	TaskRunning  TaskState = "TASK_RUNNING"
	TaskFinished TaskState = "TASK_FINISHED"
	TaskError    TaskState = "TASK_ERROR"
)

// StatusTrace is one row of ElasticJob's JOB_STATUS_TRACE_LOG: a state change of one task (one fire on one
// instance, covering the items it ran).
type StatusTrace struct {
	ID             string    `json:"id"`
	JobName        string    `json:"jobName"`
	OriginalTaskID string    `json:"originalTaskId"`
	TaskID         string    `json:"taskId"`
	InstanceID     string    `json:"instanceId"` // ElasticJob's slave_id
	ExecutionType  string    `json:"executionType"`
	ShardingItems  string    `json:"shardingItems"`
	Source         Source    `json:"source"`
	State          TaskState `json:"state"`
	Message        string    `json:"message,omitempty"`
	CreationTime   time.Time `json:"creationTime"`
}
