package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// BenchmarkSmallBatches measures what a peer of steady-10k asks of its store per item when the writer's
// transactions are small (a wave of item ends, EnqueueCommitted's group commit): items of 10,000 single-item
// jobs in turn, written straight to the store in batches of 16 executions and then their 48 status traces,
// two transactions a batch. ns/op is per item; compare builds by their CPU time (user+sys):
//
//	go test -c -o /tmp/h.test ./internal/history && /usr/bin/time /tmp/h.test -test.run '^$' \
//	    -test.bench BenchmarkSmallBatches -test.benchtime 40000x
func BenchmarkSmallBatches(b *testing.B) { smallBatches(b, false) }

// BenchmarkSmallBatchesOneTransaction is BenchmarkSmallBatches with each batch's executions and traces in
// one transaction (the SQLite store's WriteBatch, as the Writer writes them).
func BenchmarkSmallBatchesOneTransaction(b *testing.B) { smallBatches(b, true) }

func smallBatches(b *testing.B, oneTx bool) {
	const jobs, batch = 10000, 16
	s := openStore(b, "sqlite")
	ctx := context.Background()
	// The pages the commits write (WAL frames), counted by checkpointing every 64 batches ourselves (the
	// store checkpoints every 10,000 pages): the page count per item is the lever, and unlike the CPU time
	// it does not move with the machine's load.
	w := s.(*sqliteStore).w
	if _, err := w.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		b.Fatal(err)
	}
	var frames int64
	checkpoint := func() {
		var busy, log, done int64
		if err := w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done); err != nil {
			b.Fatal(err)
		}
		frames += log
	}
	checkpoint()
	frames = 0
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%05d", i)
	}
	execs := make([]ejserver.Execution, 0, batch)
	traces := make([]ejserver.StatusTrace, 0, 3*batch)
	b.ResetTimer()
	for i := range b.N {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		var e ejserver.Execution
		e, traces = endedTask(names[i%jobs], at, traces)
		execs = append(execs, e)
		if len(execs) == batch || i == b.N-1 {
			if oneTx {
				if err := s.(BatchSink).WriteBatch(ctx, execs, traces); err != nil {
					b.Fatal(err)
				}
			} else if err := s.WriteExecutions(ctx, execs); err != nil {
				b.Fatal(err)
			} else if err := s.WriteTraces(ctx, traces); err != nil {
				b.Fatal(err)
			}
			execs, traces = execs[:0], traces[:0]
			if (i/batch)%64 == 63 || i == b.N-1 {
				checkpoint()
			}
		}
	}
	b.ReportMetric(float64(frames)/float64(b.N), "pages/item")
}

// endedTask is a one-item task of job that started at at (scheduled at its second) and ended: its execution,
// and traces with its three status traces appended (staging, running, finished).
func endedTask(job string, at time.Time, traces []ejserver.StatusTrace) (ejserver.Execution, []ejserver.StatusTrace) {
	e := newExec(job, 0, at)
	e.ScheduledAt = at.Truncate(time.Second)
	for k, state := range []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskRunning, ejserver.TaskFinished} {
		traces = append(traces, ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: e.JobName, TaskID: e.TaskID,
			InstanceID: e.InstanceID, ExecutionType: "READY", ShardingItems: "0", Source: e.Source, State: state,
			CreationTime: at.Add(time.Duration(k) * time.Millisecond)})
	}
	return e, traces
}
