package dispatch

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/schedule"
)

// every fires on multiples of d.
type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}

type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

type fireLog struct {
	mu    sync.Mutex
	fires []string
	nexts []time.Time // each fire's Due.Next
	ch    chan struct{}
}

func (f *fireLog) fire(d Due) {
	f.mu.Lock()
	f.fires = append(f.fires, fmt.Sprintf("%s@%d/%d", d.Job, d.At.Unix(), d.Missed))
	f.nexts = append(f.nexts, d.Next)
	f.mu.Unlock()
	f.ch <- struct{}{}
}

// next is the i-th fire's Due.Next.
func (f *fireLog) next(i int) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nexts[i]
}

func (f *fireLog) wait(t *testing.T, n int) []string {
	t.Helper()
	for range n {
		select {
		case <-f.ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("waited for %d fires; have %v", n, f.fires)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.fires
	f.fires = nil
	return out
}

func newTestScheduler(t *testing.T) (*Scheduler, *clock.Fake, *fireLog) {
	clk := clock.NewFake(time.Unix(1000, 0))
	log := &fireLog{ch: make(chan struct{}, 100)}
	s := NewScheduler(clk, slog.New(slog.NewTextHandler(io.Discard, nil)), log.fire)
	t.Cleanup(s.Stop)
	return s, clk, log
}

// startScheduler starts s and returns once its loop waits on its first timer.
func startScheduler(s *Scheduler, clk *clock.Fake) {
	created := clk.TimerCreated()
	s.Start()
	<-created
}

// advance moves the fake clock once the scheduler loop is waiting on its timer: no timer was created for
// 50 ms. (A loop that read the clock before the advance and armed its timer after it would wait d too long.)
func advance(t *testing.T, clk *clock.Fake, d time.Duration) {
	t.Helper()
	for {
		created := clk.TimerCreated()
		select {
		case <-created:
			continue
		case <-time.After(50 * time.Millisecond):
		}
		break
	}
	clk.Advance(d)
}

// advanceTo is advance to the moment at.
func advanceTo(t *testing.T, clk *clock.Fake, at time.Time) {
	t.Helper()
	advance(t, clk, at.Sub(clk.Now()))
}

func TestSchedulerFiresDueJobsInOrder(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	startScheduler(s, clk)
	s.Set("b", every(10*time.Second))
	s.Set("a", every(5*time.Second))
	if got := s.Next("a"); !got.Equal(time.Unix(1005, 0)) {
		t.Fatalf("next of a = %v", got)
	}
	advance(t, clk, 5*time.Second)
	if got := log.wait(t, 1); got[0] != "a@1005/0" {
		t.Fatalf("fires %v", got)
	}
	if next := log.next(0); !next.Equal(time.Unix(1010, 0)) || !next.Equal(s.Next("a")) {
		t.Fatalf("the fire of 1005 handed off with next %v; the scheduler's %v", next, s.Next("a"))
	}
	advance(t, clk, 5*time.Second)
	got := log.wait(t, 2)
	if got[0] != "a@1010/0" || got[1] != "b@1010/0" {
		t.Fatalf("fires %v", got)
	}
	if s.Len() != 2 {
		t.Fatalf("len %d", s.Len())
	}
}

func TestSchedulerCollapsesMissedFires(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	startScheduler(s, clk)
	s.Set("a", every(time.Second))
	// the peer was frozen for 10.5 s: one fire, for the latest scheduled time, counting 9 missed
	advance(t, clk, 10500*time.Millisecond)
	if got := log.wait(t, 1); got[0] != "a@1010/9" {
		t.Fatalf("fires %v", got)
	}
	if next := s.Next("a"); !next.Equal(time.Unix(1011, 0)) || !log.next(0).Equal(next) {
		t.Fatalf("next %v, handed off with %v", next, log.next(0))
	}
}

func TestSchedulerRemoveAndReschedule(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	startScheduler(s, clk)
	s.Set("a", every(5*time.Second))
	s.Set("gone", every(time.Second))
	s.Remove("gone")
	s.Set("never", never{})
	if s.Len() != 1 || !s.Next("gone").IsZero() || !s.Next("never").IsZero() {
		t.Fatalf("len %d", s.Len())
	}
	s.Set("a", every(2*time.Second)) // a changed cron takes effect at once
	advance(t, clk, 2*time.Second)
	if got := log.wait(t, 1); got[0] != "a@1002/0" {
		t.Fatalf("fires %v", got)
	}
}

func TestSchedulerStopIsSafe(t *testing.T) {
	s, _, _ := newTestScheduler(t)
	s.Stop() // before Start
	s.Start()
	s.Stop()
	s.Stop()
}

func TestSchedulerHandsFiresOffAheadByAtMostATenthOfThePeriod(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	s.SetMaxLead(time.Second)
	startScheduler(s, clk)
	s.Set("slow", every(20*time.Second)) // lead 1 s (the bound), half a second off the whole seconds: 1019.5
	s.Set("fast", every(time.Second))    // lead 100 ms: handed off at 1000.9
	advance(t, clk, 899*time.Millisecond)
	select {
	case <-log.ch:
		t.Fatal("handed off too early")
	case <-time.After(50 * time.Millisecond):
	}
	advance(t, clk, time.Millisecond)
	if got := log.wait(t, 1); got[0] != "fast@1001/0" { // the scheduled time, not the hand-off time
		t.Fatalf("fires %v", got)
	}
	if next := s.Next("fast"); !next.Equal(time.Unix(1002, 0)) {
		t.Fatalf("next %v", next)
	}
	advance(t, clk, 18100*time.Millisecond) // 1019.0: fast's fires collapse into one
	if got := log.wait(t, 1); got[0] != "fast@1019/17" {
		t.Fatalf("fires %v", got)
	}
	advance(t, clk, 500*time.Millisecond) // 1019.5: slow is handed off
	if got := log.wait(t, 1); got[0] != "slow@1020/0" {
		t.Fatalf("fires %v", got)
	}
}

func TestSchedulerCollapsesOnlyTimesThatPassed(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	s.SetMaxLead(time.Second)
	startScheduler(s, clk)
	s.Set("fast", every(3*time.Second)) // lead 300 ms: 1002 is handed off at 1001.7, 1005 at 1004.7
	// the peer could not fire from 1000 to 1004.85 (a CI host stalled 4.8 s): 1002 passed, 1005 is still to
	// come though its hand-off passed; 1002 fires late and 1005 on its own, not collapsed into it
	advance(t, clk, 4850*time.Millisecond)
	if got := log.wait(t, 2); got[0] != "fast@1002/0" || got[1] != "fast@1005/0" {
		t.Fatalf("fires %v", got)
	}
	if next := s.Next("fast"); !next.Equal(time.Unix(1008, 0)) {
		t.Fatalf("next %v", next)
	}
}

func TestHandOffLeadFallsBetweenWholeSeconds(t *testing.T) {
	for _, c := range []struct{ maxLead, period, want time.Duration }{
		{0, time.Minute, 0},
		{time.Second, 0, 500 * time.Millisecond}, // a one-off: the bound, between whole seconds
		{time.Second, time.Second, 100 * time.Millisecond},
		{time.Second, 4 * time.Second, 400 * time.Millisecond},
		{time.Second, 8 * time.Second, 500 * time.Millisecond},
		{time.Second, 20 * time.Second, 500 * time.Millisecond},
		{1400 * time.Millisecond, time.Minute, 500 * time.Millisecond},
		{1500 * time.Millisecond, time.Minute, 1500 * time.Millisecond},
		{2 * time.Second, time.Minute, 1500 * time.Millisecond},
		{300 * time.Millisecond, time.Minute, 300 * time.Millisecond},
	} {
		if got := handOffLead(c.maxLead, c.period); got != c.want {
			t.Errorf("handOffLead(%s, %s) = %s, want %s", c.maxLead, c.period, got, c.want)
		}
	}
}

// Firing covers a fire from guard before its hand-off to guard after its scheduled time, the next fire's
// window and the last one's: a resharding that is not a fire's waits outside them.
func TestSchedulerFiringCoversAFireFromItsHandOff(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	s.SetMaxLead(time.Second) // a 60 s period: hand-offs half a second ahead
	startScheduler(s, clk)
	const guard = 3 * time.Second
	if s.Firing("a", guard) {
		t.Fatal("an unscheduled job is firing")
	}
	s.Set("a", every(time.Minute)) // next fire 1020, handed off at 1019.5; the clock is at 1000
	for _, tc := range []struct {
		at     time.Duration // since 1000 s
		firing bool
	}{
		{0, false},
		{16400 * time.Millisecond, false}, // 3.1 s before the hand-off
		{16600 * time.Millisecond, true},  // 2.9 s before
		{19 * time.Second, true},
	} {
		advanceTo(t, clk, time.Unix(1000, 0).Add(tc.at)) // before the hand-off: nothing fires
		if got := s.Firing("a", guard); got != tc.firing {
			t.Fatalf("at 1000+%s: firing %v, want %v", tc.at, got, tc.firing)
		}
	}
	advance(t, clk, 500*time.Millisecond) // 1019.5: the fire of 1020 is handed off
	if got := log.wait(t, 1); got[0] != "a@1020/0" {
		t.Fatalf("fires %v", got)
	}
	for _, tc := range []struct {
		at     time.Duration // since 1020 s, the last fire's scheduled time
		firing bool
	}{
		{0, true},
		{2900 * time.Millisecond, true},
		{3100 * time.Millisecond, false}, // the last fire's begins landed; the next is at 1080
		{56 * time.Second, false},
		{56600 * time.Millisecond, true}, // 2.9 s before the next hand-off
	} {
		advanceTo(t, clk, time.Unix(1020, 0).Add(tc.at)) // before the next hand-off
		if got := s.Firing("a", guard); got != tc.firing {
			t.Fatalf("at 1020+%s: firing %v, want %v", tc.at, got, tc.firing)
		}
	}
}

// QuietAt: when a job is next not Firing, and whether it ever is: a job every minute is quiet 3 s after each
// fire until 3 s before the next hand-off; one every 5 s never is.
func TestSchedulerQuietAtEndsTheFiringWindow(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	s.SetMaxLead(time.Second) // a 60 s period: hand-offs half a second ahead
	startScheduler(s, clk)
	const guard = 3 * time.Second
	if _, ok := s.QuietAt("a", guard); ok {
		t.Fatal("an unscheduled job has a quiet moment")
	}
	s.Set("a", every(time.Minute))   // next fire 1020, handed off at 1019.5; the clock is at 1000
	s.Set("b", every(5*time.Second)) // next fire 1005
	check := func(job string, wantAt int64, wantOK bool) {
		t.Helper()
		at, ok := s.QuietAt(job, guard)
		if ok != wantOK || (ok && at.Unix() != wantAt) {
			t.Fatalf("at %v: %s quiet at %v (%v), want %v (%v)", clk.Now().Unix(), job, at.Unix(), ok, wantAt, wantOK)
		}
	}
	check("a", 1000, true) // not firing: now
	advance(t, clk, 17*time.Second)
	check("a", 1023, true)                 // 2.5 s before the hand-off of 1020: its window ends 3 s after it
	check("b", 0, false)                   // fired every 5 s: its windows touch
	advance(t, clk, 2500*time.Millisecond) // 1019.5: the fire of 1020 is handed off
	log.wait(t, 1)
	advanceTo(t, clk, time.Unix(1021, 0))
	check("a", 1023, true) // in the window after the fire
}

// Due: a job's next fire, except while its last fire may still wait for its sharding (as a fire of a job that
// takes late fires waits: shardingWait): that fire's time.
func TestSchedulerDueIsAWaitingFireElseTheNext(t *testing.T) {
	const wait = 30 * time.Second
	for _, tc := range []struct {
		name   string
		period time.Duration
		first  int64 // the first fire from 1000
		steps  []struct {
			at  time.Duration // since the first fire
			due int64
		}
	}{
		{"every minute: the last fire until the next is handed off", time.Minute, 1020, []struct {
			at  time.Duration
			due int64
		}{{0, 1020}, {29 * time.Second, 1020}, {59 * time.Second, 1020}}},
		{"every hour: the last fire for at most MaxShardingWait", time.Hour, 3600, []struct {
			at  time.Duration
			due int64
		}{{0, 3600}, {schedule.MaxShardingWait - time.Second, 3600}, {schedule.MaxShardingWait, 7200}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk, log := newTestScheduler(t)
			startScheduler(s, clk)
			if due := s.Due("a", wait); !due.IsZero() {
				t.Fatalf("an unscheduled job is due at %v", due)
			}
			s.Set("a", every(tc.period)) // the clock is at 1000
			if due := s.Due("a", wait); due.Unix() != tc.first {
				t.Fatalf("before its first fire: due %v, want %d", due.Unix(), tc.first)
			}
			advanceTo(t, clk, time.Unix(tc.first, 0))
			if got := log.wait(t, 1); got[0] != fmt.Sprintf("a@%d/0", tc.first) {
				t.Fatalf("fires %v", got)
			}
			for _, st := range tc.steps {
				advanceTo(t, clk, time.Unix(tc.first, 0).Add(st.at))
				if due := s.Due("a", wait); due.Unix() != st.due {
					t.Fatalf("at %d+%s: due %d, want %d", tc.first, st.at, due.Unix(), st.due)
				}
			}
		})
	}
}

// Fires: the last fire handed off (none before the first) and the job's schedule; nothing for a job not scheduled.
func TestSchedulerFires(t *testing.T) {
	s, clk, log := newTestScheduler(t)
	startScheduler(s, clk)
	if last, next := s.Fires("a"); !last.IsZero() || next != nil {
		t.Fatalf("an unscheduled job: %v, a schedule", last)
	}
	s.Set("a", every(time.Minute))
	if last, next := s.Fires("a"); !last.IsZero() || next == nil || next(time.Unix(1020, 0)).Unix() != 1080 {
		t.Fatalf("before its first fire: last %v", last)
	}
	advanceTo(t, clk, time.Unix(1020, 0))
	log.wait(t, 1)
	if last, _ := s.Fires("a"); last.Unix() != 1020 {
		t.Fatalf("after the fire of 1020: last %v", last.Unix())
	}
}
