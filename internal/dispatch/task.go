package dispatch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
)

// task is one fire on this peer (ElasticJob's task): the items it covers, traced to JOB_STATUS_TRACE_LOG as
// TASK_STAGING and TASK_RUNNING when its first item starts and TASK_FINISHED or TASK_ERROR when its last
// item ends.
type task struct {
	id       string
	job      string
	source   ejserver.Source
	failover bool
	items    []int

	// begun holds the TASK_STAGING and TASK_RUNNING traces, built with the task (ahead of the scheduled time:
	// ids and messages are work the moment of a burst should not pay for), stamped when the first item starts.
	begun [2]ejserver.StatusTrace

	mu        sync.Mutex
	remaining int
	started   bool
	failed    []int
}

// StatusTracer is a Recorder that says whether it takes the status traces of a task beginning now
// (history.Writer does: not with --history-status-traces=false, nor while it is too far behind to).
type StatusTracer interface{ StatusTraces() bool }

// newTask returns a fire's task on this peer with its start traces built, or nil (no task, no trace) when the
// Recorder takes no status traces for it: a task's ids and messages would be built for nothing. Asked once per
// task, so a task is traced whole or not at all.
func (e *Executor) newTask(id, job string, source ejserver.Source, items []int) *task {
	if e.statusTracer != nil && !e.statusTracer.StatusTraces() {
		return nil
	}
	t := &task{id: id, job: job, source: source, failover: source == ejserver.SourceFailover,
		items: slices.Clone(items), remaining: len(items)}
	t.begun = [2]ejserver.StatusTrace{
		// concatenated, not fmt.Sprintf: at every fire of every job, fmt's frames grew the fire's new stack
		e.statusTrace(t, ejserver.TaskStaging, "Job '"+t.job+"' execute begin."),
		e.statusTrace(t, ejserver.TaskRunning, ""),
	}
	return t
}

func (t *task) itemList() string {
	parts := make([]string, len(t.items))
	for i, it := range t.items {
		parts[i] = strconv.Itoa(it)
	}
	return strings.Join(parts, ",")
}

func (t *task) executionType() string {
	if t.failover {
		return "FAILOVER"
	}
	return "READY"
}

// begin reports whether this is the task's first item to start.
func (t *task) begin() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	first := !t.started
	t.started = true
	return first
}

// end records an item's end (ran false: it did not run); it reports whether it was the last, whether any
// item ran, and the failed items.
func (t *task) end(item int, ran, success bool) (last, anyRan bool, failed []int) {
	if t == nil {
		return false, false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ran && !success {
		t.failed = append(t.failed, item)
	}
	t.remaining--
	return t.remaining == 0, t.started, slices.Clone(t.failed)
}

// statusTrace builds one state of the task, without its time.
func (e *Executor) statusTrace(t *task, state ejserver.TaskState, msg string) ejserver.StatusTrace {
	return ejserver.StatusTrace{
		ID: ejserver.NewExecutionID(), JobName: t.job, TaskID: t.id, InstanceID: e.me.InstanceID,
		ExecutionType: t.executionType(), ShardingItems: t.itemList(), Source: t.source, State: state, Message: msg,
	}
}

// trace records one state of the task, now.
func (e *Executor) trace(t *task, state ejserver.TaskState, msg string) {
	tr := e.statusTrace(t, state, msg)
	tr.CreationTime = e.clk.Now()
	e.cfg.Recorder.EnqueueTrace(tr)
}

// taskStarted traces staging and running when the task's first item starts, at now.
func (e *Executor) taskStarted(t *task, now time.Time) {
	if t.begin() {
		for _, tr := range t.begun {
			tr.CreationTime = now
			e.cfg.Recorder.EnqueueTrace(tr)
		}
	}
}

// taskItemEnded traces the task's end when its last item ends (if any of its items ran).
func (e *Executor) taskItemEnded(t *task, item int, ran, success bool) {
	last, anyRan, failed := t.end(item, ran, success)
	if !last || !anyRan {
		return
	}
	if len(failed) == 0 {
		e.trace(t, ejserver.TaskFinished, fmt.Sprintf("Job '%s' execute end.", t.job))
		return
	}
	slices.Sort(failed)
	e.trace(t, ejserver.TaskError, fmt.Sprintf("Job '%s' items %v failed.", t.job, failed))
}
