package history

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// seedTraces writes jobs jobs' tasks tasks each, three traces a task (staging, running, finished), a second
// apart, the tasks of all jobs interleaved in time as on a peer; it returns the traces in the order written.
func seedTraces(t *testing.T, s Store, jobs, tasks int) []ejserver.StatusTrace {
	t.Helper()
	var all []ejserver.StatusTrace
	for k := range tasks {
		for j := range jobs {
			job := fmt.Sprintf("job-%d", j)
			task := strings.Join([]string{job, "0", "READY", "10.0.0.7@-@4242", fmt.Sprintf("u%05d", k)}, "@-@")
			at := t0.Add(time.Duration(k*jobs+j) * time.Second)
			for n, state := range []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskRunning, ejserver.TaskFinished} {
				all = append(all, ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: job, TaskID: task,
					InstanceID: "10.0.0.7@-@4242", ExecutionType: "READY", ShardingItems: "0", Source: "NORMAL_TRIGGER",
					State: state, CreationTime: at.Add(time.Duration(n) * time.Millisecond)})
			}
		}
	}
	for i := 0; i < len(all); i += 500 {
		if err := s.WriteTraces(testCtx(t), all[i:min(i+500, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// TestExplainTracePages checks on SQLite that a job's traces are read in order through
// job_status_trace_log_job_time (sorting only ties of one creation time, not the job's traces), and a task's
// through job_status_trace_log_task, with or without its job: never the job's whole index walked for one task.
func TestExplainTracePages(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite").(*sqliteStore)
	seedTraces(t, s, 20, 50)
	task := "job-3@-@0@-@READY@-@10.0.0.7@-@4242@-@u00007"
	for _, c := range []struct {
		name  string
		f     TraceFilter
		index string
	}{
		{"a job's traces", TraceFilter{JobName: "job-3"}, "job_status_trace_log_job_time (job_name=?)"},
		{"a task's traces", TraceFilter{TaskID: task}, "job_status_trace_log_task (<expr>=?)"},
		{"a job's task", TraceFilter{JobName: "job-3", TaskID: task}, "job_status_trace_log_task (<expr>=?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := listTraces(sqliteDialect, c.f, 50)
			plan := strings.Join(sqlitePlan(t, s, "EXPLAIN QUERY PLAN "+q.String(), q.args), "\n")
			wholeSort := strings.Contains(plan, "USE TEMP B-TREE FOR ORDER BY")
			if !strings.Contains(plan, "INDEX "+c.index) || (c.f.TaskID == "" && wholeSort) ||
				strings.Contains(plan, "SCAN JOB_STATUS_TRACE_LOG") {
				t.Errorf("plan of %s:\n%s\nwant a seek of %s", q, plan, c.index)
			}
		})
	}
}

// TestMigration16KeepsTraces upgrades a file of schema version 15 (the traces' job and task indexes with the
// trace's id, the task index ordered by time too) to 16: the indexes are narrowed, every trace is kept, and a
// job's and a task's traces read the same as before, newest first, ties of one creation time by id.
func TestMigration16KeepsTraces(t *testing.T) {
	t.Parallel()
	migrationKeepsTraces(t, 16, []string{
		"DROP INDEX job_status_trace_log_job_time",
		"CREATE INDEX job_status_trace_log_job_time ON JOB_STATUS_TRACE_LOG (job_name, creation_time, id)",
		"DROP INDEX job_status_trace_log_task",
		"CREATE INDEX job_status_trace_log_task ON JOB_STATUS_TRACE_LOG (task_id, creation_time, id)",
	}, map[string]string{"job_status_trace_log_job_time": "(job_name, creation_time)", "job_status_trace_log_task": "(task_id)"})
}

// TestMigration18KeepsTraces upgrades a file of schema version 17 (the task index keyed by the whole task id)
// to 18 (keyed by its unique part): every trace is kept and a task's traces read the same, with or without
// its job, for tasks of the old random uniques and the new time-ordered ones.
func TestMigration18KeepsTraces(t *testing.T) {
	t.Parallel()
	migrationKeepsTraces(t, 18, []string{
		"DROP INDEX job_status_trace_log_task",
		"CREATE INDEX job_status_trace_log_task ON JOB_STATUS_TRACE_LOG (task_id)",
	}, map[string]string{"job_status_trace_log_task": "(substr(task_id, -36))"})
}

// migrationKeepsTraces seeds traces, takes the file back to the schema before version (downgrade, and the
// version forgotten), reads a few jobs' and tasks' traces, migrates it again and checks that the indexes
// are as want has them (their definitions' ends) and that every trace is kept and reads the same.
func migrationKeepsTraces(t *testing.T, version int, downgrade []string, want map[string]string) {
	ctx := testCtx(t)
	dsn := newDSN(t, "sqlite")
	s := openDSN(t, dsn).(*sqliteStore)
	all := seedTraces(t, s, 7, 30)
	// ties: two more traces of job-2 at the creation time of its newest
	newest := all[len(all)-7*3+2*3+2]
	tie := []ejserver.StatusTrace{newest, newest}
	for i := range tie {
		tie[i].ID, tie[i].State, tie[i].TaskID = ejserver.NewExecutionID(), ejserver.TaskError, newest.TaskID+"-tie"+strconv.Itoa(i)
	}
	if err := s.WriteTraces(ctx, tie); err != nil {
		t.Fatal(err)
	}
	// tasks with ElasticJob's ids as this peer makes them (a time-ordered unique) and as it made them before
	// 0018 (a random one), two traces each
	var made []ejserver.StatusTrace
	for i, id := range []string{ejserver.TaskID("job-4", []int{0, 2}, false, "10.0.0.7@-@4242"),
		"job-4@-@1@-@FAILOVER@-@10.0.0.7@-@4242@-@4f1c2a77-93d0-4b57-9c9e-0d6a8f3b2e11"} {
		for n, state := range []ejserver.TaskState{ejserver.TaskStaging, ejserver.TaskFinished} {
			made = append(made, ejserver.StatusTrace{ID: ejserver.NewExecutionID(), JobName: "job-4", TaskID: id,
				InstanceID: "10.0.0.7@-@4242", ExecutionType: "READY", ShardingItems: "0", Source: "NORMAL_TRIGGER",
				State: state, CreationTime: t0.Add(time.Duration(i*10+n) * time.Millisecond)})
		}
	}
	if err := s.WriteTraces(ctx, made); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range append(downgrade, "DELETE FROM schema_migrations WHERE version = "+strconv.Itoa(version)) {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	filters := []TraceFilter{{JobName: "job-2"}, {JobName: "job-2", Limit: 4}, {JobName: "job-6", Limit: MaxLimit},
		{TaskID: all[40].TaskID}, {JobName: all[40].JobName, TaskID: all[40].TaskID}, {TaskID: tie[1].TaskID},
		{TaskID: made[0].TaskID}, {JobName: "job-4", TaskID: made[2].TaskID}}
	read := func(s Store) [][]ejserver.StatusTrace {
		var out [][]ejserver.StatusTrace
		for _, f := range filters {
			got, err := s.ListTraces(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, got)
		}
		return out
	}
	before := read(s)
	if len(before[0]) != min(DefaultLimit, 3*30+2) || len(before[3]) != 3 || len(before[5]) != 1 || len(before[6]) != 2 || len(before[7]) != 2 {
		t.Fatalf("before %d: %d, %d, %d, %d, %d traces", version, len(before[0]), len(before[3]), len(before[5]), len(before[6]), len(before[7]))
	}
	// newest first: the two ties, by id descending, ahead of the task's end at the same time
	first := before[0][:3]
	if !first[0].CreationTime.Equal(first[2].CreationTime) || first[0].ID < first[1].ID || first[1].ID < first[2].ID {
		t.Fatalf("a job's newest traces before %d: %+v", version, first)
	}
	s = reopenMigrated(t, s, dsn)
	for name, want := range want {
		checkIndexColumns(t, s, name, want)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM JOB_STATUS_TRACE_LOG").Scan(&n); err != nil || n != len(all)+len(tie)+len(made) {
		t.Errorf("traces after %d: %d, %v; want %d", version, n, err, len(all)+len(tie)+len(made))
	}
	if after := read(s); !reflect.DeepEqual(after, before) {
		for i := range after {
			if !reflect.DeepEqual(after[i], before[i]) {
				t.Errorf("%+v after %d:\n got %+v\nwant %+v", filters[i], version, after[i], before[i])
			}
		}
	}
}
