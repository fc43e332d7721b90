package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// BenchmarkWriter measures sustained writes through the Writer (batched, default settings) into each store,
// in records/s (a record is one upsert). "insert" enqueues one end record per execution: every record is a
// new row. "insert+update" enqueues each execution's start record and, lag records later (so in another
// batch, as when a webhook takes a while), its end record: half the records insert a row, half update one.
// The producer never lets the queue overflow, so nothing is dropped. "no-rollup" takes the rollup off
// first (PostgreSQL's triggers and index, SQLite's per-batch aggregation): the write cost of the stats'
// rollup is the difference, in the same run.
//
//	go test ./internal/history -run '^$' -bench BenchmarkWriter -benchtime 5s
func BenchmarkWriter(b *testing.B) {
	const lag = 2000
	for _, kind := range storeKinds {
		for _, c := range []struct{ update, rollup bool }{{false, true}, {false, false}, {true, true}, {true, false}} {
			update := c.update
			name := kind + "/insert"
			if update {
				name = kind + "/insert+update"
			}
			if !c.rollup {
				name += "/no-rollup"
			}
			b.Run(name, func(b *testing.B) {
				w, room := benchWriter(b, kind, c.rollup)
				records := 0
				enqueue := func(e ejserver.Execution) {
					room(1)
					w.Enqueue(e)
					records++
				}
				base := newExec("bench", 0, t0)
				var ring [lag]ejserver.Execution
				b.ResetTimer()
				for i := range b.N {
					e := base
					e.ID = ejserver.NewExecutionID()
					e.ShardingItem = i % 4
					e.StartedAt = t0.Add(time.Duration(i) * time.Microsecond)
					e.CompletedAt = e.StartedAt.Add(time.Millisecond)
					if !update {
						enqueue(e)
						continue
					}
					enqueue(running(e))
					if i >= lag {
						enqueue(ring[i%lag])
					}
					ring[i%lag] = e
				}
				if update {
					for i := max(0, b.N-lag); i < b.N; i++ {
						enqueue(ring[i%lag])
					}
				}
				eventually(b, "the writer to catch up", func() bool { return w.Stats().Written == int64(records) })
				b.StopTimer()
				if st := w.Stats(); st.Dropped != 0 || st.Failures != 0 {
					b.Fatalf("stats %+v", st)
				}
				b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// BenchmarkWriterManyJobs measures what a peer of steady-10k asks of SQLite: items of 10,000 single-item jobs
// in turn, each one execution row and its task's three status traces (STAGING, RUNNING, FINISHED), written
// through the Writer. The indexes by job and by task then take each row at a scattered place, unlike
// BenchmarkWriter's one job. ns/op is per item; run it long enough for the tables to outgrow the page cache:
//
//	go test ./internal/history -run '^$' -bench BenchmarkWriterManyJobs -benchtime 200000x
func BenchmarkWriterManyJobs(b *testing.B) {
	const jobs = 10000
	w, room := benchWriter(b, "sqlite", true)
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%05d", i)
	}
	records := 0
	b.ResetTimer()
	for i := range b.N {
		room(4)
		at := t0.Add(time.Duration(i) * time.Millisecond)
		e := newExec(names[i%jobs], 0, at)
		w.Enqueue(e)
		for k, state := range []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskRunning, ejserver.TaskFinished} {
			w.EnqueueTrace(ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: e.JobName, TaskID: e.TaskID,
				InstanceID: e.InstanceID, ExecutionType: "READY", ShardingItems: "0", Source: e.Source, State: state,
				CreationTime: at.Add(time.Duration(k) * time.Millisecond)})
		}
		records += 4
	}
	eventually(b, "the writer to catch up", func() bool { return w.Stats().Written == int64(records) })
	b.StopTimer()
	if st := w.Stats(); st.Dropped != 0 || st.Failures != 0 {
		b.Fatalf("stats %+v", st)
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}

// benchWriter starts a Writer (default settings) into a fresh store of kind; room(n) returns once the queue
// has room for n records, waiting without spinning (the writer needs the CPU), so nothing is dropped.
func benchWriter(b *testing.B, kind string, rollup bool) (w *Writer, room func(n int)) {
	cfg := WriterConfig{Logger: discardLogger()}.withDefaults()
	s := openStore(b, kind)
	if !rollup {
		dropRollup(b, s)
	}
	w = NewWriter(s, cfg)
	if err := w.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	tick := time.NewTicker(100 * time.Microsecond)
	b.Cleanup(tick.Stop)
	return w, func(n int) {
		for w.Stats().Backlog > cfg.QueueSize-n {
			<-tick.C
		}
	}
}

// dropRollup takes the rollup off s: the writes of the schema before the rollup. PostgreSQL's are migration
// 0009's triggers (its index went in 0022); SQLite's is the writer's per-batch aggregation (migration 0011).
func dropRollup(b testing.TB, s Store) {
	ctx := context.Background()
	switch st := s.(type) {
	case *sqliteStore:
		st.noRollup = true
	case *postgresStore:
		for _, stmt := range []string{"DROP TRIGGER job_execution_log_stats_insert ON JOB_EXECUTION_LOG",
			"DROP TRIGGER job_execution_log_stats_update ON JOB_EXECUTION_LOG",
			"DROP TRIGGER job_execution_log_stats_delete ON JOB_EXECUTION_LOG"} {
			if _, err := st.pool.Exec(ctx, stmt); err != nil {
				b.Fatal(err)
			}
		}
	}
}
