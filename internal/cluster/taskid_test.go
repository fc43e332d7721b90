package cluster

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ejserver/ejserver"
)

// appendTaskID appends id with its items written as ranges, or as it is when its items field is not a
// comma-separated list of item numbers: a running node's way, memo included.
func appendTaskID(b []byte, id string) []byte { return rangedTaskID(id).appendTo(b) }

// appendRanged appends id with its items written as ranges (appendTaskID without the memo).
func appendRanged(b []byte, id string) []byte {
	start, end, ok := taskItems(id)
	if !ok {
		return append(b, id...)
	}
	return appendRangedAt(b, id, start, end)
}

func TestTaskIDRanges(t *testing.T) {
	const tail = "@-@READY@-@127.0.0.1@-@42@-@u"
	for _, c := range []struct{ items, ranged string }{
		{"0,1,2", "0-2"},
		{"0,1", "0,1"}, // a range of two is no shorter
		{"7", "7"},
		{"0,1,2,4,5,6,7,9", "0-2,4-7,9"},
		{"1,3,5,6,7,8,10,11", "1,3,5-8,10,11"},
		{"5,4,3", "5,4,3"},         // descending: listed
		{"2,3,4,3,4,5", "2-4,3-5"}, // as given, even repeated
		{"998,999,1000,1001", "998-1001"},
		{"01,2,3", "01,2,3"}, // not an item number: written as it is
		{"1,,2", "1,,2"},
		{"", ""},
		{"-1,0,1", "-1,0,1"},
	} {
		id := "job-1" + taskItemsSep + c.items + tail
		want := "job-1" + taskItemsSep + c.ranged + tail
		if got := string(appendRanged(nil, id)); got != want {
			t.Errorf("%q: written %q, want %q", c.items, got, want)
		}
		if got := rangedOracle(id); got != want {
			t.Errorf("%q: the oracle writes %q, want %q", c.items, got, want)
		}
		if strings.Contains(c.items, "-") {
			continue // not a task id ejserver builds: no round trip
		}
		if back := expandTaskID(want); back != id {
			t.Errorf("%q: read back %q, want %q", c.ranged, back, id)
		}
	}
	for _, id := range []string{"", "plain", "job@-@0,1,2", "job@-@@-@x"} {
		if got := string(appendRanged(nil, id)); got != id {
			t.Errorf("%q: written %q", id, got)
		}
	}
}

// A task id read from a node is expanded only when it is what appendTaskID writes: anything else (a node
// written by another tool) is read as it is, and no range makes the peer allocate without bound.
func TestExpandTaskIDLeavesOthersAlone(t *testing.T) {
	for _, items := range []string{"3-4", "5-3", "0-99999999", "0-1048577", "x-y", "1-2-3", "-", "1-", "-1", "01-5", "0-05", "0-2,,4"} {
		id := "j@-@" + items + "@-@READY"
		if got := expandTaskID(id); got != id {
			t.Errorf("%q read back as %q", id, got)
		}
	}
	if got := expandTaskID("j@-@0-1048575@-@READY"); strings.Count(got, ",") != 1048575 {
		t.Errorf("the largest range read back with %d commas", strings.Count(got, ","))
	}
}

// appendTaskID's memo answers for the wide task id it wrote last, and only for it; a narrow one is written
// without it, and neither allocates once the memo holds the wide one.
func TestAppendTaskIDMemo(t *testing.T) {
	wide := func(job string, from int) string {
		items := make([]int, 40)
		for i := range items {
			items[i] = from + i
		}
		items[20]++ // two runs
		return ejserver.TaskID(job, items, false, "1.2.3.4@-@5")
	}
	a, b := wide("a", 0), wide("b", 100)
	narrow := ejserver.TaskID("c", []int{7}, false, "1.2.3.4@-@5")
	for range 3 {
		for _, id := range []string{a, a, b, narrow, a, b, b, narrow} {
			if got, want := string(appendTaskID([]byte("x"), id)), "x"+rangedOracle(id); got != want {
				t.Fatalf("%q written %q, want %q", id, got, want)
			}
		}
	}
	buf := make([]byte, 0, 256)
	for _, id := range []string{b, narrow} { // b: the memo's; narrow: not memoized
		if n := testing.AllocsPerRun(100, func() { buf = appendTaskID(buf[:0], id) }); n != 0 {
			t.Fatalf("%q written again allocated %v times, want none", id, n)
		}
	}
	if last := lastTaskID.Load(); last == nil || last.id != b {
		t.Fatalf("the memo holds %v, want the wide task id written last", last)
	}
}

// FuzzTaskIDRanges: appendTaskID writes what the plain oracle writes, never longer than the task id, and a
// task id whose items are numbers reads back as it was.
func FuzzTaskIDRanges(f *testing.F) {
	f.Add("job", []byte{0, 1, 2, 3, 9, 10, 11, 4}, "READY@-@127.0.0.1@-@4242@-@u")
	f.Add("j", []byte{}, "FAILOVER")
	f.Add("j@-@1-3@-@x", []byte{200}, "")
	f.Fuzz(func(t *testing.T, job string, steps []byte, tail string) {
		// items from steps: each step adds 0-3 to the previous item (0: a repeat), or starts again at it
		var items []string
		n := 0
		for i, s := range steps {
			if s >= 200 {
				n = int(s) - 200
			} else if i > 0 {
				n += int(s % 4)
			}
			items = append(items, strconv.Itoa(n))
		}
		id := job + taskItemsSep + strings.Join(items, ",") + taskItemsSep + tail
		got := string(appendRanged(nil, id))
		if want := rangedOracle(id); got != want {
			t.Fatalf("%q written %q, want %q", id, got, want)
		}
		if len(got) > len(id) {
			t.Fatalf("%q written longer: %q", id, got)
		}
		if start, end, ok := taskItems(id); ok && !strings.Contains(id[start:end], "-") {
			if back := expandTaskID(got); back != id {
				t.Fatalf("%q written %q, read back %q", id, got, back)
			}
		}
	})
}
