package history

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history/rollup"
)

// Stats are the aggregates the console's charts draw, computed in SQL by the store (SQLite and PostgreSQL run
// the same statements): counts with GROUP BY, and for percentiles a histogram per group (GROUP BY group, bin,
// where a value's bin is the value rounded down to 3 significant digits). The percentile is then read off the
// histogram by nearest rank (the bin of the value at rank ceil(p·n/100) of the n values sorted): exact for
// values under 1,000 ms, and at most 1% under the true value above. Durations count ended items only;
// lateness is an item's start minus its fire's scheduled time.
type Stats interface {
	// JobStats aggregates one job's executions that started in [From, To) per bucket and over the window.
	JobStats(ctx context.Context, q StatsQuery) (JobStats, error)
	// JobPoints returns one job's executions that started in [From, To), oldest first, as chart points: at
	// most MaxPoints of them (Truncated says there were more).
	JobPoints(ctx context.Context, q StatsQuery) (PointList, error)
	// ClusterStats aggregates every job's executions (those of q.Jobs when set) per bucket and per peer.
	ClusterStats(ctx context.Context, q StatsQuery) (ClusterStats, error)
	// Shared reports whether the store holds every peer's history (PostgreSQL) or this peer's alone (SQLite).
	Shared() bool
}

// Bounds of a stats query.
const (
	MaxStatsWindow = 31 * 24 * time.Hour
	MinBucket      = time.Second
	MaxBuckets     = 10_000
	MaxPoints      = 20_000
)

// StatsQuery selects the executions a stats call aggregates.
type StatsQuery struct {
	// Job is the job (JobStats, JobPoints); ClusterStats ignores it.
	Job string
	// Jobs, when not nil, keeps only these jobs' executions (an API token's scope), in the query.
	Jobs *JobSet
	// From and To bound start_time: From <= start_time < To.
	From, To time.Time
	// Bucket is the width of a bucket; From is the start of the first one.
	Bucket time.Duration
}

// CheckStatsQuery checks the window and the bucket: a window from 1 s to MaxStatsWindow, a bucket of at least
// MinBucket, a whole number of seconds, and at most MaxBuckets buckets. points skips the bucket's checks.
func CheckStatsQuery(q StatsQuery, points bool) error {
	w := q.To.Sub(q.From)
	switch {
	case q.From.IsZero() || q.To.IsZero():
		return ejserver.Invalid("window", "from and to are both needed")
	case w < time.Second:
		return ejserver.Invalid("window", "must be at least 1s, not %s", w)
	case w > MaxStatsWindow:
		return ejserver.Invalid("window", "must be at most %s (31 days), not %s", MaxStatsWindow, w)
	}
	if points {
		return nil
	}
	switch {
	case q.Bucket < MinBucket || q.Bucket%time.Second != 0:
		return ejserver.Invalid("bucket", "must be a whole number of seconds, at least 1s, not %s", q.Bucket)
	case (w+q.Bucket-1)/q.Bucket > MaxBuckets:
		return ejserver.Invalid("bucket", "gives %d buckets over the window; at most %d: widen the bucket", (w+q.Bucket-1)/q.Bucket, MaxBuckets)
	}
	return nil
}

// Aggregate is what a bucket, a window or a peer counts. The percentiles are milliseconds, nil without values.
type Aggregate struct {
	// Fires counts distinct (job, scheduled time) pairs in each minute of start time: a fire whose items
	// started in two minutes counts once in each (in a bucket or a total that holds both as well), as the
	// per-minute rollup counts them.
	Fires   int64 `json:"fires"`
	Items   int64 `json:"items"`
	Success int64 `json:"success"`
	Failure int64 `json:"failure"`
	Running int64 `json:"running"`
	// Misfire, Failover and Manual count the items of those sources (whatever their outcome).
	Misfire  int64 `json:"misfire"`
	Failover int64 `json:"failover"`
	Manual   int64 `json:"manual"`
	// The mean (rounded down) and the largest duration and lateness, in every aggregate.
	DurationAvg *int64 `json:"durationAvgMs" extensions:"x-nullable"`
	DurationMax *int64 `json:"durationMaxMs" extensions:"x-nullable"`
	LatenessAvg *int64 `json:"latenessAvgMs" extensions:"x-nullable"`
	LatenessMax *int64 `json:"latenessMaxMs" extensions:"x-nullable"`
	// The percentiles: in a window's total and per peer, not per bucket (null there).
	DurationP50 *int64 `json:"durationP50Ms" extensions:"x-nullable"`
	DurationP99 *int64 `json:"durationP99Ms" extensions:"x-nullable"`
	LatenessP50 *int64 `json:"latenessP50Ms" extensions:"x-nullable"`
	LatenessP99 *int64 `json:"latenessP99Ms" extensions:"x-nullable"`
}

// Bucket is the aggregate of the executions that started in [Start, Start+bucket).
type Bucket struct {
	Start time.Time `json:"start"`
	Aggregate
}

// JobStats is one job's window: buckets (every bucket of the window, empty ones included) and the total.
type JobStats struct {
	Job     string    `json:"job"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Bucket  string    `json:"bucket"`
	Total   Aggregate `json:"total"`
	Buckets []Bucket  `json:"buckets"`
}

// Point is one execution as the job chart draws it.
type Point struct {
	ID           string          `json:"id"`
	StartedAt    time.Time       `json:"startedAt"`
	ScheduledAt  time.Time       `json:"scheduledAt,omitzero"`
	DurationMs   int64           `json:"durationMs"`
	LatenessMs   int64           `json:"latenessMs"`
	Done         bool            `json:"done"`
	Success      bool            `json:"success"`
	Source       ejserver.Source `json:"source"`
	ShardingItem int             `json:"shardingItem"`
	InstanceID   string          `json:"instanceId"`
}

// Outcome is the class a chart colours a point by: running, failure, then the source when it is not a
// normal trigger (misfire, failover, manual), else success.
func (p Point) Outcome() string {
	switch {
	case !p.Done:
		return "running"
	case !p.Success:
		return "failure"
	case p.Source == ejserver.SourceMisfire:
		return "misfire"
	case p.Source == ejserver.SourceFailover:
		return "failover"
	case p.Source.OnRequest(): // MANUAL, or a workflow node's fire: both on request
		return "manual"
	case p.Source == ejserver.SourceBackfill:
		return "backfill"
	}
	return "success"
}

// PointList is a job's points, oldest first.
type PointList struct {
	Job       string  `json:"job"`
	Points    []Point `json:"points"`
	Truncated bool    `json:"truncated"`
}

// PeerStats is what one peer (instance) executed in the window.
type PeerStats struct {
	InstanceID string `json:"instanceId"`
	Hostname   string `json:"hostname"`
	IP         string `json:"ip"`
	Aggregate
}

// ClusterStats is every job's window: per bucket, the total and per peer.
type ClusterStats struct {
	From    time.Time   `json:"from"`
	To      time.Time   `json:"to"`
	Bucket  string      `json:"bucket"`
	Total   Aggregate   `json:"total"`
	Buckets []Bucket    `json:"buckets"`
	Peers   []PeerStats `json:"peers"`
}

// rowScanner is what both drivers' result sets offer.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// runQuery runs q and calls each for every row; the stores supply it.
type runQuery func(ctx context.Context, q *query, each func(rowScanner) error) error

// statsSQL builds the statements of the stats: over the rows (this file) and over the rollup
// (stats_rollup.go).
type statsSQL struct{ d dialect }

// span is a range of start_time, [from, to); with countedUpTo, without the rows of its first minute whose job's
// name is at most that (the rollup counts them: the frontier's minute).
type span struct {
	from, to    time.Time
	countedUpTo string
}

// window adds the common conditions: the job or the job set, and the start_time range.
func (s statsSQL) window(q *query, sq StatsQuery, r span, oneJob bool) {
	if oneJob {
		q.where("job_name = " + q.arg(sq.Job))
	}
	if sq.Jobs != nil {
		q.where(q.jobSet(*sq.Jobs))
	}
	q.where("start_time >= " + q.arg(s.d.timeArg(r.from)))
	q.where("start_time < " + q.arg(s.d.timeArg(r.to)))
	if r.countedUpTo != "" {
		q.where("(start_time >= " + q.arg(s.d.timeArg(r.from.Truncate(time.Minute).Add(time.Minute))) +
			" OR job_name" + s.d.byteOrder + " > " + q.arg(r.countedUpTo) + ")")
	}
}

// bucketKey is the group of a row: its bucket (by start time).
func (s statsSQL) bucketKey(q *query, sq StatsQuery) string {
	return "((" + s.d.epochMicros("start_time") + " - " + q.arg(micros(normalize(sq.From))) + ") / " + q.arg(sq.Bucket.Microseconds()) + ")"
}

// counts is "SELECT key, fires, items, ..., GROUP BY key" over the rows that started in r: per group, the
// distinct fires, the items by outcome and source, and the count, sum and largest of the durations and
// latenesses. A fire is counted once per minute (of start_time) it has items in, as the rollup counts it.
func (s statsSQL) counts(sq StatsQuery, r span, oneJob bool, keyFn func(*query) string) *query {
	q := &query{d: s.d}
	key := keyFn(q)
	sum := func(cond string) string { return "SUM(CASE WHEN " + cond + " THEN 1 ELSE 0 END)" }
	big := func(agg string) string { return "CAST(" + agg + " AS BIGINT)" }
	dv, dc := s.duration()
	lv, lc := s.lateness()
	fire := "CAST(" + s.d.epochMicros("scheduled_at") + " AS TEXT) || '@' || CAST(" + s.d.epochMicros("start_time") + " / 60000000 AS TEXT)"
	if !oneJob {
		fire = "job_name || '@' || " + fire
	}
	q.write("SELECT CAST(k AS TEXT), COUNT(DISTINCT f), COUNT(*), ",
		sum("complete_time IS NOT NULL AND ok"), ", ", sum("complete_time IS NOT NULL AND NOT ok"), ", ",
		sum("complete_time IS NULL"), ", ", sum("src = 'MISFIRE'"), ", ", sum("src = 'FAILOVER'"), ", ", sum("src = 'MANUAL'"), ", ",
		sum("d IS NOT NULL"), ", ", big("SUM(d)"), ", MAX(d), ", sum("l IS NOT NULL"), ", ", big("SUM(l)"), ", MAX(l), ",
		"MAX(hostname), MAX(ip) FROM (SELECT ", key, " AS k, ", fire, " AS f, complete_time, ", s.d.isTrue("is_success"), " AS ok, ",
		"execution_source AS src, CASE WHEN ", dc, " THEN ", dv, " END AS d, CASE WHEN ", lc, " THEN ", lv, " END AS l, ",
		"hostname, ip FROM JOB_EXECUTION_LOG")
	s.window(q, sq, r, oneJob)
	q.write(") base GROUP BY k")
	return q
}

// histogram is "SELECT key, bin, COUNT(*)" over the rows that started in r: the values of each group counted
// by bin, where a value's bin is the value rounded down to 3 significant digits (binSQL). cond keeps the rows
// that have a value.
func (s statsSQL) histogram(sq StatsQuery, r span, oneJob bool, keyFn func(*query) string, value, cond string) *query {
	q := &query{d: s.d}
	key := keyFn(q)
	q.write("SELECT CAST(k AS TEXT), ", binSQL("v"), ", COUNT(*) FROM (SELECT ", key, " AS k, ", value, " AS v FROM JOB_EXECUTION_LOG")
	s.window(q, sq, r, oneJob)
	q.where(cond)
	q.write(") base GROUP BY k, 2")
	return q
}

// binSQL is the bin of an integer value v: v itself below 1,000, else v rounded down to 3 significant digits
// (so a percentile read off the bins is exact below 1 s and at most 1% under the value above). The rollup's
// triggers (migrations 0009) spell the same expression out.
func binSQL(v string) string {
	var b strings.Builder
	b.WriteString("CASE WHEN " + v + " < 1000 THEN " + v)
	step := int64(10)
	for limit := int64(10_000); limit <= 1_000_000_000_000; limit *= 10 {
		fmt.Fprintf(&b, " WHEN %s < %d THEN %s / %d * %d", v, limit, v, step, step)
		step *= 10
	}
	fmt.Fprintf(&b, " ELSE %s / %d * %d END", v, step, step)
	return b.String()
}

// hist counts values by bin.
type hist map[int64]int64

func (h hist) add(o hist) {
	for b, n := range o {
		h[b] += n
	}
}

// percentile is the nearest-rank p-th percentile (the bin of the value at rank ceil(p·n/100)), nil without values.
func (h hist) percentile(p int64) *int64 {
	var n int64
	bins := make([]int64, 0, len(h))
	for b, c := range h {
		if c == 0 {
			continue
		}
		n += c
		bins = append(bins, b)
	}
	if n == 0 {
		return nil
	}
	slices.Sort(bins)
	rank, seen := (p*n+99)/100, int64(0)
	for _, b := range bins {
		if seen += h[b]; seen >= rank {
			return &b
		}
	}
	return &bins[len(bins)-1]
}

func (s statsSQL) duration() (string, string) {
	return "duration_ms", "complete_time IS NOT NULL"
}

func (s statsSQL) lateness() (string, string) {
	// a backfill's item was scheduled days ago on purpose: its lateness says nothing of the schedule's
	return "((" + s.d.epochMicros("start_time") + " - " + s.d.epochMicros("scheduled_at") + ") / 1000)",
		"scheduled_at IS NOT NULL AND execution_source <> '" + string(ejserver.SourceBackfill) + "'"
}

// acc is an aggregate being added up from parts (rows' groups, rollup cells).
type acc struct {
	fires, items, success, failure, running, misfire, failover, manual int64
	dn, dsum, ln, lsum                                                 int64
	dmax, lmax                                                         *int64
	host, ip                                                           string
}

func maxp(a, b *int64) *int64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func (a *acc) add(b acc) {
	a.fires += b.fires
	a.items += b.items
	a.success += b.success
	a.failure += b.failure
	a.running += b.running
	a.misfire += b.misfire
	a.failover += b.failover
	a.manual += b.manual
	a.dn += b.dn
	a.dsum += b.dsum
	a.ln += b.ln
	a.lsum += b.lsum
	a.dmax, a.lmax = maxp(a.dmax, b.dmax), maxp(a.lmax, b.lmax)
	a.host, a.ip = max(a.host, b.host), max(a.ip, b.ip)
}

// aggregate is the API's view of a: the means rounded down (toward zero), nil without values.
func (a acc) aggregate() Aggregate {
	out := Aggregate{Fires: a.fires, Items: a.items, Success: a.success, Failure: a.failure, Running: a.running,
		Misfire: a.misfire, Failover: a.failover, Manual: a.manual}
	if a.dn > 0 {
		out.DurationAvg, out.DurationMax = i64p(a.dsum/a.dn), a.dmax
	}
	if a.ln > 0 {
		out.LatenessAvg, out.LatenessMax = i64p(a.lsum/a.ln), a.lmax
	}
	return out
}

// scanAcc reads one row of counts (raw or rollup): key, fires, items ... largest lateness, hostname, ip.
func scanAcc(r rowScanner) (string, acc, error) {
	var (
		k          string
		a          acc
		dsum, lsum *int64
		h, i       *string
	)
	err := r.Scan(&k, &a.fires, &a.items, &a.success, &a.failure, &a.running, &a.misfire, &a.failover, &a.manual,
		&a.dn, &dsum, &a.dmax, &a.ln, &lsum, &a.lmax, &h, &i)
	if dsum != nil {
		a.dsum = *dsum
	}
	if lsum != nil {
		a.lsum = *lsum
	}
	if h != nil {
		a.host = *h
	}
	if i != nil {
		a.ip = *i
	}
	return k, a, err
}

// group is one key's aggregate and the histograms its percentiles come from.
type group struct {
	acc
	dur, late hist
}

// groups are the groups of a grouping, by key.
type groups map[string]*group

func (gs groups) get(k string) *group {
	g := gs[k]
	if g == nil {
		g = &group{dur: hist{}, late: hist{}}
		gs[k] = g
	}
	return g
}

// stats is the Aggregate of g with its percentiles.
func (g *group) stats() Aggregate {
	a := g.aggregate()
	a.DurationP50, a.DurationP99 = g.dur.percentile(50), g.dur.percentile(99)
	a.LatenessP50, a.LatenessP99 = g.late.percentile(50), g.late.percentile(99)
	return a
}

func i64p(v int64) *int64 { return &v }

// rawCounts adds the counts of the rows that started in r, grouped by keyFn, to gs.
func rawCounts(ctx context.Context, run runQuery, s statsSQL, sq StatsQuery, r span, oneJob bool, keyFn func(*query) string, gs groups) error {
	return run(ctx, s.counts(sq, r, oneJob, keyFn), func(row rowScanner) error {
		k, a, err := scanAcc(row)
		if err == nil {
			gs.get(k).add(a)
		}
		return err
	})
}

// rawHistograms adds the histograms of duration and lateness of the rows that started in r, grouped by keyFn,
// to gs.
func rawHistograms(ctx context.Context, run runQuery, s statsSQL, sq StatsQuery, r span, oneJob bool, keyFn func(*query) string, gs groups) error {
	dv, dc := s.duration()
	lv, lc := s.lateness()
	for _, p := range []struct {
		value, cond string
		of          func(*group) hist
	}{
		{dv, dc, func(g *group) hist { return g.dur }},
		{lv, lc, func(g *group) hist { return g.late }},
	} {
		err := run(ctx, s.histogram(sq, r, oneJob, keyFn, p.value, p.cond), func(row rowScanner) error {
			var (
				k      string
				bin, n int64
			)
			if err := row.Scan(&k, &bin, &n); err != nil {
				return err
			}
			p.of(gs.get(k))[bin] += n
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// buckets lays the groups keyed by bucket number over every bucket of the window.
func buckets(sq StatsQuery, byKey groups) []Bucket {
	n := int((sq.To.Sub(sq.From) + sq.Bucket - 1) / sq.Bucket)
	out := make([]Bucket, n)
	from := normalize(sq.From)
	for i := range out {
		out[i].Start = from.Add(time.Duration(i) * sq.Bucket)
		if g, ok := byKey[strconv.Itoa(i)]; ok {
			out[i].Aggregate = g.aggregate()
		}
	}
	return out
}

// wholeKey groups a window's rows in one group.
func wholeKey(*query) string { return "''" }

func jobStats(ctx context.Context, run runQuery, d dialect, sq StatsQuery, useRollup bool, front *rollup.Frontier) (JobStats, error) {
	if err := CheckStatsQuery(sq, false); err != nil {
		return JobStats{}, err
	}
	a := statsAggregator{run: run, s: statsSQL{d: d}, sq: sq, oneJob: true, plan: planStats(sq, useRollup, front)}
	byBucket, whole, err := a.bucketsAndTotal(ctx)
	if err != nil {
		return JobStats{}, err
	}
	if err := a.histograms(ctx, wholeKey, wholeKey, groups{"": whole}); err != nil {
		return JobStats{}, err
	}
	return JobStats{Job: sq.Job, From: normalize(sq.From), To: normalize(sq.To), Bucket: sq.Bucket.String(),
		Buckets: buckets(sq, byBucket), Total: whole.stats()}, nil
}

func clusterStats(ctx context.Context, run runQuery, d dialect, sq StatsQuery, useRollup bool, front *rollup.Frontier) (ClusterStats, error) {
	if err := CheckStatsQuery(sq, false); err != nil {
		return ClusterStats{}, err
	}
	a := statsAggregator{run: run, s: statsSQL{d: d}, sq: sq, plan: planStats(sq, useRollup, front)}
	byBucket, whole, err := a.bucketsAndTotal(ctx)
	if err != nil {
		return ClusterStats{}, err
	}
	peerKey := func(*query) string { return "instance_id" }
	byPeer := groups{}
	if err := a.counts(ctx, peerKey, peerKey, true, byPeer); err != nil {
		return ClusterStats{}, err
	}
	if err := a.histograms(ctx, peerKey, peerKey, byPeer); err != nil {
		return ClusterStats{}, err
	}
	// the window's percentiles: the peers' histograms added up (the peers split the rows)
	for _, p := range byPeer {
		whole.dur.add(p.dur)
		whole.late.add(p.late)
	}
	out := ClusterStats{From: normalize(sq.From), To: normalize(sq.To), Bucket: sq.Bucket.String(), Buckets: buckets(sq, byBucket),
		Peers: []PeerStats{}, Total: whole.stats()}
	for k, p := range byPeer {
		if p.items == 0 {
			continue // a peer with histogram bins only has none: the rollup's emptied cells
		}
		out.Peers = append(out.Peers, PeerStats{InstanceID: k, Hostname: p.host, IP: p.ip, Aggregate: p.stats()})
	}
	slices.SortFunc(out.Peers, func(a, b PeerStats) int { return strings.Compare(a.InstanceID, b.InstanceID) })
	return out, nil
}

func jobPoints(ctx context.Context, run runQuery, d dialect, sq StatsQuery) (PointList, error) {
	if err := CheckStatsQuery(sq, true); err != nil {
		return PointList{}, err
	}
	s := statsSQL{d: d}
	q := &query{d: d}
	q.write("SELECT id, ", d.epochMicros("start_time"), ", ", d.epochMicros("scheduled_at"), ", duration_ms, ",
		"CASE WHEN complete_time IS NULL THEN 0 ELSE 1 END, CASE WHEN ", d.isTrue("is_success"), " THEN 1 ELSE 0 END, ",
		"execution_source, sharding_item, instance_id FROM JOB_EXECUTION_LOG")
	s.window(q, sq, span{from: sq.From, to: sq.To}, true)
	q.write(" ORDER BY start_time, id LIMIT ", q.arg(MaxPoints+1))
	out := PointList{Job: sq.Job, Points: []Point{}}
	err := run(ctx, q, func(r rowScanner) error {
		var (
			p        Point
			start    int64
			sched    *int64
			done, ok int64
			src      string
		)
		if err := r.Scan(&p.ID, &start, &sched, &p.DurationMs, &done, &ok, &src, &p.ShardingItem, &p.InstanceID); err != nil {
			return err
		}
		p.StartedAt = fromMicros(start)
		if sched != nil {
			p.ScheduledAt = fromMicros(*sched)
			p.LatenessMs = (start - *sched) / 1000
		}
		p.Done, p.Success, p.Source = done == 1, ok == 1, ejserver.Source(src)
		out.Points = append(out.Points, p)
		return nil
	})
	if err != nil {
		return PointList{}, err
	}
	if len(out.Points) > MaxPoints {
		out.Points, out.Truncated = out.Points[:MaxPoints], true
	}
	return out, nil
}
