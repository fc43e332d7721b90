package rollup

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestBin(t *testing.T) {
	for _, c := range []struct{ v, want int64 }{
		{-5, -5}, {0, 0}, {999, 999}, {1000, 1000}, {1009, 1000}, {9999, 9990}, {10000, 10000}, {12345, 12300},
		{99999, 99900}, {123456, 123000}, {1234567, 1230000}, {99_999_999_999, 99_900_000_000},
		{100_000_000_000, 100_000_000_000}, {999_999_999_999, 999_000_000_000},
		// from 10^12 on SQL's CASE stops at 10^10: 4 and more significant digits
		{1_000_000_000_000, 1_000_000_000_000}, {1_234_567_890_123, 1_230_000_000_000},
		{12_345_678_901_234, 12_340_000_000_000},
	} {
		if got := Bin(c.v); got != c.want {
			t.Errorf("Bin(%d) = %d, want %d", c.v, got, c.want)
		}
	}
}

// binSQL is history's binSQL CASE, spelled out: the reference Bin must match.
func binSQL(v int64) int64 {
	switch {
	case v < 1000:
		return v
	}
	for _, p := range []int64{10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000} {
		if v < p*1000 {
			return v / p * p
		}
	}
	return v / 10_000_000_000 * 10_000_000_000
}

func FuzzBin(f *testing.F) {
	for _, v := range []int64{0, 999, 1000, 123456789, 1 << 62} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		if got, want := Bin(v), binSQL(v); got != want {
			t.Fatalf("Bin(%d) = %d, the SQL's %d", v, got, want)
		}
	})
}

func TestAggregate(t *testing.T) {
	const min = 60_000_000
	start := Row{Job: "pay", Instance: "p1", Start: 10*min + 2_500_000, Scheduled: 10*min + 2_000_000,
		HasScheduled: true, Source: "NORMAL", Hostname: "h1", IP: "10.0.0.1"}
	end := start
	end.Done, end.Success, end.DurationMs = true, true, 40
	second := end
	second.Scheduled, second.Start, second.DurationMs, second.Source = 10*min+7_000_000, 10*min+7_100_000, 900, "MISFIRE"
	cell := CellKey{"pay", 10, "p1"}
	fire := FireKey{"pay", 10, start.Scheduled}

	t.Run("an end replacing its start", func(t *testing.T) {
		d := Aggregate([]Row{start}, []Row{end})
		c := d.Cells[cell]
		want := Counts{Success: 1, Running: -1, DurN: 1, DurSum: 40, DurMax: Max{40, true}, LateMax: Max{500, true},
			RemovedLate: Max{500, true}, Hostname: "h1", IP: "10.0.0.1"}
		if *c != want {
			t.Errorf("cell %+v, want %+v", *c, want)
		}
		if c.ReadDurMax() || c.ReadLateMax() {
			t.Error("an equal lateness added back needs no re-read")
		}
		if got := d.Hist; !reflect.DeepEqual(got, map[HistKey]int64{{"pay", 0, "p1", "d", 40}: 1}) {
			t.Errorf("hist %v (the lateness bin nets to nothing)", got)
		}
		if got := d.Changed(); len(got) != 0 {
			t.Errorf("changed fires %v: the fire keeps its one row", got)
		}
		d.Fires(nil)
		if c.PeerFires != 0 || len(d.JobFires) != 0 {
			t.Errorf("fires %d %v", c.PeerFires, d.JobFires)
		}
	})
	t.Run("two new fires, one of them with a row already there on another peer", func(t *testing.T) {
		other := second
		other.Instance = "p2"
		d := Aggregate(nil, []Row{end, second})
		if got := len(d.Changed()); got != 2 {
			t.Fatalf("%d fires changed, want 2", got)
		}
		// after the batch: the first fire has its row and one on p2, the second its row
		d.Fires(map[FirePeer]int64{{fire, "p1"}: 1, {fire, "p2"}: 1, {FireKey{"pay", 10, second.Scheduled}, "p1"}: 1})
		c := d.Cells[cell]
		if c.PeerFires != 2 || c.Items != 2 || c.Misfire != 1 || c.DurMax != (Max{900, true}) {
			t.Errorf("cell %+v", *c)
		}
		if got := d.JobFires[JobMinute{"pay", 10}]; got != 1 {
			t.Errorf("job fires %d, want 1 (the first fire had p2's row)", got)
		}
		if got := d.ClusterFires[10]; got != 1 {
			t.Errorf("cluster fires %d, want 1", got)
		}
		if got := d.PeerCells[PeerKey{10, "p1"}].PeerFires; got != 2 {
			t.Errorf("peer fires %d, want 2", got)
		}
	})
	t.Run("the largest pruned", func(t *testing.T) {
		d := Aggregate([]Row{second}, nil)
		c := d.Cells[cell]
		if !c.ReadDurMax() || !c.ReadLateMax() || c.Items != -1 {
			t.Errorf("cell %+v: its largest values must be read again", *c)
		}
		d.Fires(map[FirePeer]int64{})
		if c.PeerFires != -1 || d.JobFires[JobMinute{"pay", 10}] != -1 || d.ClusterFires[10] != -1 {
			t.Errorf("fires %d %v %v", c.PeerFires, d.JobFires, d.ClusterFires)
		}
	})
	t.Run("an item moved to another minute and peer", func(t *testing.T) {
		moved := end
		moved.Start, moved.Instance = 11*min+1, "p2"
		d := Aggregate([]Row{start}, []Row{moved})
		if d.Cells[cell].Items != -1 || d.Cells[CellKey{"pay", 11, "p2"}].Items != 1 {
			t.Errorf("cells %v", d.Cells)
		}
		d.Fires(map[FirePeer]int64{{FireKey{"pay", 11, start.Scheduled}, "p2"}: 1})
		if d.JobFires[JobMinute{"pay", 10}] != -1 || d.JobFires[JobMinute{"pay", 11}] != 1 || len(d.ClusterFires) != 2 {
			t.Errorf("job fires %v, cluster %v", d.JobFires, d.ClusterFires)
		}
	})
}

// table is a from-the-rows computation of the rollup (the migrations' INSERT ... SELECT, in Go).
type table struct {
	cells    map[CellKey]Counts
	peers    map[PeerKey]Counts
	hist     map[HistKey]int64
	peerHist map[PeerHistKey]int64
	fires    map[JobMinute]int64
	cluster  map[int64]int64
}

func fromRows(rows map[string]Row) table {
	t := table{map[CellKey]Counts{}, map[PeerKey]Counts{}, map[HistKey]int64{}, map[PeerHistKey]int64{},
		map[JobMinute]int64{}, map[int64]int64{}}
	type fp struct {
		f    FireKey
		inst string
	}
	peerFires, jobFires := map[fp]bool{}, map[FireKey]bool{}
	for _, r := range rows {
		d := Aggregate(nil, []Row{r})
		for k, c := range d.Cells {
			t.cells[k] = plain(t.cells[k], *c)
		}
		for k, c := range d.PeerCells {
			t.peers[k] = plain(t.peers[k], *c)
		}
		for k, n := range d.Hist {
			t.hist[k] += n
		}
		for k, n := range d.PeerHist {
			t.peerHist[k] += n
		}
		if r.HasScheduled {
			f := FireKey{r.Job, r.Minute(), r.Scheduled}
			if !peerFires[fp{f, r.Instance}] {
				peerFires[fp{f, r.Instance}] = true
				c := t.cells[CellKey{r.Job, r.Minute(), r.Instance}]
				c.PeerFires++
				t.cells[CellKey{r.Job, r.Minute(), r.Instance}] = c
				p := t.peers[PeerKey{r.Minute(), r.Instance}]
				p.PeerFires++
				t.peers[PeerKey{r.Minute(), r.Instance}] = p
			}
			if !jobFires[f] {
				jobFires[f] = true
				t.fires[JobMinute{r.Job, r.Minute()}]++
				t.cluster[r.Minute()]++
			}
		}
	}
	return t
}

// plain adds b to a as a stored cell: sums add, largest values take the larger, nothing removed.
func plain(a, b Counts) Counts {
	a.PeerFires += b.PeerFires
	a.Items += b.Items
	a.Success += b.Success
	a.Failure += b.Failure
	a.Running += b.Running
	a.Misfire += b.Misfire
	a.Failover += b.Failover
	a.Manual += b.Manual
	a.DurN += b.DurN
	a.DurSum += b.DurSum
	a.LateN += b.LateN
	a.LateSum += b.LateSum
	if b.DurMax.Set {
		a.DurMax.Add(b.DurMax.V)
	}
	if b.LateMax.Set {
		a.LateMax.Add(b.LateMax.V)
	}
	a.Hostname, a.IP = max(a.Hostname, b.Hostname), max(a.IP, b.IP)
	return a
}

// apply applies d to t as the store does: counts add, a largest value takes the larger of the stored and
// the added one and is read again from rows (the rows after the change) where ReadDurMax says and the stored
// one is not above the removed one; the hostname and ip keep the largest seen.
func (t *table) apply(d Delta, rows map[string]Row) {
	now := fromRows(rows)
	for k, c := range d.Cells {
		s := t.cells[k]
		s = plain(s, Counts{PeerFires: c.PeerFires, Items: c.Items, Success: c.Success, Failure: c.Failure,
			Running: c.Running, Misfire: c.Misfire, Failover: c.Failover, Manual: c.Manual, DurN: c.DurN,
			DurSum: c.DurSum, LateN: c.LateN, LateSum: c.LateSum, DurMax: c.DurMax, LateMax: c.LateMax,
			Hostname: c.Hostname, IP: c.IP})
		if c.ReadDurMax() && s.DurMax.Set && s.DurMax.V <= c.RemovedDur.V {
			s.DurMax = now.cells[k].DurMax
		}
		if c.ReadLateMax() && s.LateMax.Set && s.LateMax.V <= c.RemovedLate.V {
			s.LateMax = now.cells[k].LateMax
		}
		t.cells[k] = s
	}
	for k, c := range d.PeerCells {
		s := plain(t.peers[k], Counts{PeerFires: c.PeerFires, Items: c.Items, Success: c.Success, Failure: c.Failure,
			Running: c.Running, Misfire: c.Misfire, Failover: c.Failover, Manual: c.Manual, DurN: c.DurN,
			DurSum: c.DurSum, LateN: c.LateN, LateSum: c.LateSum, DurMax: c.DurMax, LateMax: c.LateMax,
			Hostname: c.Hostname, IP: c.IP})
		if c.ReadDurMax() && s.DurMax.Set && s.DurMax.V <= c.RemovedDur.V {
			s.DurMax = now.peers[k].DurMax
		}
		if c.ReadLateMax() && s.LateMax.Set && s.LateMax.V <= c.RemovedLate.V {
			s.LateMax = now.peers[k].LateMax
		}
		t.peers[k] = s
	}
	for k, n := range d.Hist {
		t.hist[k] += n
	}
	for k, n := range d.PeerHist {
		t.peerHist[k] += n
	}
	for k, n := range d.JobFires {
		t.fires[k] += n
	}
	for k, n := range d.ClusterFires {
		t.cluster[k] += n
	}
}

// after counts each changed fire's rows per peer in rows.
func after(d Delta, rows map[string]Row) map[FirePeer]int64 {
	out := map[FirePeer]int64{}
	changed := map[FireKey]bool{}
	for _, k := range d.Changed() {
		changed[k] = true
	}
	for _, r := range rows {
		k := FireKey{r.Job, r.Minute(), r.Scheduled}
		if r.HasScheduled && changed[k] {
			out[FirePeer{k, r.Instance}]++
		}
	}
	return out
}

// equal compares two tables, a cell emptied of its rows (all counts zero) being as good as none. Its
// hostname and ip stay (the largest seen), and its largest values are those read again.
func equal(got, want table) string {
	for k, w := range want.cells {
		if g := got.cells[k]; !sameCounts(g, w) {
			return fmt.Sprintf("cell %v: got %+v, want %+v", k, g, w)
		}
	}
	for k, g := range got.cells {
		if _, ok := want.cells[k]; !ok && !empty(g) {
			return fmt.Sprintf("cell %v: got %+v, want none", k, g)
		}
	}
	for k, w := range want.peers {
		if g := got.peers[k]; !sameCounts(g, w) {
			return fmt.Sprintf("peer cell %v: got %+v, want %+v", k, g, w)
		}
	}
	for k, g := range got.peers {
		if _, ok := want.peers[k]; !ok && !empty(g) {
			return fmt.Sprintf("peer cell %v: got %+v, want none", k, g)
		}
	}
	for _, m := range []struct {
		name      string
		got, want map[string]int64
	}{
		{"hist", strKeys(got.hist), strKeys(want.hist)},
		{"peer hist", strKeys(got.peerHist), strKeys(want.peerHist)},
		{"fires", strKeys(got.fires), strKeys(want.fires)},
		{"cluster fires", strKeys(got.cluster), strKeys(want.cluster)},
	} {
		maps.DeleteFunc(m.got, func(_ string, n int64) bool { return n == 0 })
		if !maps.Equal(m.got, m.want) {
			return fmt.Sprintf("%s: got %v, want %v", m.name, m.got, m.want)
		}
	}
	return ""
}

func strKeys[K comparable](m map[K]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, n := range m {
		out[fmt.Sprint(k)] += n
	}
	return out
}

// sameCounts: the counts, sums and largest values equal; the hostname and ip are the largest seen, which
// the from-rows computation cannot know of rows gone, so they are compared only as at least the rows'.
func sameCounts(g, w Counts) bool {
	gh, gi := g.Hostname, g.IP
	g.Hostname, g.IP, w.Hostname, w.IP = "", "", "", ""
	return g == w && gh >= w.Hostname && gi >= w.IP
}

func empty(c Counts) bool {
	c.Hostname, c.IP = "", ""
	c.DurMax, c.LateMax = Max{}, Max{}
	return c == Counts{}
}

// randomRow is an item's version: a few jobs, peers, minutes and fires, so that cells and fires collide.
func randomRow(r *rand.Rand) Row {
	const min = 60_000_000
	sched := int64(r.IntN(4))*min + int64(r.IntN(3))*20_000_000
	row := Row{Job: []string{"a", "b"}[r.IntN(2)], Instance: []string{"p1", "p2", "p3"}[r.IntN(3)],
		Scheduled: sched, HasScheduled: r.IntN(8) != 0, Start: sched + int64(r.IntN(90_000_000)) - 1_000_000,
		Source:   []string{"NORMAL", "MISFIRE", "FAILOVER", "MANUAL"}[r.IntN(4)],
		Hostname: []string{"h1", "h2"}[r.IntN(2)], IP: []string{"10.0.0.1", "10.0.0.2"}[r.IntN(2)]}
	if r.IntN(4) != 0 {
		row.Done, row.Success, row.DurationMs = true, r.IntN(3) != 0, int64(r.IntN(5))*int64(r.IntN(3000))
	}
	return row
}

// FuzzAggregate runs random batches against a set of rows (new rows, replacements of stored ones that
// keep or move their cell and fire, deletions as a prune's) and checks after each that the rollup kept by
// applying Aggregate's deltas equals the one computed from the rows.
func FuzzAggregate(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 25, 2026} {
		f.Add(s, uint8(20))
	}
	f.Fuzz(func(t *testing.T, seed uint64, batches uint8) {
		r := rand.New(rand.NewPCG(seed, 21))
		rows := map[string]Row{}
		kept := fromRows(rows)
		next := 0
		for b := range int(batches%40) + 1 {
			var removed, added []Row
			touched := map[string]bool{}
			for range r.IntN(12) {
				var id string
				if len(rows) > 0 && r.IntN(2) == 0 {
					id = fmt.Sprint(r.IntN(next)) // a stored one (or one gone)
				} else {
					id = fmt.Sprint(next)
					next++
				}
				if touched[id] {
					continue // a batch names an id once (the stores merge it)
				}
				touched[id] = true
				old, stored := rows[id]
				n := randomRow(r)
				if stored && r.IntN(3) != 0 { // the item's end: same fire, maybe another minute or peer
					n.Job, n.Scheduled, n.HasScheduled = old.Job, old.Scheduled, old.HasScheduled
					if r.IntN(3) != 0 {
						n.Start, n.Instance = old.Start, old.Instance
					}
				}
				if stored && r.IntN(5) == 0 { // pruned
					removed = append(removed, old)
					delete(rows, id)
					continue
				}
				if stored {
					removed = append(removed, old)
				}
				added = append(added, n)
				rows[id] = n
			}
			d := Aggregate(removed, added)
			d.Fires(after(d, rows))
			kept.apply(d, rows)
			if diff := equal(kept, fromRows(rows)); diff != "" {
				t.Fatalf("batch %d (removed %v, added %v): %s", b, removed, added, diff)
			}
		}
	})
}
