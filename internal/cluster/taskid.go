package cluster

import (
	"strconv"
	"strings"
	"sync/atomic"
)

// A running node names its execution's task id with the items as ranges. ElasticJob's task id lists every
// item its instance runs in the fire, {job}@-@{items}@-@..., ~3 KB at 667 items, and the running node of each
// of those items held the whole list: ~2 MB a fire a peer in `fanout` (2,000 items on 3 peers), four 512 KB
// multis of begins, each taking ZooKeeper 200-500 ms when it was busy, so that a fire's last items were still
// waiting for their running nodes half a second after their time (docs/benchmarks.md). Runs of three or more
// consecutive items are written first-last ("0-666"), and read back as the list; a task id is otherwise
// written as it is. Items are numbers, so a '-' in the items field is a range's only.

// taskItemsSep separates a task id's fields; the job name before the items has none (ValidateJobName).
const taskItemsSep = "@-@"

// maxTaskRange bounds a range read back from a node: no job has more items (ejserver.MaxShardingTotalCount is
// far below it), and a node written by anyone else must not make a peer allocate without bound.
const maxTaskRange = 1 << 20

// taskItems returns the start and end of a task id's items field, and whether it has one.
func taskItems(id string) (start, end int, ok bool) {
	i := strings.Index(id, taskItemsSep)
	if i < 0 {
		return 0, 0, false
	}
	start = i + len(taskItemsSep)
	j := strings.Index(id[start:], taskItemsSep)
	if j < 0 {
		return 0, 0, false
	}
	return start, start + j, true
}

// itemNumber parses a canonical non-negative integer, an item as a node's name or TaskID writes it: decimal
// digits, no sign, no leading zero. It allocates nothing: a wide fire's running nodes parse every item of
// their task id.
func itemNumber(s string) (int, bool) {
	if s == "" || len(s) > 18 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// taskIDForm is a task id and its form with ranges (rangedTaskID's memo).
type taskIDForm struct{ id, ranged string }

// lastTaskID is the wide task id rangedTaskID formed last: every item of a fire writes its peer's task id, and
// a wide fire's is parsed once rather than once per item.
var lastTaskID atomic.Pointer[taskIDForm]

// memoItems is the length of an items field from which rangedTaskID keeps its form: a shorter one (a fire of
// one item, as most are) costs less to parse again than the memo's allocation.
const memoItems = 64

// rangedID is a task id as a running node writes it: a wide one's form with ranges (memoized), or the id,
// whose few items are written as they are appended. Its items field is found once.
type rangedID struct {
	id         string
	start, end int    // the items field of id; start < 0: none
	wide       string // a wide id's form with ranges; "" for any other id (a wide one's is never empty)
}

// rangedTaskID returns id's form with ranges, memoized in lastTaskID when its items field is memoItems bytes
// or more.
func rangedTaskID(id string) rangedID {
	start, end, ok := taskItems(id)
	if !ok {
		return rangedID{id: id, start: -1}
	}
	r := rangedID{id: id, start: start, end: end}
	if end-start < memoItems {
		return r
	}
	if last := lastTaskID.Load(); last != nil && last.id == id {
		r.wide = last.ranged
		return r
	}
	r.wide = string(appendRangedAt(make([]byte, 0, len(id)), id, start, end))
	lastTaskID.Store(&taskIDForm{id: id, ranged: r.wide})
	return r
}

// size is the length appendTo writes, or more: a wide fire's running node is sized for its ranges rather than
// for its list.
func (r rangedID) size() int {
	if r.wide != "" {
		return len(r.wide)
	}
	return len(r.id)
}

// appendTo appends the task id with its items written as ranges.
func (r rangedID) appendTo(b []byte) []byte {
	switch {
	case r.wide != "":
		return append(b, r.wide...)
	case r.start < 0:
		return append(b, r.id...)
	}
	return appendRangedAt(b, r.id, r.start, r.end)
}

// appendRangedAt appends id with its items field id[start:end] written as ranges, or id as it is when that
// field is not a comma-separated list of item numbers.
func appendRangedAt(b []byte, id string, start, end int) []byte {
	field := id[start:end]
	for item := range strings.SplitSeq(field, ",") {
		if _, ok := itemNumber(item); !ok {
			return append(b, id...)
		}
	}
	b = append(b, id[:start]...)
	first, prev, count := 0, 0, 0
	written := false // an entry is in b: the next one follows a comma
	flush := func() {
		if count == 0 {
			return
		}
		if written {
			b = append(b, ',')
		}
		written = true
		if count >= 3 {
			b = append(strconv.AppendInt(b, int64(first), 10), '-')
			b = strconv.AppendInt(b, int64(prev), 10)
			return
		}
		for n := first; n <= prev; n++ {
			if n > first {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
	}
	for item := range strings.SplitSeq(field, ",") {
		n, _ := itemNumber(item)
		if count > 0 && n == prev+1 {
			prev, count = n, count+1
			continue
		}
		flush()
		first, prev, count = n, n, 1
	}
	flush()
	return append(b, id[end:]...)
}

// expandTaskID reads back a task id a running node wrote (rangedTaskID): its ranges are listed item by item.
// A task id whose items field holds anything but item numbers and ranges of three or more is returned as it is.
func expandTaskID(id string) string {
	start, end, ok := taskItems(id)
	if !ok || !strings.Contains(id[start:end], "-") {
		return id
	}
	field := id[start:end]
	size := 0
	for part := range strings.SplitSeq(field, ",") {
		lo, hi, ok := itemRange(part)
		if !ok {
			return id
		}
		_, last, _ := strings.Cut(part, "-")
		size += (hi - lo + 1) * (len(last) + 1) // no item of the range is longer than its last
		if size > maxTaskRange*8 {
			return id
		}
	}
	b := make([]byte, 0, len(id)-len(field)+size)
	b = append(b, id[:start]...)
	for part := range strings.SplitSeq(field, ",") {
		lo, hi, _ := itemRange(part)
		for n := lo; n <= hi; n++ {
			if len(b) > start {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
	}
	return string(append(b, id[end:]...))
}

// itemRange parses one entry of a written items field: an item number, or first-last with last at least
// first+2 (what appendRangedAt writes) and at most maxTaskRange items.
func itemRange(part string) (lo, hi int, ok bool) {
	a, z, isRange := strings.Cut(part, "-")
	lo, ok = itemNumber(a)
	if !ok {
		return 0, 0, false
	}
	if !isRange {
		return lo, lo, true
	}
	hi, ok = itemNumber(z)
	if !ok || hi < lo+2 || hi-lo >= maxTaskRange {
		return 0, 0, false
	}
	return lo, hi, true
}
