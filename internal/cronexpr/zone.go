package cronexpr

import (
	"math"
	"sort"
	"sync"
	"time"
)

// zonePeriod is a stretch of time with one UTC offset.
type zonePeriod struct {
	start, end int64 // [start, end) in Unix seconds; math.MinInt64 or math.MaxInt64 when open
	offset     int64 // seconds east of UTC within the period
	nextOffset int64 // the offset from end on, when end is not open
}

// periodAt asks package time for the period that contains the instant unix.
func periodAt(loc *time.Location, unix int64) zonePeriod {
	p := periodAtOrEndingAt(loc, unix)
	if p.end > unix {
		return p
	}
	// Past its last transition a zone follows a rule, which package time applies a year at a time. On the
	// last day of a leap year it can answer with bounds that end before the instant asked about, though
	// with the right offset (Go 1.26, America/Santiago, 2040-12-31). The next period starts by the day after.
	next := periodAtOrEndingAt(loc, unix+secondsPerDay)
	switch {
	case next.end <= unix+secondsPerDay: // not seen: a one-second period keeps callers moving
		return zonePeriod{start: unix, end: unix + 1, offset: p.offset, nextOffset: p.offset}
	case next.start > unix:
		return zonePeriod{start: unix, end: next.start, offset: p.offset, nextOffset: next.offset}
	}
	next.start = unix
	return next
}

func periodAtOrEndingAt(loc *time.Location, unix int64) zonePeriod {
	t := time.Unix(unix, 0).In(loc)
	_, offset := t.Zone()
	p := zonePeriod{start: math.MinInt64, end: math.MaxInt64, offset: int64(offset)}
	start, end := t.ZoneBounds()
	if !start.IsZero() {
		p.start = start.Unix()
	}
	if !end.IsZero() {
		p.end = end.Unix()
		_, next := end.Zone()
		p.nextOffset = int64(next)
	}
	return p
}

// ownsWall reports whether the period owns a wall-clock time as java.util.GregorianCalendar reads it: from
// its own start, shown in its own offset, up to the start of the next period, shown in the next offset.
func (p zonePeriod) ownsWall(wall int64) bool {
	return (p.start == math.MinInt64 || wall >= p.start+p.offset) &&
		(p.end == math.MaxInt64 || wall < p.end+p.nextOffset)
}

// zoneTable lists a location's periods over the years Next works in, so that a Next call never has to ask
// package time (whose lookups past the zone file's last transition evaluate its rule string every time).
type zoneTable struct {
	periods []zonePeriod // contiguous, in order
}

// The span a zoneTable covers, with a margin: Next works between 1969-12-31 and 2100-01-02.
var (
	zoneTableStart = time.Date(minYear-1, time.January, 1, 0, 0, 0, 0, time.UTC).Unix()
	zoneTableEnd   = time.Date(maxYear+2, time.January, 1, 0, 0, 0, 0, time.UTC).Unix()
)

func newZoneTable(loc *time.Location) *zoneTable {
	zt := &zoneTable{}
	for unix := zoneTableStart; ; {
		p := periodAt(loc, unix)
		zt.periods = append(zt.periods, p)
		if p.end == math.MaxInt64 || p.end >= zoneTableEnd {
			return zt
		}
		unix = p.end
	}
}

// byInstant returns the period that contains the instant unix, if the table covers it.
func (zt *zoneTable) byInstant(unix int64) (zonePeriod, bool) {
	ps := zt.periods
	if unix < ps[0].start || unix >= ps[len(ps)-1].end {
		return zonePeriod{}, false
	}
	i := sort.Search(len(ps), func(i int) bool { return ps[i].end > unix })
	return ps[i], true
}

// byWall returns the period that owns a wall-clock time (see zonePeriod.ownsWall), if the table covers it.
func (zt *zoneTable) byWall(wall int64) (zonePeriod, bool) {
	ps := zt.periods
	i := sort.Search(len(ps), func(i int) bool { return ps[i].end == math.MaxInt64 || ps[i].end+ps[i].nextOffset > wall })
	if i == len(ps) || !ps[i].ownsWall(wall) {
		return zonePeriod{}, false
	}
	return ps[i], true
}

// zoneTables holds the table of every location LoadLocation returned, and of UTC. A caller's own
// *time.Location has none (a table per location value could pile up); Next then asks package time.
var zoneTables sync.Map // *time.Location -> *zoneTable

func init() {
	zoneTables.Store(time.UTC, newZoneTable(time.UTC))
}

func zoneTableOf(loc *time.Location) *zoneTable {
	if zt, ok := zoneTables.Load(loc); ok {
		return zt.(*zoneTable)
	}
	return nil
}

// zoneCache answers a Next call's offset questions for one location: from its table when it has one,
// else from package time, remembering the period it found last.
type zoneCache struct {
	loc    *time.Location
	table  *zoneTable
	period zonePeriod
	loaded bool // period is set
}

func newZoneCache(loc *time.Location, table *zoneTable) *zoneCache {
	return &zoneCache{loc: loc, table: table}
}

// offsetAt returns the offset in force at the instant unix.
func (z *zoneCache) offsetAt(unix int64) int64 {
	if !z.loaded || unix < z.period.start || unix >= z.period.end {
		z.load(unix)
	}
	return z.period.offset
}

// load makes the period that contains the instant unix the current one.
func (z *zoneCache) load(unix int64) {
	p, ok := zonePeriod{}, false
	if z.table != nil {
		p, ok = z.table.byInstant(unix)
	}
	if !ok {
		p = periodAt(z.loc, unix)
	}
	z.period, z.loaded = p, true
}

// instantOf converts wall-clock seconds (seconds since 1970-01-01 00:00 as shown on the zone's clocks) to an
// instant as java.util.GregorianCalendar does (see zonePeriod.ownsWall). So a wall time in a gap belongs to
// the period before the gap, and a repeated wall time to the period after the repeat began.
func (z *zoneCache) instantOf(wall int64) int64 {
	if z.loaded && z.period.ownsWall(wall) {
		return wall - z.period.offset
	}
	if z.table != nil {
		if p, ok := z.table.byWall(wall); ok {
			z.period, z.loaded = p, true
			return wall - p.offset
		}
	}
	if !z.loaded {
		z.load(wall)
	}
	z.load(wall - z.period.offset) // near the answer: at most a transition or two away
	for range 4 {
		p := z.period
		switch {
		case p.start != math.MinInt64 && wall < p.start+p.offset:
			z.load(p.start - 1)
		case p.end != math.MaxInt64 && wall >= p.end+p.nextOffset:
			z.load(p.end)
		default:
			return wall - p.offset
		}
	}
	return wall - z.period.offset // transitions hours apart: not in the time-zone database
}
