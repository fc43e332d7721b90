package dispatch

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/cronexpr"
)

func newCatchUpExecutor(t *testing.T, reg *fakeRegistry, send *fakeSender) *Executor {
	t.Helper()
	sched, err := cronexpr.Parse("* * * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	reg.snap.Config.CatchUp = "all"
	return NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ScheduleOf: func(string) Schedule { return sched }})
}

// drainSent collects the deliveries until none comes for a while: item@unix-second -> sources.
func drainSent(t *testing.T, send *fakeSender, n int) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for range n {
		p := send.next(t)
		k := fmt.Sprintf("%d@%d", p.ShardingItem, p.ScheduledAt.Unix())
		got[k] = append(got[k], p.Source)
	}
	send.none(t)
	return got
}

// catchUp all: an item whose last run ended as LOST on a peer that vanished (no mark here) runs every fire
// after it; a fire this peer skipped for a fault is caught up for every item; one whose item never ran
// anywhere catches up nothing.
func TestCatchUpAllGainedItemsAndSkippedFires(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	e := newCatchUpExecutor(t, reg, send)
	defer e.Drain(time.Second)
	reg.completed[1] = cluster.Completed{ScheduledAt: time.Unix(100, 0), State: cluster.CompletedLost}

	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(104, 0), source: ejserver.SourceNormal})
	got := drainSent(t, send, 5)
	want := map[string][]string{"0@104": {"NORMAL_TRIGGER"}, "1@104": {"NORMAL_TRIGGER"},
		"1@101": {"MISFIRE"}, "1@102": {"MISFIRE"}, "1@103": {"MISFIRE"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first fire sent %v, want %v", got, want)
	}

	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(105, 0), source: ejserver.SourceNormal})
	if got := drainSent(t, send, 2); len(got) != 2 || got["0@105"] == nil || got["1@105"] == nil {
		t.Fatalf("the next fire sent %v: no catch-up expected", got)
	}

	// 106 is skipped here (say the sharding was not ready): 107 finds the gap and catches 106 up
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(107, 0), source: ejserver.SourceNormal})
	got = drainSent(t, send, 4)
	want = map[string][]string{"0@106": {"MISFIRE"}, "0@107": {"NORMAL_TRIGGER"}, "1@106": {"MISFIRE"}, "1@107": {"NORMAL_TRIGGER"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a skipped fire sent %v, want %v", got, want)
	}
}

// Fires of one job reach the executor out of order (each is its own goroutine, one may wait for a
// resharding): the later one catches the earlier one up, and the earlier one then runs nothing, so no fire
// runs twice.
func TestCatchUpAllOutOfOrderFiresRunOnce(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	e := newCatchUpExecutor(t, reg, send)
	defer e.Drain(time.Second)
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(200, 0), source: ejserver.SourceNormal})
	drainSent(t, send, 2)
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(202, 0), source: ejserver.SourceNormal})
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(201, 0), source: ejserver.SourceNormal})
	got := drainSent(t, send, 4)
	want := map[string][]string{"0@201": {"MISFIRE"}, "0@202": {"NORMAL_TRIGGER"}, "1@201": {"MISFIRE"}, "1@202": {"NORMAL_TRIGGER"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
}

// Fires skipped on purpose are not missed ones: this peer's server disabled for the job, an item disabled.
func TestCatchUpAllSkipsPlannedSkips(t *testing.T) {
	reg, send := newFakeRegistry(2), newFakeSender()
	e := newCatchUpExecutor(t, reg, send)
	defer e.Drain(time.Second)
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(300, 0), source: ejserver.SourceNormal})
	drainSent(t, send, 2)

	reg.mu.Lock()
	snap := *reg.snap
	snap.Servers = map[string]string{"10.0.0.1": "DISABLED"}
	reg.snap = &snap
	reg.mu.Unlock()
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(301, 0), source: ejserver.SourceNormal})
	send.none(t)

	reg.mu.Lock()
	snap = *reg.snap
	snap.Servers = map[string]string{}
	snap.Items = slices.Clone(snap.Items)
	snap.Items[1].Disabled = true
	reg.snap = &snap
	reg.mu.Unlock()
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(302, 0), source: ejserver.SourceNormal})
	if got := drainSent(t, send, 1); len(got) != 1 || got["0@302"] == nil {
		t.Fatalf("with the server enabled again and item 1 disabled: %v", got)
	}

	reg.mu.Lock()
	snap = *reg.snap
	snap.Items = slices.Clone(snap.Items)
	snap.Items[1].Disabled = false
	reg.snap = &snap
	reg.mu.Unlock()
	e.fire(fireRequest{job: "j", scheduledAt: time.Unix(303, 0), source: ejserver.SourceNormal})
	if got := drainSent(t, send, 2); len(got) != 2 || got["0@303"] == nil || got["1@303"] == nil {
		t.Fatalf("item 1 enabled again: %v (its disabled fire is not missed)", got)
	}
}

// A fire that looks up its items' last runs (here both gained from a vanished peer, their runs ended LOST at
// 100) while the next fire of the job runs them here: whichever of the two claims the items looks, and the
// other's run is no evidence that the fires before it ran. With the lookup after the claim, the next fire
// (105) began, or began and ended, between the claim and the reads, its running or completed node named 105:
// 101 to 104 were never delivered.
func TestCatchUpAllAReadRacingALaterFireMissesNothing(t *testing.T) {
	for _, ended := range []bool{false, true} {
		t.Run(fmt.Sprintf("ended=%v", ended), func(t *testing.T) {
			reg, send := newFakeRegistry(2), newFakeSender()
			e := newCatchUpExecutor(t, reg, send)
			defer e.Drain(time.Second)
			reg.completed[0] = cluster.Completed{ScheduledAt: time.Unix(100, 0), State: cluster.CompletedLost}
			reg.completed[1] = reg.completed[0]
			var raced atomic.Bool
			var holds []chan struct{}
			ends := make(chan cluster.Completed, 20)
			reg.set(func() {
				reg.ends = ends
				reg.readingCompleted = func(int) {
					if !raced.CompareAndSwap(false, true) { // once (105's own reads come here too)
						return
					}
					if !ended {
						holds = append(holds, send.holdItem(0), send.holdItem(1))
					}
					e.fire(fireRequest{job: "j", scheduledAt: time.Unix(105, 0), source: ejserver.SourceNormal})
					for n := 0; ended && n < 2; n++ {
						select {
						case <-ends:
						case <-time.After(5 * time.Second):
							t.Error("the racing fire's items never ended")
							return
						}
					}
				}
			})
			e.fire(fireRequest{job: "j", scheduledAt: time.Unix(104, 0), source: ejserver.SourceNormal})
			for _, h := range holds {
				close(h)
			}
			got := drainSent(t, send, 10)
			want := map[string][]string{}
			for item := range 2 {
				for at := 101; at <= 104; at++ {
					want[fmt.Sprintf("%d@%d", item, at)] = []string{"MISFIRE"}
				}
				want[fmt.Sprintf("%d@105", item)] = []string{"NORMAL_TRIGGER"}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("sent %v, want %v", got, want)
			}
		})
	}
}

func TestInFlightFire(t *testing.T) {
	at := time.Unix(104, 0)
	for _, c := range []struct {
		run  cluster.Running
		want time.Time
	}{
		{cluster.Running{Source: ejserver.SourceNormal, ScheduledAt: time.Unix(103, 0)}, time.Unix(103, 0)},
		{cluster.Running{Source: ejserver.SourceFailover, ScheduledAt: time.Unix(102, 0)}, time.Unix(102, 0)},
		{cluster.Running{Source: ejserver.SourceMisfire, ScheduledAt: time.Unix(101, 0)}, time.Unix(101, 0)},
		{cluster.Running{Source: ejserver.SourceNormal, ScheduledAt: at}, time.Time{}},                  // this fire's own
		{cluster.Running{Source: ejserver.SourceNormal, ScheduledAt: time.Unix(105, 0)}, time.Time{}},   // a later fire
		{cluster.Running{Source: ejserver.SourceManual, ScheduledAt: time.Unix(103, 0)}, time.Time{}},   // on request
		{cluster.Running{Source: ejserver.SourceWorkflow, ScheduledAt: time.Unix(103, 0)}, time.Time{}}, // on request
		{cluster.Running{InstanceID: "elasticjob@-@1"}, time.Time{}},                                    // ElasticJob's bare node
	} {
		if got := inFlightFire(c.run, at); !got.Equal(c.want) {
			t.Errorf("inFlightFire(%+v) = %v, want %v", c.run, got, c.want)
		}
	}
}
