package history

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

func TestExecutionRoundTrip(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		e := newExec("settle", 2, t0.Add(123456789*time.Nanosecond))
		e.Permanent, e.FailureCause, e.Source = true, "410 Gone", ejserver.SourceFailover
		mustWrite(t, s, e)
		got := mustGet(t, s, e.ID)
		want := sanitizeExecution(e) // times truncated to the microsecond, UTC
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("read back\n got %+v\nwant %+v", got, want)
		}
		if got.StartedAt.Nanosecond() != 123456000 {
			t.Errorf("start time kept %d ns, want microsecond precision", got.StartedAt.Nanosecond())
		}
	})
}

func TestUpsert(t *testing.T) {
	t.Parallel()
	end := newExec("settle", 0, t0)
	start := running(end)
	laterEnd := failed(end, 500)
	laterEnd.CompletedAt = end.CompletedAt.Add(time.Second)
	tests := []struct {
		name   string
		writes [][]ejserver.Execution // each inner slice is one WriteExecutions call
		want   ejserver.Execution
	}{
		{"start alone", [][]ejserver.Execution{{start}}, start},
		{"start then end", [][]ejserver.Execution{{start}, {end}}, end},
		{"end then late start", [][]ejserver.Execution{{end}, {start}}, end},
		{"start and end in one batch", [][]ejserver.Execution{{start, end}}, end},
		{"end and late start in one batch", [][]ejserver.Execution{{end, start}}, end},
		{"a later end wins", [][]ejserver.Execution{{end}, {laterEnd}}, laterEnd},
		{"an earlier end loses", [][]ejserver.Execution{{laterEnd}, {end}}, laterEnd},
		{"an earlier end loses in one batch", [][]ejserver.Execution{{laterEnd, end, start}}, laterEnd},
	}
	eachStore(t, func(t *testing.T, s Store) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				// A fresh id per case; the store is shared.
				id := ejserver.NewExecutionID()
				for _, batch := range tt.writes {
					batch = slices.Clone(batch) // the table is shared by the stores' parallel subtests
					for i := range batch {
						batch[i].ID = id
					}
					mustWrite(t, s, batch...)
				}
				got := mustGet(t, s, id)
				want := sanitizeExecution(tt.want)
				want.ID = id
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("\n got %+v\nwant %+v", got, want)
				}
			})
		}
	})
}

func TestStoredStringsAreSanitized(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		e := newExec("settle", 0, t0)
		e.ResponseExcerpt = "a\x00b\xffc"
		e.FailureCause = "bad \xc3"
		mustWrite(t, s, e)
		got := mustGet(t, s, e.ID)
		if got.ResponseExcerpt != "a\uFFFDb\uFFFDc" || got.FailureCause != "bad \uFFFD" {
			t.Fatalf("got excerpt %q cause %q", got.ResponseExcerpt, got.FailureCause)
		}
	})
}

func TestGetExecutionNotFound(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		_, err := s.GetExecution(testCtx(t), ejserver.NewExecutionID())
		if !ejserver.IsNotFound(err) {
			t.Fatalf("got %v, want ENOTFOUND", err)
		}
	})
}

func TestListExecutionsFilters(t *testing.T) {
	t.Parallel()
	// Executions of two jobs, newest last.
	var all []ejserver.Execution
	add := func(e ejserver.Execution) ejserver.Execution { all = append(all, e); return e }
	a0 := add(newExec("a", 0, t0))
	a1 := add(failed(newExec("a", 1, t0.Add(1*time.Second)), 503))
	a0m := newExec("a", 0, t0.Add(2*time.Second))
	a0m.Source = ejserver.SourceMisfire
	add(a0m)
	aRun := add(running(newExec("a", 1, t0.Add(3*time.Second))))
	b0 := newExec("b", 0, t0.Add(4*time.Second))
	b0.InstanceID = "10.0.0.8@-@77"
	add(b0)
	b1 := add(failed(newExec("b", 1, t0.Add(5*time.Second)), 410))

	tests := []struct {
		name string
		f    ExecutionFilter
		want []ejserver.Execution // newest first
	}{
		{"all", ExecutionFilter{}, []ejserver.Execution{b1, b0, aRun, a0m, a1, a0}},
		{"job", ExecutionFilter{JobName: "a"}, []ejserver.Execution{aRun, a0m, a1, a0}},
		{"item", ExecutionFilter{JobName: "a", ShardingItem: ptr(0)}, []ejserver.Execution{a0m, a0}},
		{"item across jobs", ExecutionFilter{ShardingItem: ptr(1)}, []ejserver.Execution{b1, aRun, a1}},
		{"success", ExecutionFilter{Success: ptr(true)}, []ejserver.Execution{b0, a0m, a0}},
		{"failure (running excluded)", ExecutionFilter{Success: ptr(false)}, []ejserver.Execution{b1, a1}},
		{"source", ExecutionFilter{Source: ejserver.SourceMisfire}, []ejserver.Execution{a0m}},
		{"instance", ExecutionFilter{InstanceID: "10.0.0.8@-@77"}, []ejserver.Execution{b0}},
		{"from inclusive", ExecutionFilter{From: t0.Add(4 * time.Second)}, []ejserver.Execution{b1, b0}},
		{"to exclusive", ExecutionFilter{To: t0.Add(2 * time.Second)}, []ejserver.Execution{a1, a0}},
		{"range and job", ExecutionFilter{JobName: "a", From: t0.Add(time.Second), To: t0.Add(3 * time.Second)},
			[]ejserver.Execution{a0m, a1}},
		{"nothing", ExecutionFilter{JobName: "c"}, nil},
	}
	eachStore(t, func(t *testing.T, s Store) {
		mustWrite(t, s, all...)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, err := s.ListExecutions(testCtx(t), tt.f)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := ids(p.Items), ids(tt.want); !slices.Equal(got, want) {
					t.Fatalf("got %v\nwant %v", got, want)
				}
				if p.NextCursor != "" {
					t.Errorf("a single page has a next cursor %q", p.NextCursor)
				}
			})
		}
	})
}

func TestListExecutionsInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		f     ExecutionFilter
		field string
	}{
		{"cursor not base64", ExecutionFilter{Cursor: "!!!"}, "cursor"},
		{"cursor of another shape", ExecutionFilter{Cursor: "MTIz"}, "cursor"},
		{"cursor of another version", ExecutionFilter{Cursor: cursor{start: 1, id: "x"}.encode()[1:]}, "cursor"},
		{"negative limit", ExecutionFilter{Limit: -1}, "limit"},
		{"limit too large", ExecutionFilter{Limit: MaxLimit + 1}, "limit"},
		{"unknown source", ExecutionFilter{Source: "CRON"}, "source"},
		{"negative item", ExecutionFilter{ShardingItem: ptr(-1)}, "shardingItem"},
		{"empty range", ExecutionFilter{From: t0, To: t0}, "to"},
		{"unknown state", ExecutionFilter{State: "DONE"}, "state"},
		{"state in lower case", ExecutionFilter{State: "running"}, "state"},
	}
	eachStore(t, func(t *testing.T, s Store) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := s.ListExecutions(testCtx(t), tt.f)
				var e *ejserver.Error
				if !errors.As(err, &e) || e.Code != ejserver.EINVALID || e.Field() != tt.field {
					t.Fatalf("got %v, want EINVALID on %s", err, tt.field)
				}
			})
		}
	})
}

func TestListExecutionsLimits(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		var recs []ejserver.Execution
		for i := range MaxLimit + 1 {
			recs = append(recs, newExec("many", 0, t0.Add(time.Duration(i)*time.Millisecond)))
		}
		mustWrite(t, s, recs...)
		for _, tt := range []struct{ limit, want int }{{0, DefaultLimit}, {1, 1}, {MaxLimit, MaxLimit}} {
			p, err := s.ListExecutions(testCtx(t), ExecutionFilter{JobName: "many", Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Items) != tt.want || p.NextCursor == "" {
				t.Errorf("limit %d: %d items, cursor %q; want %d and a cursor", tt.limit, len(p.Items), p.NextCursor, tt.want)
			}
		}
	})
}

// TestCursorPagingWhileInserting pages through a job's history while executions keep arriving: between two
// pages the test adds executions newer than everything, at the cursor's own start time, and older than the
// cursor (late start records, in pages not read yet), and a goroutine adds more all along. Every execution
// that existed before paging began, and every one added below the cursor, is seen exactly once; none is seen
// twice; the order never goes back.
func TestCursorPagingWhileInserting(t *testing.T) {
	t.Parallel()
	n := 300
	if raceEnabled {
		n = 60
	}
	eachStore(t, func(t *testing.T, s Store) {
		var expected []ejserver.Execution
		for i := range n {
			// Several executions share a start time: the id breaks the tie.
			expected = append(expected, newExec("paged", i%4, t0.Add(time.Duration(i/3)*time.Second)))
		}
		mustWrite(t, s, expected...)

		ctx, cancel := context.WithCancel(testCtx(t))
		var wg sync.WaitGroup
		var insertErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				start := t0.Add(time.Duration(i%(n/3)) * time.Second)
				if i%2 == 1 {
					start = t0.Add(time.Duration(n+i) * time.Second) // newer than everything
				}
				if err := s.WriteExecutions(ctx, []ejserver.Execution{newExec("paged", 0, start)}); err != nil {
					if ctx.Err() == nil {
						insertErr = err
					}
					return
				}
			}
		}()

		seen := map[string]int{}
		var above []ejserver.Execution // added above the cursor: must not be seen
		var cur string
		var last ejserver.Execution
		for {
			p, err := s.ListExecutions(ctx, ExecutionFilter{JobName: "paged", Cursor: cur, Limit: 7})
			if err != nil {
				cancel()
				wg.Wait()
				t.Fatal(err)
			}
			for _, e := range p.Items {
				seen[e.ID]++
				if last.ID != "" && !(e.StartedAt.Before(last.StartedAt) || (e.StartedAt.Equal(last.StartedAt) && e.ID < last.ID)) {
					t.Errorf("order broken: %s@%s after %s@%s", e.ID, e.StartedAt, last.ID, last.StartedAt)
				}
				last = e
			}
			if p.NextCursor == "" {
				break
			}
			cur = p.NextCursor
			// Newer than everything and at the cursor's start time (with a larger id, so above the cursor):
			// these belong to pages already read and must not show up. Older than the cursor: must show up.
			newer, same := newExec("paged", 1, t0.Add(time.Hour)), newExec("paged", 2, last.StartedAt)
			below := newExec("paged", 3, last.StartedAt.Add(-500*time.Millisecond))
			mustWrite(t, s, newer, same, below)
			above = append(above, newer, same)
			expected = append(expected, below)
		}
		cancel()
		wg.Wait()
		if insertErr != nil {
			t.Fatal(insertErr)
		}
		for id, c := range seen {
			if c > 1 {
				t.Errorf("execution %s seen %d times", id, c)
			}
		}
		for _, e := range above {
			if seen[e.ID] != 0 {
				t.Errorf("execution %s, added above the cursor, showed up in a later page", e.ID)
			}
		}
		for _, e := range expected {
			if seen[e.ID] != 1 {
				t.Errorf("execution %s (started %s) seen %d times, want 1", e.ID, e.StartedAt, seen[e.ID])
			}
		}
	})
}

func TestTraces(t *testing.T) {
	t.Parallel()
	trace := func(job, task string, state ejserver.TaskState, at time.Time) ejserver.StatusTrace {
		return ejserver.StatusTrace{
			ID: ejserver.NewExecutionID(), JobName: job, OriginalTaskID: "", TaskID: task, InstanceID: "10.0.0.7@-@4242",
			ExecutionType: "READY", ShardingItems: "0,1", Source: ejserver.SourceNormal, State: state,
			Message: string(state) + " message", CreationTime: at,
		}
	}
	a1s := trace("a", "task-a1", ejserver.TaskStaging, t0)
	a1r := trace("a", "task-a1", ejserver.TaskRunning, t0.Add(time.Millisecond))
	a1f := trace("a", "task-a1", ejserver.TaskFinished, t0.Add(2*time.Millisecond))
	a1f.Message = ""
	a2e := trace("a", "task-a2", ejserver.TaskError, t0.Add(time.Second))
	a2e.ExecutionType, a2e.OriginalTaskID = "FAILOVER", "task-a1"
	b1s := trace("b", "task-b1", ejserver.TaskStaging, t0.Add(3*time.Second))
	tests := []struct {
		name string
		f    TraceFilter
		want []ejserver.StatusTrace
	}{
		{"job", TraceFilter{JobName: "a"}, []ejserver.StatusTrace{a2e, a1f, a1r, a1s}},
		{"task", TraceFilter{TaskID: "task-a1"}, []ejserver.StatusTrace{a1f, a1r, a1s}},
		{"job and task", TraceFilter{JobName: "b", TaskID: "task-a1"}, nil},
		{"limit", TraceFilter{JobName: "a", Limit: 2}, []ejserver.StatusTrace{a2e, a1f}},
	}
	eachStore(t, func(t *testing.T, s Store) {
		ctx := testCtx(t)
		recs := []ejserver.StatusTrace{a1s, a1r, a1f, a2e, b1s}
		if err := s.WriteTraces(ctx, recs); err != nil {
			t.Fatal(err)
		}
		// Writing the same traces again (a retried batch) changes nothing.
		if err := s.WriteTraces(ctx, recs); err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.ListTraces(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]ejserver.StatusTrace, len(tt.want))
				for i, w := range tt.want {
					want[i] = sanitizeTrace(w)
				}
				if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
					t.Fatalf("\n got %+v\nwant %+v", got, want)
				}
			})
		}
		for _, bad := range []TraceFilter{{}, {JobName: "a", Limit: -1}, {TaskID: "x", Limit: MaxLimit + 1}} {
			if _, err := s.ListTraces(ctx, bad); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
				t.Errorf("ListTraces(%+v) = %v, want EINVALID", bad, err)
			}
		}
	})
}

func TestCountsSince(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		var recs []ejserver.Execution
		// Job a: an old success (before the window), 3 successes and 2 failures in it, 1 running.
		recs = append(recs, newExec("a", 0, t0.Add(-time.Second)))
		for i := range 3 {
			recs = append(recs, newExec("a", i, t0.Add(time.Duration(i)*time.Second)))
		}
		recs = append(recs, failed(newExec("a", 0, t0), 500), failed(newExec("a", 1, t0.Add(time.Hour)), 0))
		recs = append(recs, running(newExec("a", 2, t0.Add(2*time.Hour))))
		// Job b: one failure exactly at since (inclusive).
		recs = append(recs, failed(newExec("b", 0, t0), 404))
		// Job c: not asked for.
		recs = append(recs, newExec("c", 0, t0))
		mustWrite(t, s, recs...)

		got, err := s.CountsSince(testCtx(t), []string{"a", "b", "none"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Counts{"a": {Success: 3, Failure: 2, Running: 1}, "b": {Failure: 1}, "none": {}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		got, err = s.CountsSince(testCtx(t), nil, t0)
		if err != nil || len(got) != 0 {
			t.Fatalf("no jobs: got %v, %v", got, err)
		}
	})
}

func TestCountsSinceManyJobs(t *testing.T) {
	t.Parallel()
	// The API asks for a page of ~100 jobs in one query.
	eachStore(t, func(t *testing.T, s Store) {
		var jobs []string
		var recs []ejserver.Execution
		for j := range 120 {
			job := fmt.Sprintf("job-%03d", j)
			jobs = append(jobs, job)
			for i := range j % 4 {
				recs = append(recs, newExec(job, i, t0.Add(time.Duration(i)*time.Minute)))
			}
		}
		mustWrite(t, s, recs...)
		got, err := s.CountsSince(testCtx(t), jobs, t0)
		if err != nil {
			t.Fatal(err)
		}
		for j, job := range jobs {
			if got[job].Success != int64(j%4) {
				t.Errorf("%s: %+v, want %d successes", job, got[job], j%4)
			}
		}
	})
}

func TestLastExecutions(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		a1 := newExec("a", 0, t0)
		a2 := failed(newExec("a", 1, t0.Add(time.Minute)), 500)
		b1 := running(newExec("b", 0, t0.Add(time.Hour)))
		b0 := newExec("b", 1, t0)
		mustWrite(t, s, a1, a2, b1, b0, newExec("c", 0, t0.Add(2*time.Hour)))
		got, err := s.LastExecutions(testCtx(t), []string{"a", "b", "none"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got["a"].ID != a2.ID || got["b"].ID != b1.ID {
			t.Fatalf("got %v, want a=%s b=%s", got, a2.ID, b1.ID)
		}
		if !reflect.DeepEqual(got["a"], sanitizeExecution(a2)) {
			t.Errorf("a: got %+v", got["a"])
		}
		if b := got["b"]; b.Done() {
			t.Errorf("b's last execution should still be running: %+v", got["b"])
		}
	})
}

func TestPrune(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		ctx := testCtx(t)
		var old, young []ejserver.Execution
		for i := range 5 {
			old = append(old, newExec("p", i, t0.Add(-time.Duration(i+1)*time.Hour)))
			young = append(young, newExec("p", i, t0.Add(time.Duration(i)*time.Second)))
		}
		mustWrite(t, s, append(old, young...)...)
		traces := []ejserver.StatusTrace{
			{ID: "t-old", JobName: "p", TaskID: "x", State: ejserver.TaskRunning, CreationTime: t0.Add(-time.Hour)},
			{ID: "t-young", JobName: "p", TaskID: "x", State: ejserver.TaskRunning, CreationTime: t0},
		}
		if err := s.WriteTraces(ctx, traces); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prune(ctx, t0, 0); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
			t.Fatalf("batch 0: got %v, want EINVALID", err)
		}
		var total int64
		for range 10 {
			n, err := s.Prune(ctx, t0, 2)
			if err != nil {
				t.Fatal(err)
			}
			if n > 4 {
				t.Fatalf("one prune deleted %d rows, want at most 2 per table", n)
			}
			if n == 0 {
				break
			}
			total += n
		}
		if total != 6 {
			t.Errorf("pruned %d rows, want 6 (5 executions and 1 trace)", total)
		}
		p, err := s.ListExecutions(ctx, ExecutionFilter{JobName: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(p.Items), len(young); got != want {
			t.Errorf("%d executions left, want %d", got, want)
		}
		tr, err := s.ListTraces(ctx, TraceFilter{JobName: "p"})
		if err != nil || len(tr) != 1 || tr[0].ID != "t-young" {
			t.Errorf("traces left: %+v, %v", tr, err)
		}
	})
}

func TestPing(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		if err := s.Ping(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	})
}

// A token's scope is in the query: prefixes compare exactly (no LIKE wildcards, case kept), names join
// them, and paging over a scoped list neither skips nor repeats a row.
func TestListExecutionsJobSet(t *testing.T) {
	t.Parallel()
	var all []ejserver.Execution
	add := func(job string, sec int) ejserver.Execution {
		e := newExec(job, 0, t0.Add(time.Duration(sec)*time.Second))
		all = append(all, e)
		return e
	}
	a1 := add("t_a-1", 1)
	add("txa-1", 2) // '_' in a prefix is not a wildcard
	add("T_A-2", 3) // nor is the case ignored
	a2 := add("t_a-2", 4)
	pay := add("billing", 5)
	add("other", 6)
	a3 := add("t_a-3", 7)

	tests := []struct {
		name string
		set  JobSet
		want []ejserver.Execution
	}{
		{"prefix", JobSet{Prefixes: []string{"t_a-"}}, []ejserver.Execution{a3, a2, a1}},
		{"prefix or name", JobSet{Prefixes: []string{"t_a-"}, Names: []string{"billing"}}, []ejserver.Execution{a3, pay, a2, a1}},
		{"names", JobSet{Names: []string{"billing", "gone"}}, []ejserver.Execution{pay}},
		{"empty set holds nothing", JobSet{}, nil},
	}
	eachStore(t, func(t *testing.T, s Store) {
		mustWrite(t, s, all...)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				set := tt.set
				p, err := s.ListExecutions(testCtx(t), ExecutionFilter{Jobs: &set})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := ids(p.Items), ids(tt.want); !slices.Equal(got, want) {
					t.Fatalf("got %v\nwant %v", got, want)
				}
			})
		}
		t.Run("paged", func(t *testing.T) {
			set := JobSet{Prefixes: []string{"t_a-"}, Names: []string{"billing"}}
			var got []string
			cursor := ""
			for range 10 {
				p, err := s.ListExecutions(testCtx(t), ExecutionFilter{Jobs: &set, Limit: 1, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ids(p.Items)...)
				if cursor = p.NextCursor; cursor == "" {
					break
				}
			}
			if want := ids([]ejserver.Execution{a3, pay, a2, a1}); !slices.Equal(got, want) {
				t.Fatalf("pages %v\nwant %v", got, want)
			}
		})
	})
}
