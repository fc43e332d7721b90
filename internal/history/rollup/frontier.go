package rollup

import (
	"sort"
	"time"
)

// Frontier is how far the rollup has counted the execution rows: every row that started in a minute before
// Minute, and the rows of Minute whose job's name is at most Job (none of Minute's when Job is ""). The stores'
// writes move it over a minute once the minute is over, a chunk of whole jobs at a time (Chunk), so that the
// minute's cells are written in their key's order, once, instead of an item's cells one batch at a time at
// places scattered over the tables. A row the rollup counts changes its cells as before (Aggregate), a row it
// does not count yet changes nothing, and the stats read the rows it does not count beside the cells.
//
// A job's rows of one minute are all counted or none: a fire's rows of a minute, which the distinct fires
// count, never straddle the frontier.
type Frontier struct {
	Minute int64
	Job    string
}

// Counted reports whether the rollup counts r.
func (f Frontier) Counted(r Row) bool {
	m := r.Minute()
	return m < f.Minute || m == f.Minute && f.Job != "" && r.Job <= f.Job
}

// Filter returns the rows of rows the rollup counts (rows itself when it counts them all).
func (f Frontier) Filter(rows []Row) []Row {
	for i, r := range rows {
		if !f.Counted(r) {
			out := append([]Row(nil), rows[:i]...)
			for _, r := range rows[i+1:] {
				if f.Counted(r) {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return rows
}

// DueMinute is the first minute whose rows are not yet due to be counted at now: a minute is counted settle
// after its end, when the rows of its items have nearly all been written (a row written later goes through
// Aggregate's way, as every row did before).
func DueMinute(now time.Time, settle time.Duration) int64 {
	return Row{Start: now.Add(-settle).UnixMicro()}.Minute()
}

// Behind is how long ago, at now, the rows of minute were due to be counted (settle after its end); 0 when
// they are not due yet.
func Behind(minute int64, now time.Time, settle time.Duration) time.Duration {
	due := time.Unix((minute+1)*60, 0).Add(settle)
	return max(now.Sub(due), 0)
}

// JobRows is how many rows a job has in a minute that the rollup has not counted.
type JobRows struct {
	Job  string
	Rows int
}

// Plan is a minute's jobs that the rollup has not counted, in their name's order, as the writer read them once
// for the minute: where the frontier's chunks of the minute end. It is only a plan: a chunk counts the rows
// the store holds for its jobs when it is counted (rows written since the plan was read included).
type Plan struct {
	Minute int64
	Jobs   []JobRows
}

// Ahead returns the jobs of the plan that f has not reached (none when the plan is of another minute).
func (p Plan) Ahead(f Frontier) []JobRows {
	if p.Minute != f.Minute {
		return nil
	}
	i := sort.Search(len(p.Jobs), func(i int) bool { return p.Jobs[i].Job > f.Job })
	return p.Jobs[i:]
}

// Chunk is how many of a minute's jobs (jobs, in their name's order) the frontier moves over at once: whole
// jobs, as many as fit in budget rows, and at least the first one when there is a budget (a job with more
// rows than the budget is counted whole, on its own).
func Chunk(jobs []JobRows, budget int) int {
	if budget <= 0 || len(jobs) == 0 {
		return 0
	}
	n, rows := 1, jobs[0].Rows
	for n < len(jobs) && rows+jobs[n].Rows <= budget {
		rows += jobs[n].Rows
		n++
	}
	return n
}
