package failover

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
)

// History is what recording a lost execution reads from the history store (history.Store satisfies it).
type History interface {
	GetExecution(ctx context.Context, id string) (ejserver.Execution, error)
}

// Recorder writes a record and waits for its commit (history.Writer satisfies it).
type Recorder interface {
	EnqueueCommitted(ctx context.Context, e ejserver.Execution) error
}

// LostConfig configures a Lost.
type LostConfig struct {
	History  History
	Recorder Recorder
	Me       cluster.Identity
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Lost records the executions that a vanished instance left running and that nobody will run again (the
// job's failover is off, or a peer clears the running node of an instance that is gone): their end is
// recorded with an unknown outcome, so that the history never shows them RUNNING for ever, nor misses them.
// An execution whose end is in the history already (committed before its end reached ZooKeeper) is left as
// it is. docs/reliability.md states the guarantee.
type Lost struct {
	cfg LostConfig
}

// NewLost returns a Lost.
func NewLost(cfg LostConfig) *Lost {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Lost{cfg: cfg}
}

// lostWait bounds recording one lost execution.
const lostWait = 10 * time.Second

// Record records the execution that run names as ended with an unknown outcome, unless the history has its
// end already. An error means it could not tell or could not write: the caller keeps the running node, so
// that it is tried again.
func (l *Lost) Record(job string, item, total int, run cluster.Running) error {
	ctx, cancel := context.WithTimeout(context.Background(), lostWait)
	defer cancel()
	prev, err := l.cfg.History.GetExecution(ctx, run.ExecutionID)
	switch {
	case err == nil && prev.Done():
		return nil // its end made it to the history before the instance was lost
	case err != nil && ejserver.ErrorCodeOf(err) != ejserver.ENOTFOUND:
		return fmt.Errorf("look up execution %s: %w", run.ExecutionID, err)
	case err != nil:
		prev = ejserver.Execution{} // not even its start was recorded
	}
	rec := LostExecution(prev, job, item, total, run, l.cfg.Me.InstanceID, l.cfg.Clock.Now())
	if err := l.cfg.Recorder.EnqueueCommitted(ctx, rec); err != nil {
		return fmt.Errorf("record lost execution %s: %w", run.ExecutionID, err)
	}
	l.cfg.Logger.Warn("execution of a vanished instance recorded as ended with an unknown outcome", "job", job, "item", item,
		"execution_id", run.ExecutionID, "instance", run.InstanceID)
	return nil
}

// LostExecution is the end record of an execution lost with its instance: prev is its start record, if the
// history has one (zero otherwise), run its running node, by the instance that records it, at now.
func LostExecution(prev ejserver.Execution, job string, item, total int, run cluster.Running, by string, now time.Time) ejserver.Execution {
	e := prev
	e.ID, e.JobName, e.ShardingItem, e.InstanceID = run.ExecutionID, job, item, run.InstanceID
	if e.TaskID == "" {
		e.TaskID = run.TaskID
	}
	if e.Source == "" {
		e.Source = run.Source
	}
	if e.ScheduledAt.IsZero() {
		e.ScheduledAt = run.ScheduledAt
	}
	if e.StartedAt.IsZero() {
		e.StartedAt = run.ScheduledAt
	}
	if e.ShardingTotalCount == 0 {
		e.ShardingTotalCount = total
	}
	if now.Before(e.StartedAt) {
		now = e.StartedAt
	}
	e.CompletedAt, e.Success = now, false
	e.DurationMs = now.Sub(e.StartedAt).Milliseconds()
	e.FailureCause = fmt.Sprintf("outcome unknown: instance %s was lost while the item ran (recorded by %s)", run.InstanceID, by)
	return e
}
