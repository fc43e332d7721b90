package rollup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFrontierCounted(t *testing.T) {
	const min = 60_000_000
	f := Frontier{Minute: 100, Job: "m"}
	for _, c := range []struct {
		name string
		r    Row
		want bool
	}{
		{"an earlier minute, any job", Row{Job: "z", Start: 99*min + min - 1}, true},
		{"the frontier's minute, a job before its", Row{Job: "a", Start: 100 * min}, true},
		{"the frontier's minute, its job", Row{Job: "m", Start: 100*min + 5}, true},
		{"the frontier's minute, a job after its", Row{Job: "mm", Start: 100*min + 5}, false},
		{"a later minute, an early job", Row{Job: "a", Start: 101 * min}, false},
	} {
		if got := f.Counted(c.r); got != c.want {
			t.Errorf("%s: Counted = %v, want %v", c.name, got, c.want)
		}
	}
	if (Frontier{Minute: 100}).Counted(Row{Job: "a", Start: 100 * min}) {
		t.Error("a frontier without a job counts none of its minute")
	}
}

func TestFrontierFilter(t *testing.T) {
	const min = 60_000_000
	rows := []Row{{Job: "a", Start: 1 * min}, {Job: "b", Start: 2 * min}, {Job: "c", Start: 1 * min}, {Job: "a", Start: 2 * min}}
	if got := (Frontier{Minute: 3}).Filter(rows); &got[0] != &rows[0] || len(got) != 4 {
		t.Errorf("all counted: got %v, want rows itself", got)
	}
	got := (Frontier{Minute: 2, Job: "a"}).Filter(rows)
	want := []Row{rows[0], rows[2], rows[3]}
	if !slices.Equal(got, want) {
		t.Errorf("Filter = %v, want %v", got, want)
	}
	if rows[1].Job != "b" {
		t.Error("Filter changed its input")
	}
	if got := (Frontier{Minute: 0}).Filter(rows); len(got) != 0 {
		t.Errorf("none counted: %v", got)
	}
}

func TestDueMinute(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 29, 0, time.UTC)
	m := now.Unix() / 60
	for _, c := range []struct {
		now  time.Time
		want int64
	}{
		{now, m - 1}, // 11:59 ended 29 s ago: not settled
		{now.Add(time.Second), m},
		{now.Add(time.Minute + time.Second), m + 1},
	} {
		if got := DueMinute(c.now, 30*time.Second); got != c.want {
			t.Errorf("DueMinute(%s) = %d, want %d", c.now.Format(time.TimeOnly), got, c.want)
		}
	}
}

func TestBehind(t *testing.T) {
	const m = int64(29_000_000)
	end := time.Unix((m+1)*60, 0) // the minute's end
	for _, c := range []struct {
		now  time.Time
		want time.Duration
	}{
		{end.Add(-time.Minute), 0},
		{end, 0},
		{end.Add(30 * time.Second), 0}, // due now
		{end.Add(31 * time.Second), time.Second},
		{end.Add(10*time.Minute + 30*time.Second), 10 * time.Minute},
	} {
		got := Behind(m, c.now, 30*time.Second)
		if got != c.want {
			t.Errorf("Behind at %s = %s, want %s", c.now.Sub(end), got, c.want)
		}
		if due := DueMinute(c.now, 30*time.Second) > m; got > 0 && !due {
			t.Errorf("Behind at %s = %s for a minute DueMinute does not count yet", c.now.Sub(end), got)
		}
	}
}

// jobRows parses "a:2 b c:3" (a job's rows, 1 when not given).
func jobRows(t testing.TB, s string) []JobRows {
	var out []JobRows
	for _, f := range strings.Fields(s) {
		name, n, ok := strings.Cut(f, ":")
		rows := 1
		if ok {
			var err error
			if rows, err = strconv.Atoi(n); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, JobRows{Job: name, Rows: rows})
	}
	return out
}

func TestChunk(t *testing.T) {
	for _, c := range []struct {
		jobs   string
		budget int
		n      int
	}{
		{"", 4, 0},
		{"a:2 b", 4, 2},       // all of the minute's rows fit
		{"a:2 b c", 4, 3},     // exactly the budget
		{"a:2 b c:2", 4, 2},   // c would pass the budget: left for the next chunk
		{"a:2 b:2 c", 4, 2},   // the budget ends at a job's end
		{"a:5", 4, 1},         // one job over the budget: whole, on its own
		{"a:5 b", 4, 1},       // and alone
		{"a b:5", 4, 1},       // the job after a is over the budget: a alone
		{"a b c d e f", 1, 1}, // a budget of one row
		{"a:2 b", 0, 0},       // no budget: nothing
		{"a:2 b", -1, 0},
		{"p:2 q:3 r", 5, 2},
		{"p:2 q:3 r:2", 7, 3},
		{"p q r s t u v w", 100, 8},
		{"p:0 q:0 r:4", 4, 3}, // jobs whose rows went since the plan was read cost nothing
	} {
		if n := Chunk(jobRows(t, c.jobs), c.budget); n != c.n {
			t.Errorf("Chunk(%q, %d) = %d, want %d", c.jobs, c.budget, n, c.n)
		}
	}
}

func TestPlanAhead(t *testing.T) {
	p := Plan{Minute: 7, Jobs: jobRows(t, "b c:2 e")}
	for _, c := range []struct {
		f    Frontier
		want string
	}{
		{Frontier{Minute: 7}, "b c:2 e"},
		{Frontier{Minute: 7, Job: "a"}, "b c:2 e"},
		{Frontier{Minute: 7, Job: "b"}, "c:2 e"},
		{Frontier{Minute: 7, Job: "bb"}, "c:2 e"}, // names, not prefixes
		{Frontier{Minute: 7, Job: "d"}, "e"},
		{Frontier{Minute: 7, Job: "e"}, ""},
		{Frontier{Minute: 7, Job: "z"}, ""},
		{Frontier{Minute: 8}, ""}, // another minute's plan says nothing
		{Frontier{Minute: 6, Job: "a"}, ""},
	} {
		got, want := p.Ahead(c.f), jobRows(t, c.want)
		if len(got) != len(want) || len(want) > 0 && !slices.Equal(got, want) {
			t.Errorf("Ahead(%+v) = %v, want %v", c.f, got, want)
		}
	}
}

// FuzzChunk: a chunk is whole jobs within the budget, or the first job alone; the job after it would pass
// the budget; it is empty only when there is no job or no budget.
func FuzzChunk(f *testing.F) {
	f.Add([]byte{2, 1, 3, 1}, 3)
	f.Add([]byte{5}, 2)
	f.Add([]byte{}, 1)
	f.Add([]byte{0, 0, 9}, 4)
	f.Fuzz(func(t *testing.T, counts []byte, budget int) {
		if budget < -1 || budget > 1000 {
			return
		}
		jobs := make([]JobRows, len(counts))
		for i, c := range counts {
			jobs[i] = JobRows{Job: fmt.Sprintf("j%03d", i), Rows: int(c)}
		}
		n := Chunk(jobs, budget)
		if (n == 0) != (len(jobs) == 0 || budget <= 0) {
			t.Fatalf("n = %d of %d jobs, budget %d", n, len(jobs), budget)
		}
		if n > len(jobs) {
			t.Fatalf("n = %d of %d jobs", n, len(jobs))
		}
		rows := 0
		for _, j := range jobs[:n] {
			rows += j.Rows
		}
		if n > 1 && rows > budget {
			t.Fatalf("%d jobs of %d rows over the budget %d", n, rows, budget)
		}
		if n > 0 && n < len(jobs) && rows+jobs[n].Rows <= budget {
			t.Fatalf("chunk of %d jobs (%d rows) stops before job %d (%d rows), budget %d", n, rows, n, jobs[n].Rows, budget)
		}
	})
}
