package rollup

import (
	"slices"
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

func TestChunk(t *testing.T) {
	jobs := func(names string) []Row {
		var out []Row
		for _, n := range strings.Fields(names) {
			out = append(out, Row{Job: n})
		}
		return out
	}
	for _, c := range []struct {
		rows   string
		budget int
		n      int
		more   bool
	}{
		{"", 4, 0, false},
		{"a a b", 4, 3, false},
		{"a a b c", 4, 4, false},        // all of the minute's rows fit
		{"a a b c c", 4, 3, true},       // c cut by the budget: left for the next chunk
		{"a a b b c", 4, 4, true},       // the budget ends at a job's end
		{"a a a a a", 4, 0, true},       // one job over the budget: read whole by the caller
		{"a b b b b b", 4, 1, true},     // the job after a is over the budget: a alone
		{"a b c d e f g h", 1, 1, true}, // a budget of one row
		{"a a b", 0, 0, true},           // no budget: nothing
		{"aa ab ab", 2, 1, true},        // names, not prefixes
		{"x", 1, 1, false},              // exactly the budget
		{"x y", 1, 1, true},             // the budget ends at a job's end
		{"x x", 1, 0, true},             // one job over a budget of one
		{"p p q q q r", 5, 5, true},     // the budget ends at q's end
		{"p p q q q r", 4, 2, true},     // q cut: only p
		{"p p q q q r r", 6, 5, true},   // r cut
		{"p p q q q r r", 7, 7, false},  // all
		{"p q r s t u v w", 100, 8, false},
	} {
		rows := jobs(c.rows)
		n, more := Chunk(rows, c.budget)
		if n != c.n || more != c.more {
			t.Errorf("Chunk(%q, %d) = %d, %v; want %d, %v", c.rows, c.budget, n, more, c.n, c.more)
		}
	}
}

// FuzzChunk: a chunk is whole jobs within the budget, the rows after it begin a new job, and it is empty only
// when the first job alone is over the budget (or there is no budget).
func FuzzChunk(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 2, 2, 3}, 3)
	f.Add([]byte{5, 5, 5, 5}, 2)
	f.Add([]byte{}, 1)
	f.Fuzz(func(t *testing.T, js []byte, budget int) {
		if budget < 0 || budget > 1000 {
			return
		}
		slices.Sort(js)
		rows := make([]Row, min(len(js), budget+1)) // what the caller reads: at most budget+1 rows
		for i := range rows {
			rows[i] = Row{Job: string(rune('a' + js[i]%26))}
		}
		n, more := Chunk(rows, budget)
		if n < 0 || n > budget || n > len(rows) {
			t.Fatalf("n = %d of %d rows, budget %d", n, len(rows), budget)
		}
		if more != (len(rows) > budget) {
			t.Fatalf("more = %v with %d rows read, budget %d", more, len(rows), budget)
		}
		if n < len(rows) && n > 0 && rows[n].Job == rows[n-1].Job {
			t.Fatalf("job %q cut at %d", rows[n].Job, n)
		}
		if n == 0 && len(rows) > 0 && budget > 0 {
			for _, r := range rows[:budget] {
				if r.Job != rows[0].Job {
					t.Fatalf("empty chunk though %q fits the budget %d", rows[0].Job, budget)
				}
			}
		}
	})
}
