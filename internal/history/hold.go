package history

import (
	"time"

	"github.com/ejserver/ejserver"
)

// queued is the Writer's queue of execution records: each record with its waiter (nil: nobody waits) and
// the time it was queued.
type queued struct {
	recs  []ejserver.Execution
	waits []*waiter
	at    []time.Time
}

// holdStarts splits q (in queue order) into the records to write now and those to keep queued a while
// (WriterConfig.StartHold): a running record that nobody waits for and that was queued less than hold before
// now stays queued, so that its end, which replaces it, can be written in its place. A running record that a
// later-queued record of the same execution replaces (replaces: the upsert's own rule) is dropped, however
// old: the store would keep the replacement anyway. Records that someone waits for, and end records, are
// always written now. replaced counts the dropped records. The order within each part is q's.
func holdStarts(q queued, now time.Time, hold time.Duration) (write, keep queued, replaced int) {
	return holdStartsInto(q, now, hold, queued{}, queued{}, map[string]int{})
}

// holdStartsInto is holdStarts appending to write and keep (empty, their arrays reused: queueBufs) with last
// as its index of q's executions (emptied first).
func holdStartsInto(q queued, now time.Time, hold time.Duration, write, keep queued, last map[string]int) (_, _ queued, replaced int) {
	// the last record queued of each execution that has more than one: what the store ends with
	clear(last)
	for i, r := range q.recs {
		last[r.ID] = i
	}
	for i, r := range q.recs {
		if !r.Done() && q.waits[i] == nil {
			if j := last[r.ID]; j != i && replaces(q.recs[j], r) {
				replaced++
				continue
			}
			if now.Sub(q.at[i]) < hold {
				keep.add(q, i)
				continue
			}
		}
		write.add(q, i)
	}
	return write, keep, replaced
}

func (q *queued) add(from queued, i int) {
	q.recs = append(q.recs, from.recs[i])
	q.waits = append(q.waits, from.waits[i])
	q.at = append(q.at, from.at[i])
}

// queuedTraces is the Writer's queue of status traces, each with the time it was queued.
type queuedTraces struct {
	recs []ejserver.StatusTrace
	at   []time.Time
}

// holdTraces splits q (in queue order) into the traces to write now and those to keep queued a while
// (WriterConfig.StartHold): a task's staging and running traces, queued less than hold before now, wait for
// the trace of its end, so that a short task's three traces are written in one transaction (each of the
// table's job- and task-ordered indexes gets one leaf page dirtied a task instead of one a transaction). A
// task whose end is queued has all its traces written now, as have every end trace and every trace queued
// hold before now or earlier. The order within each part is q's.
func holdTraces(q queuedTraces, now time.Time, hold time.Duration) (write, keep queuedTraces) {
	return holdTracesInto(q, now, hold, queuedTraces{}, queuedTraces{}, map[[2]string]bool{})
}

// holdTracesInto is holdTraces appending to write and keep (empty, their arrays reused: queueBufs) with
// ended as its set of q's ended tasks (emptied first).
func holdTracesInto(q queuedTraces, now time.Time, hold time.Duration, write, keep queuedTraces, ended map[[2]string]bool) (_, _ queuedTraces) {
	clear(ended)
	for _, t := range q.recs {
		if !begun(t.State) {
			ended[[2]string{t.JobName, t.TaskID}] = true
		}
	}
	for i, t := range q.recs {
		part := &write
		if begun(t.State) && now.Sub(q.at[i]) < hold && !ended[[2]string{t.JobName, t.TaskID}] {
			part = &keep
		}
		part.recs = append(part.recs, t)
		part.at = append(part.at, q.at[i])
	}
	return write, keep
}

// begun says whether a trace's state is one of a task still running (staging or running).
func begun(s ejserver.TaskState) bool {
	return s == ejserver.TaskStaging || s == ejserver.TaskRunning
}
