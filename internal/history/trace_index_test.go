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
		{"a task's traces", TraceFilter{TaskID: task}, "job_status_trace_log_task (task_id=?)"},
		{"a job's task", TraceFilter{JobName: "job-3", TaskID: task}, "job_status_trace_log_task (task_id=?)"},
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
	for _, stmt := range []string{
		"DROP INDEX job_status_trace_log_job_time",
		"CREATE INDEX job_status_trace_log_job_time ON JOB_STATUS_TRACE_LOG (job_name, creation_time, id)",
		"DROP INDEX job_status_trace_log_task",
		"CREATE INDEX job_status_trace_log_task ON JOB_STATUS_TRACE_LOG (task_id, creation_time, id)",
		"DELETE FROM schema_migrations WHERE version = 16",
	} {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	filters := []TraceFilter{{JobName: "job-2"}, {JobName: "job-2", Limit: 4}, {JobName: "job-6", Limit: MaxLimit},
		{TaskID: all[40].TaskID}, {JobName: all[40].JobName, TaskID: all[40].TaskID}, {TaskID: tie[1].TaskID}}
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
	if len(before[0]) != min(DefaultLimit, 3*30+2) || len(before[3]) != 3 || len(before[5]) != 1 {
		t.Fatalf("before 0016: %d, %d, %d traces", len(before[0]), len(before[3]), len(before[5]))
	}
	// newest first: the two ties, by id descending, ahead of the task's end at the same time
	first := before[0][:3]
	if !first[0].CreationTime.Equal(first[2].CreationTime) || first[0].ID < first[1].ID || first[1].ID < first[2].ID {
		t.Fatalf("a job's newest traces before 0016: %+v", first)
	}
	s = reopenMigrated(t, s, dsn)
	for name, want := range map[string]string{
		"job_status_trace_log_job_time": "(job_name, creation_time)",
		"job_status_trace_log_task":     "(task_id)",
	} {
		var stmt string
		if err := s.r.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = ?`, name).Scan(&stmt); err != nil ||
			!strings.HasSuffix(stmt, want) {
			t.Errorf("%s after 0016: %q, %v; want it on %s", name, stmt, err, want)
		}
	}
	var n int
	if err := s.r.QueryRowContext(ctx, "SELECT COUNT(*) FROM JOB_STATUS_TRACE_LOG").Scan(&n); err != nil || n != len(all)+len(tie) {
		t.Errorf("traces after 0016: %d, %v; want %d", n, err, len(all)+len(tie))
	}
	if after := read(s); !reflect.DeepEqual(after, before) {
		for i := range after {
			if !reflect.DeepEqual(after[i], before[i]) {
				t.Errorf("%+v after 0016:\n got %+v\nwant %+v", filters[i], after[i], before[i])
			}
		}
	}
}
