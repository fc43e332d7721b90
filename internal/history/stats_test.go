package history

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// statsExec is an item of job's fire at t0+fire, started lateness later, that took dur (0: still running).
func statsExec(job string, fire time.Duration, item int, lateness, dur time.Duration, ok bool, src ejserver.Source, inst string) ejserver.Execution {
	sched := t0.Add(fire)
	e := newExec(job, item, sched.Add(lateness))
	e.ScheduledAt, e.Source, e.InstanceID, e.Hostname = sched, src, inst, "host-"+inst
	if dur == 0 {
		return running(e)
	}
	e.CompletedAt, e.DurationMs, e.Success = e.StartedAt.Add(dur), dur.Milliseconds(), ok
	return e
}

// statsHistory is the known history the stats tests read: see the comments for what each bucket holds.
func statsHistory() []ejserver.Execution {
	ms := time.Millisecond
	var recs []ejserver.Execution
	// minute 0: one fire of 4 items, 10-40 ms late, 100-400 ms long, the last failed
	for i := range 4 {
		recs = append(recs, statsExec("pay", 0, i, time.Duration(10*(i+1))*ms, time.Duration(100*(i+1))*ms, i != 3, ejserver.SourceNormal, "a"))
	}
	// minute 2: a misfire of 2 items 1 s late, one 50 ms long, one still running
	recs = append(recs, statsExec("pay", 2*time.Minute, 0, time.Second, 50*ms, true, ejserver.SourceMisfire, "a"),
		statsExec("pay", 2*time.Minute, 1, time.Second, 0, false, ejserver.SourceMisfire, "b"))
	// minute 5: a failover on b, a manual run on a (both 5 ms late, 10 ms long)
	recs = append(recs, statsExec("pay", 5*time.Minute, 0, 5*ms, 10*ms, true, ejserver.SourceFailover, "b"),
		statsExec("pay", 5*time.Minute+30*time.Second, 0, 5*ms, 10*ms, true, ejserver.SourceManual, "a"))
	// minute 7: one fire of 100 items, on time, 1..100 ms long
	for i := range 100 {
		recs = append(recs, statsExec("pay", 7*time.Minute, i, 0, time.Duration(i+1)*ms, true, ejserver.SourceNormal, "b"))
	}
	// another job, minute 0 and outside the window
	recs = append(recs, statsExec("other", 30*time.Second, 0, 2*ms, 7*ms, false, ejserver.SourceNormal, "c"),
		statsExec("other", 20*time.Minute, 0, 2*ms, 7*ms, true, ejserver.SourceNormal, "c"))
	return recs
}

func i64(v int64) *int64 { return &v }

func TestJobStats(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		mustWrite(t, s, statsHistory()...)
		got, err := s.JobStats(testCtx(t), StatsQuery{Job: "pay", From: t0, To: t0.Add(10 * time.Minute), Bucket: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Buckets) != 10 {
			t.Fatalf("%d buckets, want 10", len(got.Buckets))
		}
		want := map[int]Aggregate{
			0: {Fires: 1, Items: 4, Success: 3, Failure: 1, DurationAvg: i64(250), DurationMax: i64(400), LatenessAvg: i64(25), LatenessMax: i64(40)},
			2: {Fires: 1, Items: 2, Success: 1, Running: 1, Misfire: 2, DurationAvg: i64(50), DurationMax: i64(50), LatenessAvg: i64(1000), LatenessMax: i64(1000)},
			5: {Fires: 2, Items: 2, Success: 2, Failover: 1, Manual: 1, DurationAvg: i64(10), DurationMax: i64(10), LatenessAvg: i64(5), LatenessMax: i64(5)},
			7: {Fires: 1, Items: 100, Success: 100, DurationAvg: i64(50), DurationMax: i64(100), LatenessAvg: i64(0), LatenessMax: i64(0)},
		}
		for i, b := range got.Buckets {
			if !b.Start.Equal(t0.Add(time.Duration(i) * time.Minute)) {
				t.Errorf("bucket %d starts %s", i, b.Start)
			}
			if d := diff(want[i], b.Aggregate); d != "" {
				t.Errorf("bucket %d (-want +got):\n%s", i, d)
			}
		}
		// the window: 108 items; durations 1..100 and 10,10,50,100..400 (107 ended, 6120 ms); lateness 0 x100,
		// 5,5,10..40,1000,1000 (2110 ms)
		total := Aggregate{Fires: 5, Items: 108, Success: 106, Failure: 1, Running: 1, Misfire: 2, Failover: 1, Manual: 1,
			DurationAvg: i64(6120 / 107), DurationMax: i64(400), LatenessAvg: i64(2110 / 108), LatenessMax: i64(1000),
			DurationP50: i64(51), DurationP99: i64(300), LatenessP50: i64(0), LatenessP99: i64(1000)}
		if d := diff(total, got.Total); d != "" {
			t.Errorf("total (-want +got):\n%s", d)
		}
	})
}

func TestJobPoints(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		mustWrite(t, s, statsHistory()...)
		got, err := s.JobPoints(testCtx(t), StatsQuery{Job: "pay", From: t0, To: t0.Add(6 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		var late []int64
		for _, p := range got.Points {
			outcomes = append(outcomes, p.Outcome())
			late = append(late, p.LatenessMs)
		}
		wantOutcomes := []string{"success", "success", "success", "failure", "misfire", "running", "failover", "manual"}
		if d := diff(wantOutcomes, outcomes); d != "" || got.Truncated {
			t.Errorf("outcomes (-want +got):\n%s (truncated %v)", d, got.Truncated)
		}
		if d := diff([]int64{10, 20, 30, 40, 1000, 1000, 5, 5}, late); d != "" {
			t.Errorf("lateness (-want +got):\n%s", d)
		}
		if p := got.Points[3]; p.DurationMs != 400 || !p.ScheduledAt.Equal(t0) || p.InstanceID != "a" || p.ShardingItem != 3 {
			t.Errorf("point 3 = %+v", p)
		}
	})
}

func TestClusterStats(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		mustWrite(t, s, statsHistory()...)
		q := StatsQuery{From: t0, To: t0.Add(10 * time.Minute), Bucket: 5 * time.Minute}
		got, err := s.ClusterStats(testCtx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Buckets) != 2 || got.Buckets[0].Fires != 3 || got.Buckets[0].Items != 7 || got.Buckets[0].Failure != 2 ||
			got.Buckets[1].Fires != 3 || got.Buckets[1].Items != 102 || got.Total.Items != 109 {
			t.Errorf("buckets %+v total %+v", got.Buckets, got.Total)
		}
		var peers []string
		for _, p := range got.Peers {
			peers = append(peers, p.InstanceID+"/"+p.Hostname)
		}
		if d := diff([]string{"a/host-a", "b/host-b", "c/host-c"}, peers); d != "" {
			t.Fatalf("peers (-want +got):\n%s", d)
		}
		// a: 4 items of minute 0, the misfire's first, the manual run: lateness 10,20,30,40,1000,5
		a := got.Peers[0]
		if a.Items != 6 || a.Failure != 1 || *a.LatenessP50 != 20 || *a.LatenessP99 != 1000 {
			t.Errorf("peer a %+v", a)
		}
		// a token that sees only "other"
		q.Jobs = &JobSet{Names: []string{"other"}}
		got, err = s.ClusterStats(testCtx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total.Items != 1 || len(got.Peers) != 1 || got.Peers[0].InstanceID != "c" {
			t.Errorf("scoped: total %+v peers %+v", got.Total, got.Peers)
		}
		q.Jobs = &JobSet{Prefixes: []string{"p"}}
		got, err = s.ClusterStats(testCtx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total.Items != 108 {
			t.Errorf("prefix scope: total %+v", got.Total)
		}
	})
}

func TestFireItems(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		mustWrite(t, s, statsHistory()...)
		page, err := s.ListExecutions(testCtx(t), ExecutionFilter{JobName: "pay", ScheduledAt: t0.Add(2 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 2 || page.Items[0].Source != ejserver.SourceMisfire {
			t.Errorf("fire items %+v", page.Items)
		}
	})
}

func TestCheckStatsQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		window time.Duration
		bucket time.Duration
		points bool
		field  string
	}{
		{"ok", 24 * time.Hour, 5 * time.Minute, false, ""},
		{"seven days of minutes", 7 * 24 * time.Hour, time.Minute, false, "bucket"},
		{"too long", 32 * 24 * time.Hour, time.Hour, false, "window"},
		{"too short", time.Millisecond, time.Second, false, "window"},
		{"sub-second bucket", time.Hour, 500 * time.Millisecond, false, "bucket"},
		{"points ignore the bucket", time.Hour, 0, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckStatsQuery(StatsQuery{From: t0, To: t0.Add(tt.window), Bucket: tt.bucket}, tt.points)
			var e *ejserver.Error
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("unexpected %v", err)
			case tt.field != "" && (!errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != tt.field):
				t.Fatalf("err %v, want a field error on %s", err, tt.field)
			}
		})
	}
}

// diff is "" when want and got are deeply equal, else both, printed.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("want %s\n got %s", show(want), show(got))
}

func show(v any) string {
	if a, ok := v.(Aggregate); ok {
		p := func(x *int64) string {
			if x == nil {
				return "nil"
			}
			return fmt.Sprint(*x)
		}
		return fmt.Sprintf("%+v dur p50 %s p99 %s avg %s max %s, late p50 %s p99 %s avg %s max %s", Aggregate{Fires: a.Fires, Items: a.Items, Success: a.Success, Failure: a.Failure,
			Running: a.Running, Misfire: a.Misfire, Failover: a.Failover, Manual: a.Manual},
			p(a.DurationP50), p(a.DurationP99), p(a.DurationAvg), p(a.DurationMax), p(a.LatenessP50), p(a.LatenessP99), p(a.LatenessAvg), p(a.LatenessMax))
	}
	return fmt.Sprintf("%v", v)
}

// Above 1,000 ms a percentile is its value rounded down to 3 significant digits, on both stores (one item per
// 30-hour bucket, late and long by the same value).
func TestPercentileBins(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		var recs []ejserver.Execution
		for i, d := range []time.Duration{999, 1_234, 56_789, 3_456_789, 98_765_432} {
			recs = append(recs, statsExec("slow", time.Duration(i)*30*time.Hour, 0, d*time.Millisecond, d*time.Millisecond, true, ejserver.SourceNormal, "a"))
		}
		mustWrite(t, s, recs...)
		want := []int64{999, 1_230, 56_700, 3_450_000, 98_700_000}
		for i, w := range want {
			from := t0.Add(time.Duration(i) * 30 * time.Hour)
			got, err := s.JobStats(testCtx(t), StatsQuery{Job: "slow", From: from, To: from.Add(30 * time.Hour), Bucket: 30 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if a := got.Total; a.DurationP50 == nil || *a.DurationP50 != w || *a.LatenessP99 != w || *a.DurationMax != int64(recs[i].DurationMs) {
				t.Errorf("window %d: %s, want percentiles %d", i, show(a), w)
			}
		}
		// the five: p50 is the 3rd, p99 the 5th
		got, err := s.JobStats(testCtx(t), StatsQuery{Job: "slow", From: t0, To: t0.Add(150 * time.Hour), Bucket: 30 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if p := got.Total.DurationP50; p == nil || *p != 56_700 || *got.Total.DurationP99 != 98_700_000 {
			t.Errorf("total %s", show(got.Total))
		}
	})
}
