package history

import (
	"context"
	"time"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// The stats read the rollup of migration 0009 (EXECUTION_STATS_MINUTE, EXECUTION_FIRES_MINUTE,
// EXECUTION_STATS_HIST), or, for cluster stats no job scope narrows, the level above it of migration 0010 (the
// same per peer, every job added up: EXECUTION_PEER_STATS_MINUTE, EXECUTION_CLUSTER_FIRES_MINUTE,
// EXECUTION_PEER_STATS_HIST). Both stores count them a minute at a time behind a frontier (rollup_frontier.go):
// SQLite's writer in Go (sqlite_rollup.go, migration 0011), PostgreSQL's triggers and ejs_rollup_count
// (migrations 0009, 0020, 0021). They read it for the whole minutes and hours of a
// window, and the rows for its edges: a window [From, To) reads the rows of [From, the first whole minute) and
// [the last whole minute's end, To), and the minute rollup in between; the percentiles read the hour rollup
// for the whole hours and the rows for the rest. The buckets read the minute rollup when From and the bucket
// are whole minutes (else every bucket reads the rows). The answers are those the rows give: counts and sums
// add up, a largest value is the largest of the parts', and histogram bins add up (percentiles stay
// nearest-rank to 3 significant digits).

// statsPlan is how a window is read.
type statsPlan struct {
	// minutes are the whole minutes the minute rollup answers for ([0] < [1]; none when equal), in epoch minutes;
	// minuteEdges are the rest of the window, read from the rows.
	minutes     [2]int64
	minuteEdges []span
	// hours and hourEdges are the same for the histograms.
	hours     [2]int64
	hourEdges []span
	// rollupBuckets: the buckets read the minute rollup (From and the bucket are whole minutes).
	rollupBuckets bool
}

// planStats splits sq's window between the rollup and the rows; without useRollup every part reads the rows.
// front is how far the rollup has counted the rows (SQLite's migration 0017, PostgreSQL's 0021; nil: every
// row): the rows of the rollup's periods it has not counted are read beside the cells.
func planStats(sq StatsQuery, useRollup bool, front *rollup.Frontier) statsPlan {
	from, to := normalize(sq.From), normalize(sq.To)
	var p statsPlan
	split := func(unit time.Duration) ([2]int64, []span) {
		a, b := from.Truncate(unit), to.Truncate(unit)
		if a.Before(from) {
			a = a.Add(unit)
		}
		if !useRollup || !a.Before(b) {
			return [2]int64{}, []span{{from: from, to: to}}
		}
		var edges []span
		if from.Before(a) {
			edges = append(edges, span{from: from, to: a})
		}
		if b.Before(to) {
			edges = append(edges, span{from: b, to: to})
		}
		return [2]int64{a.Unix() / int64(unit/time.Second), b.Unix() / int64(unit/time.Second)}, edges
	}
	p.minutes, p.minuteEdges = split(time.Minute)
	p.hours, p.hourEdges = split(time.Hour)
	if front != nil {
		p.minuteEdges = append(p.minuteEdges, uncounted(p.minutes, time.Minute, *front)...)
		p.hourEdges = append(p.hourEdges, uncounted(p.hours, time.Hour, *front)...)
	}
	p.rollupBuckets = useRollup && from.Equal(from.Truncate(time.Minute)) && sq.Bucket%time.Minute == 0
	return p
}

// uncounted is where the rows of the periods r (of unit, in epoch units) that front has not counted are: from
// the frontier's minute (its jobs up to front.Job excepted) or r's start, whichever is later, to r's end.
func uncounted(r [2]int64, unit time.Duration, front rollup.Frontier) []span {
	if r[0] == r[1] {
		return nil
	}
	from, to := time.Unix(r[0]*int64(unit/time.Second), 0).UTC(), time.Unix(r[1]*int64(unit/time.Second), 0).UTC()
	edge := time.Unix(front.Minute*60, 0).UTC()
	if !edge.Before(to) {
		return nil
	}
	if edge.Before(from) {
		return []span{{from: from, to: to}}
	}
	out := span{from: edge, to: to}
	if front.Job != "" {
		out.countedUpTo = front.Job
	}
	return []span{out}
}

// statsAggregator reads one stats call's groups.
type statsAggregator struct {
	run    runQuery
	s      statsSQL
	sq     StatsQuery
	oneJob bool
	plan   statsPlan
}

// rollupTables are the tables of one level of the rollup: counts per minute, fires per minute, histograms
// per hour.
type rollupTables struct{ minute, fires, hist string }

var (
	// jobRollup is migration 0009's level: per job (and peer).
	jobRollup = rollupTables{"EXECUTION_STATS_MINUTE", "EXECUTION_FIRES_MINUTE", "EXECUTION_STATS_HIST"}
	// peerRollup is migration 0010's: per peer, every job added up.
	peerRollup = rollupTables{"EXECUTION_PEER_STATS_MINUTE", "EXECUTION_CLUSTER_FIRES_MINUTE", "EXECUTION_PEER_STATS_HIST"}
)

// tables is the level a's query reads: the peers' when it spans every job (no job, no job scope).
func (a statsAggregator) tables() rollupTables {
	if !a.oneJob && a.sq.Jobs == nil {
		return peerRollup
	}
	return jobRollup
}

// bucketsAndTotal reads the counts per bucket and over the window.
func (a statsAggregator) bucketsAndTotal(ctx context.Context) (groups, *group, error) {
	bucketKey := func(q *query) string { return a.s.bucketKey(q, a.sq) }
	byBucket, all := groups{}, groups{}
	if !a.plan.rollupBuckets {
		if err := rawCounts(ctx, a.run, a.s, a.sq, span{from: a.sq.From, to: a.sq.To}, a.oneJob, bucketKey, byBucket); err != nil {
			return nil, nil, err
		}
		if err := a.counts(ctx, wholeKey, wholeKey, false, all); err != nil {
			return nil, nil, err
		}
		return byBucket, all.get(""), nil
	}
	// whole minutes in whole buckets: the window is the sum of its buckets
	rollupKey := func(q *query) string {
		return "((minute * 60000000 - " + q.arg(micros(normalize(a.sq.From))) + ") / " + q.arg(a.sq.Bucket.Microseconds()) + ")"
	}
	if err := a.counts(ctx, bucketKey, rollupKey, false, byBucket); err != nil {
		return nil, nil, err
	}
	whole := all.get("")
	for _, g := range byBucket {
		whole.add(g.acc)
	}
	return byBucket, whole, nil
}

// counts adds the counts grouped by rawKey (on the rows) and rollupKey (on the rollup's columns) to gs. With
// peerFires the fires are those of the group's peer (rollupKey is instance_id); else those of the jobs.
func (a statsAggregator) counts(ctx context.Context, rawKey, rollupKey func(*query) string, peerFires bool, gs groups) error {
	for _, e := range a.plan.minuteEdges {
		if err := rawCounts(ctx, a.run, a.s, a.sq, e, a.oneJob, rawKey, gs); err != nil {
			return err
		}
	}
	if a.plan.minutes[0] == a.plan.minutes[1] {
		return nil
	}
	fires := "0"
	if peerFires {
		fires = "CAST(SUM(peer_fires) AS BIGINT)"
	}
	sum := func(c string) string { return ", CAST(SUM(" + c + ") AS BIGINT)" }
	q := &query{d: a.s.d}
	q.write("SELECT CAST(", rollupKey(q), " AS TEXT), ", fires, sum("items"), sum("success"), sum("failure"), sum("running"),
		sum("misfire"), sum("failover"), sum("manual"), sum("dur_n"), sum("dur_sum"), ", MAX(dur_max)", sum("late_n"),
		sum("late_sum"), ", MAX(late_max), MAX(hostname), MAX(ip)")
	a.rollupFrom(q, a.tables().minute, "minute", a.plan.minutes)
	q.write(" GROUP BY 1 HAVING SUM(items) <> 0")
	err := a.run(ctx, q, func(row rowScanner) error {
		k, c, err := scanAcc(row)
		if err == nil {
			gs.get(k).add(c)
		}
		return err
	})
	if err != nil || peerFires {
		return err
	}
	// the jobs' fires: a fire with items on two peers is one
	f := &query{d: a.s.d}
	f.write("SELECT CAST(", rollupKey(f), " AS TEXT), CAST(SUM(fires) AS BIGINT)")
	a.rollupFrom(f, a.tables().fires, "minute", a.plan.minutes)
	f.write(" GROUP BY 1")
	return a.run(ctx, f, func(row rowScanner) error {
		var (
			k string
			n int64
		)
		if err := row.Scan(&k, &n); err != nil {
			return err
		}
		if g, ok := gs[k]; ok {
			g.fires += n
		}
		return nil
	})
}

// rollupFrom writes the FROM clause of a read of table's cells of the periods r (col: minute or hour) and the
// conditions: the range, and the job or the job set. Where the job level is keyed by the period first
// (SQLite), a job's cells, or those of a set of names, are read a period at a time: a range of the periods
// would read every job's cells in it (100,000 a minute at 100,000 jobs), so the periods are listed (a
// recursive CTE, ~1,440 a day of minutes) and each seeks (period, job). A set with prefixes reads the range.
func (a statsAggregator) rollupFrom(q *query, table, col string, r [2]int64) {
	perPeriod := a.s.d.rollupTimeFirst && a.tables() == jobRollup &&
		(a.oneJob || a.sq.Jobs != nil && len(a.sq.Jobs.Prefixes) == 0)
	if perPeriod {
		q.write(" FROM (WITH RECURSIVE periods(p) AS (SELECT ", q.arg(r[0]), " UNION ALL SELECT p + 1 FROM periods WHERE p + 1 < ",
			q.arg(r[1]), ") SELECT p FROM periods) AS periods CROSS JOIN ", table)
		q.where(table + "." + col + " = periods.p")
	} else {
		q.write(" FROM ", table)
		q.where(col + " >= " + q.arg(r[0]))
		q.where(col + " < " + q.arg(r[1]))
	}
	if a.oneJob {
		q.where("job_name = " + q.arg(a.sq.Job))
	}
	if a.sq.Jobs != nil {
		q.where(q.jobSet(*a.sq.Jobs))
	}
}

// histograms adds the histograms of duration and lateness grouped by rawKey (on the rows) and rollupKey (on the
// hour rollup's columns: ” or instance_id) to gs.
func (a statsAggregator) histograms(ctx context.Context, rawKey, rollupKey func(*query) string, gs groups) error {
	for _, e := range a.plan.hourEdges {
		if err := rawHistograms(ctx, a.run, a.s, a.sq, e, a.oneJob, rawKey, gs); err != nil {
			return err
		}
	}
	if a.plan.hours[0] == a.plan.hours[1] {
		return nil
	}
	q := &query{d: a.s.d}
	q.write("SELECT CAST(", rollupKey(q), " AS TEXT), kind, bin, CAST(SUM(n) AS BIGINT)")
	a.rollupFrom(q, a.tables().hist, "hour", a.plan.hours)
	q.write(" GROUP BY 1, 2, 3 HAVING SUM(n) <> 0")
	return a.run(ctx, q, func(row rowScanner) error {
		var (
			k, kind string
			bin, n  int64
		)
		if err := row.Scan(&k, &kind, &bin, &n); err != nil {
			return err
		}
		g := gs.get(k)
		if kind == "d" {
			g.dur[bin] += n
		} else {
			g.late[bin] += n
		}
		return nil
	})
}

// pruneRollup deletes the rollup's cells that pruning emptied, of the periods (unit) before the one the
// prune's cut-off falls in (a cell of that period may still fill); ? is the period, in epoch minutes or hours.
var pruneRollup = []struct {
	stmt string
	unit time.Duration
}{
	{"DELETE FROM EXECUTION_STATS_MINUTE WHERE minute < ? AND items = 0", time.Minute},
	{"DELETE FROM EXECUTION_FIRES_MINUTE WHERE minute < ? AND fires = 0", time.Minute},
	{"DELETE FROM EXECUTION_STATS_HIST WHERE hour < ? AND n = 0", time.Hour},
	// after the job level's: the peers' cells empty with their jobs' (whose deletes leave them alone)
	{"DELETE FROM EXECUTION_PEER_STATS_MINUTE WHERE minute < ? AND items = 0", time.Minute},
	{"DELETE FROM EXECUTION_CLUSTER_FIRES_MINUTE WHERE minute < ? AND fires = 0", time.Minute},
	{"DELETE FROM EXECUTION_PEER_STATS_HIST WHERE hour < ? AND n = 0", time.Hour},
}

// rollupPeriod is the epoch minute or hour (unit) t falls in.
func rollupPeriod(t time.Time, unit time.Duration) int64 {
	return t.Unix() / int64(unit/time.Second)
}
