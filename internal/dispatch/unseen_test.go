package dispatch

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/cluster"
)

func TestLastFires(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	for _, c := range []struct {
		name             string
		sched            Schedule
		since, now       int64
		wantPrev, wantAt int64 // 0: zero
	}{
		{"two and more in the window", every(10 * time.Second), 1000, 1035, 1020, 1030},
		{"a fire at now counts", every(10 * time.Second), 1000, 1030, 1020, 1030},
		{"one only", every(10 * time.Second), 1021, 1035, 0, 1030},
		{"none", every(time.Minute), 1021, 1035, 0, 0},
		{"a schedule with no fire", never{}, 1000, 1035, 0, 0},
	} {
		prev, got := lastFires(c.sched, at(c.since), at(c.now))
		want := func(s int64) time.Time {
			if s == 0 {
				return time.Time{}
			}
			return at(s)
		}
		if !prev.Equal(want(c.wantPrev)) || !got.Equal(want(c.wantAt)) {
			t.Errorf("%s: lastFires = %v, %v; want %v, %v", c.name, prev, got, want(c.wantPrev), want(c.wantAt))
		}
	}
}

// A peer that schedules a job after its last fire was handed off (a restarted peer's new process loading its
// jobs) and is then given an item by a resharding runs that fire's item, when the peer that had the item
// decided the fire and its begin was fenced out by the resharding (the steady-100000 restarts' fires run by no
// peer, runs 19 and 20): only when the job's settings ran that fire and the item's completed node shows the
// fire before it ran, not this one. Without Scheduled, every case runs nothing.
func TestExecutorRunsTheItemsItGainsForAFireHandedOffBeforeItScheduledTheJob(t *testing.T) {
	const period = 10 * time.Second
	for _, tc := range []struct {
		name string
		// completed: item 0's completed node, as an offset from the fire (nil: none)
		completed *time.Duration
		setup     func(reg *fakeRegistry)      // before Scheduled
		edit      func(s *cluster.JobSnapshot) // after Scheduled, before the resharding
		rules     *calendar.Rules              // the job's calendars, pause and endAt (nil: none)
		run       bool
	}{
		{name: "the fire before ran", completed: dur(-period), run: true},
		{name: "this fire ran", completed: dur(0)},
		{name: "no completed node", completed: nil},
		{name: "an older fire ran last: the job was not run just before (its peers were all down)", completed: dur(-2 * period)},
		{name: "the config was written after the fire (the job's creation, say)", completed: dur(-period),
			setup: func(reg *fakeRegistry) { reg.snap.ConfigChanged = time.Now().Add(time.Second) }},
		{name: "the config was written since the job was scheduled here (disabled and enabled)", completed: dur(-period),
			edit: func(s *cluster.JobSnapshot) { s.ConfigChanged = time.Now() }},
		{name: "it counts remainingFires", completed: dur(-period),
			setup: func(reg *fakeRegistry) { reg.snap.Config.RemainingFires = 5 }},
		{name: "its endAt passed before the fire", completed: dur(-period),
			rules: &calendar.Rules{EndAt: time.Now().Add(-time.Hour)}},
		{name: "monitorExecution off", completed: dur(-period),
			setup: func(reg *fakeRegistry) { reg.snap.Config.MonitorExecution = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, send := itemOfB(1, 0)
			if tc.setup != nil {
				tc.setup(reg)
			}
			ecfg := ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if tc.rules != nil {
				ecfg.Steering = rulesOf(*tc.rules)
			}
			e := NewExecutor(ecfg)
			defer e.Drain(time.Second)
			e.Scheduled(reg.Job("j"), every(period))
			at := time.Now().Truncate(period) // the fire Scheduled counts (when it counts one)
			e.mu.Lock()
			if d := e.jobStatus("j").decided; !d.at.IsZero() {
				at = d.at // the period turned between the two looks at the clock
			}
			e.mu.Unlock()
			if tc.edit != nil {
				reg.update(tc.edit)
			}
			give(reg, true, func() {
				if tc.completed != nil {
					reg.completed[0] = cluster.Completed{ExecutionID: "x0", InstanceID: "b", Source: ejserver.SourceNormal, ScheduledAt: at.Add(*tc.completed)}
				}
			}, 0)
			e.ItemsChanged("j")
			if !tc.run {
				send.none(t)
				return
			}
			p := send.next(t)
			if p.ShardingItem != 0 || !p.ScheduledAt.Equal(at) || p.Source != string(ejserver.SourceNormal) {
				t.Fatalf("ran item %d for %s (%s), want item 0 for the fire at %s", p.ShardingItem, p.ScheduledAt, p.Source, at)
			}
			send.none(t)
			e.ItemsChanged("j") // another node of the job changed: nothing runs twice
			send.none(t)
		})
	}
}

func dur(d time.Duration) *time.Duration { return &d }

// rulesOf is a Steering that gives every job the same rules.
type rulesOf calendar.Rules

func (r rulesOf) Rules(*ejserver.JobConfig) (calendar.Rules, error) { return calendar.Rules(r), nil }
