// Package rollup computes the changes of the stats' rollup (the tables of history migrations 0009 and 0010)
// that a batch of execution rows makes: the pure core of the SQLite writer's rollup, which aggregates a whole
// batch by cell and upserts each cell once instead of running a trigger per row. It is a function of values:
// the rows a batch removes (a replaced row's old version, a pruned row) and adds (a new row, a replaced row's
// new version), in, and the deltas of every cell they touch, out. The store reads what only the database
// knows (how many rows a fire has after the batch, the largest value left in a cell a removal may have
// emptied of its largest) and applies the deltas in the batch's transaction.
//
// The cells are those the stats read (internal/history/stats_rollup.go): per job, minute of start_time and
// peer (counts, sums, largest values, and the distinct fires as peer_fires), per job and minute (the distinct
// fires), per job, hour and peer (histogram bins of durations and latenesses), and the same per peer without
// the job. Minutes and hours are counted from the Unix epoch, truncating as SQL's integer division does.
package rollup

// Row is what the rollup counts of one execution row (JOB_EXECUTION_LOG).
type Row struct {
	Job, Instance string
	// Start and Scheduled are start_time and scheduled_at in µs since the epoch; Scheduled counts only with
	// HasScheduled (scheduled_at is not NULL).
	Start, Scheduled int64
	HasScheduled     bool
	// Done: complete_time is not NULL.
	Done       bool
	Success    bool
	Source     string
	DurationMs int64
	Hostname   string
	IP         string
}

// Minute is the epoch minute of the row's start (start_time / 60,000,000).
func (r Row) Minute() int64 { return r.Start / 60_000_000 }

// Hour is the epoch hour of the row's start (start_time / 3,600,000,000).
func (r Row) Hour() int64 { return r.Start / 3_600_000_000 }

// Lateness is (start_time - scheduled_at) / 1000, in ms; it counts only with HasScheduled.
func (r Row) Lateness() int64 { return (r.Start - r.Scheduled) / 1000 }

// Max is a largest value, unset while there is none (SQL's NULL).
type Max struct {
	V   int64
	Set bool
}

// Add takes v into m.
func (m *Max) Add(v int64) {
	if !m.Set || v > m.V {
		m.V, m.Set = v, true
	}
}

// Counts is the change of one minute cell: what is added to its counts and sums, the largest of the values
// added (DurMax, LateMax) and of those removed (RemovedDur, RemovedLate), and the largest hostname and IP of
// every row added or removed (a cell's hostname and ip are the largest it has seen, as the triggers kept them).
// PeerFires is the change of its distinct fires, set by Fires.
type Counts struct {
	PeerFires, Items, Success, Failure, Running, Misfire, Failover, Manual int64
	DurN, DurSum, LateN, LateSum                                           int64
	DurMax, LateMax, RemovedDur, RemovedLate                               Max
	Hostname, IP                                                           string
}

// ReadDurMax says whether the cell's largest duration must be read again from its rows after the change: a
// removed duration may have been the largest, and no added one is at least as large. The store reads it
// again only when the stored largest (with the added ones in) is not above the removed one.
func (c *Counts) ReadDurMax() bool {
	return c.RemovedDur.Set && (!c.DurMax.Set || c.DurMax.V < c.RemovedDur.V)
}

// ReadLateMax is ReadDurMax for the lateness.
func (c *Counts) ReadLateMax() bool {
	return c.RemovedLate.Set && (!c.LateMax.Set || c.LateMax.V < c.RemovedLate.V)
}

func (c *Counts) add(r Row, sign int64) {
	c.Items += sign
	switch {
	case !r.Done:
		c.Running += sign
	case r.Success:
		c.Success += sign
	default:
		c.Failure += sign
	}
	switch r.Source {
	case "MISFIRE":
		c.Misfire += sign
	case "FAILOVER":
		c.Failover += sign
	case "MANUAL":
		c.Manual += sign
	}
	if r.Done {
		c.DurN += sign
		c.DurSum += sign * r.DurationMs
		if sign > 0 {
			c.DurMax.Add(r.DurationMs)
		} else {
			c.RemovedDur.Add(r.DurationMs)
		}
	}
	if r.HasScheduled {
		l := r.Lateness()
		c.LateN += sign
		c.LateSum += sign * l
		if sign > 0 {
			c.LateMax.Add(l)
		} else {
			c.RemovedLate.Add(l)
		}
	}
	c.Hostname, c.IP = max(c.Hostname, r.Hostname), max(c.IP, r.IP)
}

// CellKey is a cell of EXECUTION_STATS_MINUTE.
type CellKey struct {
	Job      string
	Minute   int64
	Instance string
}

// PeerKey is a cell of EXECUTION_PEER_STATS_MINUTE.
type PeerKey struct {
	Minute   int64
	Instance string
}

// HistKey is a bin of EXECUTION_STATS_HIST: Kind "d" for durations, "l" for latenesses.
type HistKey struct {
	Job      string
	Hour     int64
	Instance string
	Kind     string
	Bin      int64
}

// PeerHistKey is a bin of EXECUTION_PEER_STATS_HIST.
type PeerHistKey struct {
	Hour     int64
	Instance string
	Kind     string
	Bin      int64
}

// FireKey is a fire's rows of one minute: the job, the minute of their start, their scheduled_at.
type FireKey struct {
	Job       string
	Minute    int64
	Scheduled int64
}

// FirePeer is a fire's rows of one minute on one peer (instance_id).
type FirePeer struct {
	FireKey
	Instance string
}

// JobMinute is a cell of EXECUTION_FIRES_MINUTE.
type JobMinute struct {
	Job    string
	Minute int64
}

// Delta is a batch's change of the rollup.
type Delta struct {
	Cells     map[CellKey]*Counts
	PeerCells map[PeerKey]*Counts
	Hist      map[HistKey]int64
	PeerHist  map[PeerHistKey]int64
	// FireRows is the net change of the rows of each fire and minute, per peer (instance_id): what Fires needs,
	// with the rows each has after the change, to count the distinct fires.
	FireRows map[FirePeer]int64
	// JobFires and ClusterFires are the changes of EXECUTION_FIRES_MINUTE and EXECUTION_CLUSTER_FIRES_MINUTE,
	// set by Fires.
	JobFires     map[JobMinute]int64
	ClusterFires map[int64]int64

	// slab holds the cells' Counts, made a slab at a time rather than one by one (at 100,000 jobs the frontier
	// counts a cell for nearly every row: docs/benchmarks.md).
	slab []Counts
}

// Aggregate returns the change of the rollup when the rows removed go and the rows added come (a row
// replaced by an upsert is in both: its old version removed, its new one added). Fires and minute cells'
// PeerFires are left for Fires.
func Aggregate(removed, added []Row) Delta {
	n := len(removed) + len(added) // at most as many cells and fires as rows, and twice as many bins
	d := Delta{
		Cells:     make(map[CellKey]*Counts, n),
		PeerCells: map[PeerKey]*Counts{},
		Hist:      make(map[HistKey]int64, 2*n),
		PeerHist:  map[PeerHistKey]int64{},
		FireRows:  make(map[FirePeer]int64, n),
		slab:      make([]Counts, 0, n+1),
	}
	for _, r := range removed {
		d.add(r, -1)
	}
	for _, r := range added {
		d.add(r, 1)
	}
	for k, n := range d.Hist {
		if n == 0 {
			delete(d.Hist, k)
		}
	}
	for k, n := range d.PeerHist {
		if n == 0 {
			delete(d.PeerHist, k)
		}
	}
	return d
}

func (d *Delta) add(r Row, sign int64) {
	m := r.Minute()
	cell(d, d.Cells, CellKey{r.Job, m, r.Instance}).add(r, sign)
	cell(d, d.PeerCells, PeerKey{m, r.Instance}).add(r, sign)
	h := r.Hour()
	if r.Done {
		b := Bin(r.DurationMs)
		d.Hist[HistKey{r.Job, h, r.Instance, "d", b}] += sign
		d.PeerHist[PeerHistKey{h, r.Instance, "d", b}] += sign
	}
	if r.HasScheduled {
		b := Bin(r.Lateness())
		d.Hist[HistKey{r.Job, h, r.Instance, "l", b}] += sign
		d.PeerHist[PeerHistKey{h, r.Instance, "l", b}] += sign
		d.FireRows[FirePeer{FireKey{r.Job, m, r.Scheduled}, r.Instance}] += sign
	}
}

// cell is m's cell k, made (from d's slab) if m has none.
func cell[K comparable](d *Delta, m map[K]*Counts, k K) *Counts {
	c := m[k]
	if c == nil {
		if len(d.slab) == cap(d.slab) {
			d.slab = make([]Counts, 0, 16)
		}
		d.slab = d.slab[:len(d.slab)+1]
		c = &d.slab[len(d.slab)-1]
		m[k] = c
	}
	return c
}

// Changed lists the fires whose rows changed in number on some peer: those whose rows after the change
// Fires needs.
func (d *Delta) Changed() []FireKey {
	seen := make(map[FireKey]bool, len(d.FireRows))
	var out []FireKey
	for k, n := range d.FireRows {
		if n != 0 && !seen[k.FireKey] {
			seen[k.FireKey] = true
			out = append(out, k.FireKey)
		}
	}
	return out
}

// Fires counts the change of the distinct fires, given how many rows each changed fire (Changed) has after
// the change on each peer (after[{k, instance}]; a peer missing has none): a fire is counted in a cell while
// the cell has at least one of its rows. It sets the minute cells' PeerFires, JobFires and ClusterFires.
func (d *Delta) Fires(after map[FirePeer]int64) {
	d.JobFires, d.ClusterFires = map[JobMinute]int64{}, map[int64]int64{}
	type rows struct {
		total, net int64 // after the change on every peer; added less removed
		changed    bool  // on some peer
	}
	fires := make(map[FireKey]rows, len(d.FireRows))
	for k, n := range d.FireRows {
		f := fires[k.FireKey]
		f.net += n
		if n != 0 {
			f.changed = true
			if c := change(after[k], n); c != 0 {
				d.Cells[CellKey{k.Job, k.Minute, k.Instance}].PeerFires += c
				d.PeerCells[PeerKey{k.Minute, k.Instance}].PeerFires += c
			}
		}
		fires[k.FireKey] = f
	}
	for k, n := range after {
		if f, ok := fires[k.FireKey]; ok {
			f.total += n
			fires[k.FireKey] = f
		}
	}
	for k, f := range fires {
		if !f.changed {
			continue
		}
		if c := change(f.total, f.net); c != 0 {
			d.JobFires[JobMinute{k.Job, k.Minute}] += c
			d.ClusterFires[k.Minute] += c
		}
	}
}

// change is how a group of rows that has after rows, net of them added, changes a count of the groups that
// have any: +1 when it had none, -1 when it has none left.
func change(after, net int64) int64 {
	before := after - net
	switch {
	case before <= 0 && after > 0:
		return 1
	case before > 0 && after <= 0:
		return -1
	}
	return 0
}

// Bin is a histogram's bin of v: v rounded toward zero to 3 significant digits (v itself below 1,000), as
// history's binSQL computes it.
func Bin(v int64) int64 {
	if v < 1000 {
		return v
	}
	p := int64(1)
	for lim := int64(10000); v >= lim && p < 1_000_000_000; lim *= 10 {
		p *= 10
	}
	return v / (10 * p) * (10 * p)
}
