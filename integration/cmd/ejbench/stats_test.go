package main

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cronexpr"
	"github.com/ejserver/ejserver/internal/sharding"
)

// Every job's cron expression parses and fires exactly at the seconds the schedule counts (firingAt), over
// two minutes: what the benchmark expects is what the peers are told to fire.
func TestScheduleCronMatchesFiringAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		period time.Duration
		jobs   int
		spread bool
	}{
		{time.Second, 3, true},
		{2 * time.Second, 5, true},
		{10 * time.Second, 25, true},
		{10 * time.Second, 4, false},
		{time.Minute, 130, true},
		{time.Minute, 100000, true},
		{10 * time.Second, 10007, true},
		{time.Minute, 3, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%d-%t", tt.period, tt.jobs, tt.spread), func(t *testing.T) {
			t.Parallel()
			s := schedule{prefix: "b", jobs: tt.jobs, items: 1, period: tt.period, spread: tt.spread}
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			to := from.Add(2 * time.Minute)
			firing := map[int64]int{}
			for k := range tt.jobs {
				c, err := cronexpr.Parse(s.cron(k), time.UTC)
				if err != nil {
					t.Fatalf("job %d: %v", k, err)
				}
				for at := c.Next(from.Add(-time.Second)); at.Before(to); at = c.Next(at) {
					firing[at.Unix()]++
					if r := testRecord(s.jobName(k), "", at.UnixNano(), 1); !s.valid(&r) {
						t.Errorf("job %d's fire at %s is not one the analysis counts", k, at.Format(time.TimeOnly))
					}
					if r := testRecord(s.jobName(k), "", at.Add(time.Second).UnixNano(), 1); s.periodS() > 1 && s.valid(&r) {
						t.Errorf("job %d: the analysis counts a fire at %s, a second after its own", k, at.Add(time.Second).Format(time.TimeOnly))
					}
				}
			}
			for at := from; at.Before(to); at = at.Add(time.Second) {
				if got, want := firing[at.Unix()], s.firingAt(at.Unix()); got != want {
					t.Errorf("second %s: %d jobs fire, the schedule counts %d", at.Format(time.TimeOnly), got, want)
				}
			}
		})
	}
}

// The jobs that fire in one second are spread over the peers by ROUND_ROBIN (the steady workloads' strategy) as
// a real cluster's job names would be: no peer gets more than half again its share of any second, for the
// periods and peer counts the workloads use. With job k at second k % period, a minute's period on three peers
// gave every second's jobs to one peer.
func TestSpreadSecondsMixThePeers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		period      time.Duration
		jobs, peers int
	}{
		{time.Minute, 100000, 3}, {time.Minute, 6000, 2}, {time.Minute, 6000, 5}, {10 * time.Second, 10000, 3},
		{10 * time.Second, 10000, 2}, {time.Minute, 1000, 3},
	} {
		s := schedule{prefix: "bench", jobs: tt.jobs, items: 1, period: tt.period, spread: true}
		instances := make([]sharding.Instance, tt.peers)
		for i := range instances {
			instances[i] = sharding.Instance{ID: fmt.Sprintf("127.0.0.%d@-@1", i+1), ServerIP: fmt.Sprintf("127.0.0.%d", i+1)}
		}
		perSecond := map[int64]map[string]int{}
		for k := range tt.jobs {
			off := spreadOffset(k, s.periodS())
			if perSecond[off] == nil {
				perSecond[off] = map[string]int{}
			}
			for id, items := range sharding.RoundRobin(instances, s.jobName(k), 1) {
				perSecond[off][id] += len(items)
			}
		}
		for off, by := range perSecond {
			share := float64(s.firingAt(off)) / float64(tt.peers)
			for _, in := range instances {
				if n := by[in.ID]; float64(n) > 1.5*share+1 {
					t.Errorf("%d jobs every %s on %d peers: second %d gives %s %d of its %d jobs", tt.jobs, tt.period, tt.peers,
						off, in.ID, n, s.firingAt(off))
				}
			}
		}
	}
}

// testRecord is a record of job's delivery of execution id, scheduled at (Unix ns).
func testRecord(job, id string, scheduled int64, attempt int16) record {
	r := record{scheduled: scheduled, attempt: attempt}
	r.setJob(job)
	r.setExecID(id)
	return r
}

// A record keeps what it was given, and none of it points into the heap.
func TestRecordHoldsNoPointer(t *testing.T) {
	t.Parallel()
	r := testRecord("bench-00042", "01a228d2-2d8d-71af-9451-cfcbfb7335ea", 7, 2)
	r.setInstance("127.0.0.1@-@123")
	if r.job() != "bench-00042" || r.execID() != "01a228d2-2d8d-71af-9451-cfcbfb7335ea" || r.instance() != "127.0.0.1@-@123" {
		t.Fatalf("record reads back %q %q %q", r.job(), r.execID(), r.instance())
	}
	if other := testRecord("bench-00042", "", 0, 1); other.jobID != r.jobID {
		t.Fatal("one job name interned twice")
	}
	for i := range reflect.TypeFor[record]().NumField() {
		f := reflect.TypeFor[record]().Field(i)
		switch f.Type.Kind() {
		case reflect.Int64, reflect.Int32, reflect.Int16, reflect.Uint32, reflect.Uint8, reflect.Array:
			if f.Type.Kind() == reflect.Array && f.Type.Elem().Kind() != reflect.Uint8 {
				t.Errorf("field %s: %s", f.Name, f.Type)
			}
		default:
			t.Errorf("field %s is a %s: records would be marked by every collection", f.Name, f.Type)
		}
	}
}

// A record log keeps every record in order across its blocks, grows past its capacity, and copies from any point.
func TestRecordLog(t *testing.T) {
	t.Parallel()
	l := newRecordLog(10)
	const n = 3*recordChunk + 17
	for i := range n {
		l.add(record{arrived: int64(i)})
	}
	for _, from := range []int{0, 1, recordChunk - 1, recordChunk, 2*recordChunk + 5, n - 1, n, n + 3} {
		got := l.since(from)
		if want := max(0, n-from); len(got) != want {
			t.Fatalf("since(%d): %d records, want %d", from, len(got), want)
		}
		for i, r := range got {
			if r.arrived != int64(from+i) {
				t.Fatalf("since(%d)[%d] is record %d", from, i, r.arrived)
			}
		}
	}
	blocks := len(l.blocks)
	l.reset()
	l.add(record{arrived: 7})
	if got := l.since(0); len(got) != 1 || got[0].arrived != 7 || len(l.blocks) != blocks {
		t.Fatalf("after a reset: %v, %d blocks (had %d)", got, len(l.blocks), blocks)
	}
}
