package dispatch

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// queueModel is what a fireQueue must do, the slow way: each queued job's hand-off time.
type queueModel map[string]int64

// take returns the jobs of the earliest time, in name order, and forgets them.
func (m queueModel) take() []string {
	if len(m) == 0 {
		return nil
	}
	first := slices.Min(slices.Collect(maps.Values(m)))
	var out []string
	for job, at := range m {
		if at == first {
			out = append(out, job)
		}
	}
	slices.Sort(out)
	for _, job := range out {
		delete(m, job)
	}
	return out
}

// runQueueOps plays ops on a fireQueue and on the model, three bytes an op: what (push, remove, take), which
// of 16 jobs, which of 8 instants (a few, so that buckets are shared, emptied and refilled), and checks that
// they agree after each.
func runQueueOps(t *testing.T, ops []byte) {
	var q fireQueue
	m := queueModel{}
	queued := map[string]*entry{}
	for len(ops) >= 3 {
		op, job, at := ops[0]%3, fmt.Sprintf("job-%02d", ops[1]%16), int64(ops[2]%8)
		ops = ops[3:]
		switch e := queued[job]; {
		case op == 0 && e == nil: // push
			e = &entry{job: job, at: time.Unix(0, at)}
			q.push(e)
			queued[job], m[job] = e, at
		case op == 1 && e != nil: // remove
			q.remove(e)
			delete(queued, job)
			delete(m, job)
		case op == 2: // take
			var got []string
			for _, e := range q.take() {
				got = append(got, e.job)
				delete(queued, e.job)
			}
			if want := m.take(); !slices.Equal(got, want) {
				t.Fatalf("take: got %v, want %v", got, want)
			}
		}
		k, ok := q.first()
		if ok != (len(m) > 0) || ok && k != slices.Min(slices.Collect(maps.Values(m))) {
			t.Fatalf("first: %d %v, model %v", k, ok, m)
		}
	}
	for len(m) > 0 { // the rest comes out in order
		var got []string
		for _, e := range q.take() {
			got = append(got, e.job)
		}
		if want := m.take(); !slices.Equal(got, want) {
			t.Fatalf("drain: got %v, want %v", got, want)
		}
	}
	if _, ok := q.first(); ok || len(q.buckets) != 0 || len(q.instants) != 0 {
		t.Fatalf("drained queue holds %d buckets, %d instants", len(q.buckets), len(q.instants))
	}
}

func TestFireQueue(t *testing.T) {
	for name, ops := range map[string][]byte{
		"one job":                        {0, 1, 3, 2, 0, 0},
		"a shared instant, name order":   {0, 2, 5, 0, 1, 5, 0, 3, 4, 2, 0, 0, 2, 0, 0},
		"remove the last of a bucket":    {0, 1, 2, 0, 2, 6, 1, 1, 2, 2, 0, 0},
		"remove from a bucket's middle":  {0, 1, 2, 0, 2, 2, 0, 3, 2, 1, 2, 0, 2, 0, 0},
		"remove the job moved in":        {0, 1, 2, 0, 2, 2, 0, 3, 2, 1, 1, 0, 1, 3, 0, 2, 0, 0},
		"an emptied instant is refilled": {0, 1, 2, 1, 1, 2, 0, 4, 2, 0, 5, 1, 2, 0, 0},
		"push while others are due":      {0, 1, 1, 0, 2, 7, 2, 0, 0, 0, 3, 0, 2, 0, 0, 2, 0, 0},
	} {
		t.Run(name, func(t *testing.T) { runQueueOps(t, ops) })
	}
}

func FuzzFireQueue(f *testing.F) {
	f.Add([]byte{0, 2, 5, 0, 1, 5, 0, 3, 4, 2, 0, 0, 1, 2, 5, 2, 0, 0})
	f.Add([]byte{0, 1, 2, 1, 1, 2, 0, 4, 2, 0, 5, 1, 2, 0, 0})
	f.Fuzz(runQueueOps)
}
