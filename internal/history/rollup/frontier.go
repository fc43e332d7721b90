package rollup

import "time"

// Frontier is how far the rollup has counted the execution rows: every row that started in a minute before
// Minute, and the rows of Minute whose job's name is at most Job (none of Minute's when Job is ""). SQLite's
// writer moves it over a minute once the minute is over, a chunk of whole jobs at a time (Chunk), so that the
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

// Chunk is how many of a minute's uncounted rows, read in their job's order (at most budget+1 of them), the
// frontier moves over at once: whole jobs only, as many as fit in budget. more says that the minute has rows
// after those n. When the first job alone has more than budget rows, n is 0 and more is true: the caller
// reads that job's rows of the minute whole and counts them on their own.
func Chunk(rows []Row, budget int) (n int, more bool) {
	if len(rows) <= budget {
		return len(rows), false
	}
	last := rows[budget].Job // read past the budget: the job the budget may have cut
	n = budget
	for n > 0 && rows[n-1].Job == last {
		n--
	}
	return n, true
}
