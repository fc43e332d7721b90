package dispatch

import (
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
)

// Schedule computes fire times (cronexpr.Schedule and robfig/cron's cron.Schedule satisfy it).
type Schedule interface {
	Next(t time.Time) time.Time
}

// FireFunc is called by the scheduler for each due fire; it must return quickly (hand the fire off).
type FireFunc func(d Due)

// A Due fire, as the scheduler hands it off: what it knows of the job at that moment, so the fire need not
// ask for it again by the job's name (each such lookup in a map of every job misses the cache at 100,000 jobs).
type Due struct {
	Job string
	// Ref is the job's registry entry given to SetAt (zero: Set, the job is looked up by name)
	Ref cluster.JobRef
	// At is the fire's scheduled time, Next the one after it (zero: none)
	At, Next time.Time
	// Missed counts the scheduled times that passed without a fire (the peer was frozen or overloaded); they
	// collapse into this one.
	Missed int
}

// Scheduler is the one timer loop for all jobs: a queue of next fire times (fireQueue), so a fire costs a
// map access and an append, and nothing scans or sorts every job. It fires each due job once per scheduled
// time; times that passed while the peer could not fire (frozen, overloaded) collapse into one fire.
type Scheduler struct {
	clk  clock.Clock
	log  *slog.Logger
	fire FireFunc

	mu      sync.Mutex
	maxLead time.Duration
	entries map[string]*entry
	q       fireQueue
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	started bool
	stopped bool
}

type entry struct {
	job   string
	ref   cluster.JobRef
	sched Schedule
	next  time.Time // the scheduled time of the next fire
	at    time.Time // when it is handed off: next minus the lead
	prev  int64     // the scheduled time of the last fire handed off (Unix ns; 0: none yet)
	slot  int       // its place in its fireQueue bucket
}

// NewScheduler returns a stopped scheduler that calls fire.
func NewScheduler(clk clock.Clock, log *slog.Logger, fire FireFunc) *Scheduler {
	return &Scheduler{
		clk: clk, log: log, fire: fire, entries: map[string]*entry{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// SetMaxLead lets the scheduler hand each fire off up to d before its scheduled time, and at most a tenth
// of the job's period before it, so the executor can fence the items in ZooKeeper ahead and the requests
// leave at the scheduled time. The fire keeps its scheduled time; 0 (the default) hands fires off on time.
func (s *Scheduler) SetMaxLead(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxLead = max(d, 0)
}

// handOff returns when the fire scheduled at next is handed off (s.mu held).
func (s *Scheduler) handOff(sched Schedule, next time.Time) time.Time {
	if s.maxLead <= 0 {
		return next
	}
	period := time.Duration(0)
	if after := sched.Next(next); !after.IsZero() {
		period = after.Sub(next)
	}
	return next.Add(-handOffLead(s.maxLead, period))
}

// handOffLead is how long before its scheduled time a fire is handed off: maxLead, at most a tenth of the
// period (0: unknown), and from half a second up rounded down to a whole number of seconds and a half. Cron
// fires land on whole seconds, so a hand-off then falls half-way between two of them: preparing a fire
// (ZooKeeper writes, a goroutine per item) does not compete for the CPU with the requests of other jobs'
// fires leaving at that moment. In steady-10k that halved lateness p99 (310 -> 154 ms with a 1 s lead).
func handOffLead(maxLead, period time.Duration) time.Duration {
	lead := maxLead
	if period > 0 {
		lead = min(lead, period/10)
	}
	const half = 500 * time.Millisecond
	if lead >= half {
		lead = (lead + half).Truncate(time.Second) - half
	}
	return lead
}

// Set schedules job with sched from now on, replacing any earlier schedule. A nil schedule, or one with
// no future fire, unschedules it.
func (s *Scheduler) Set(job string, sched Schedule) { s.SetAt(job, sched, cluster.JobRef{}) }

// SetAt is Set with the job's registry entry, handed off with each of its fires (Due.Ref).
func (s *Scheduler) SetAt(job string, sched Schedule, ref cluster.JobRef) {
	var next time.Time
	if sched != nil {
		next = sched.Next(s.clk.Now())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[job]; e != nil {
		s.q.remove(e)
		delete(s.entries, job)
	}
	if next.IsZero() {
		return
	}
	e := &entry{job: job, ref: ref, sched: sched, next: next, at: s.handOff(sched, next)}
	s.entries[job] = e
	s.q.push(e)
	s.signal()
}

// Remove unschedules job at once.
func (s *Scheduler) Remove(job string) { s.Set(job, nil) }

// Next returns the job's next fire time, or zero when it is not scheduled.
func (s *Scheduler) Next(job string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[job]; e != nil {
		return e.next
	}
	return time.Time{}
}

// Due is when job's fires next need its sharding: the scheduled time of its last fire while that fire may
// still be waiting for it (shardingWait, wait its ExecutorConfig.ReshardWait, taken as for a job that takes late
// fires), else its next; zero when the job is not scheduled. A peer's departure leaves thousands of jobs to
// elect a leader and reshard, at the pace ZooKeeper writes them: in this order, a job whose fire waits or
// comes first is served first (Registry's and Coordinator's Due).
func (s *Scheduler) Due(job string, wait time.Duration) time.Time {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[job]
	switch {
	case e == nil:
		return time.Time{}
	case e.prev != 0:
		if prev := time.Unix(0, e.prev); now.Before(prev.Add(schedule.ShardingWait(wait, s.maxLead, prev, e.next, true))) {
			return prev
		}
	}
	return e.next
}

// Fires returns the job's last fire handed off (zero: none yet) and its schedule's Next (nil when it is not
// scheduled): sharding.CoordinatorConfig.Fires.
func (s *Scheduler) Fires(job string) (last time.Time, next func(time.Time) time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[job]
	if e == nil {
		return time.Time{}, nil
	}
	if e.prev != 0 {
		last = time.Unix(0, e.prev)
	}
	return last, e.sched.Next
}

// Firing reports whether a fire of job may be deciding which items it runs, or beginning them, on any peer
// now (the peers share the job's schedule and hand its fires off alike): from guard before its hand-off until
// guard after its scheduled time. A resharding that is not a fire's commits outside these windows
// (sharding.CoordinatorConfig.Firing): committed inside one, an item could move after the peer gaining it had
// decided its items of the fire and before the peer losing it began it, and neither would run it.
func (s *Scheduler) Firing(job string, guard time.Duration) bool {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[job]
	if e == nil {
		return false
	}
	_, in := e.window(now, guard)
	return in
}

// window finds the fire whose Firing window holds now, if one does (in): the last fire handed off while within
// guard after its time, else the next fire from guard before its hand-off.
func (e *entry) window(now time.Time, guard time.Duration) (fire time.Time, in bool) {
	switch {
	case e.prev != 0 && now.UnixNano() < e.prev+int64(guard):
		return time.Unix(0, e.prev), true
	case !now.Before(e.at.Add(-guard)):
		return e.next, true
	}
	return time.Time{}, false
}

// QuietAt is when job is next not Firing (with the same guard): now when it is not, else when the window it is
// in closes (guard after the scheduled time of the fire it covers), and whether that comes before the next
// fire's window opens. False for a job not scheduled, and for one fired so often that its windows touch (a
// job every few seconds is never quiet).
func (s *Scheduler) QuietAt(job string, guard time.Duration) (time.Time, bool) {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[job]
	if e == nil {
		return time.Time{}, false
	}
	fire, in := e.window(now, guard)
	if !in {
		return now, true
	}
	after := e.next // the fire after the one whose window holds now
	if !fire.Before(e.next) {
		after = e.sched.Next(e.next)
	}
	end := fire.Add(guard)
	if after.IsZero() {
		return end, true // no fire after it
	}
	return end, end.Before(s.handOff(e.sched, after).Add(-guard))
}

// Schedule returns the job's schedule, or nil when it is not scheduled.
func (s *Scheduler) Schedule(job string) Schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[job]; e != nil {
		return e.sched
	}
	return nil
}

// Len is the number of scheduled jobs.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs the loop until Stop.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	go s.loop()
}

// Stop ends the loop and waits for it; no fire starts afterwards. Safe twice and before Start.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		if s.started {
			<-s.done
		}
		return
	}
	s.stopped = true
	started := s.started
	s.mu.Unlock()
	close(s.stop)
	if started {
		<-s.done
	}
}

func (s *Scheduler) loop() {
	defer close(s.done)
	timer := s.clk.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, wait := s.takeDue(s.clk.Now())
		for _, d := range due {
			if d.Missed > 0 {
				s.log.Warn("fires were missed while the peer could not fire; firing once", "job", d.Job, "missed", d.Missed)
			}
			s.fire(d)
		}
		if len(due) > 0 {
			continue // fires may have taken a moment: look at the clock again
		}
		timer.Reset(wait)
		select {
		case <-s.stop:
			return
		case <-s.wake:
			timer.Stop()
		case <-timer.C():
		}
	}
}

// takeDue moves every job whose hand-off is due at now on to its next fire and returns their fires, in the
// order of their hand-off and then of their names, and how long until the next hand-off.
func (s *Scheduler) takeDue(now time.Time) ([]Due, time.Duration) {
	var due []Due
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		k, ok := s.q.first()
		if !ok || k > now.UnixNano() {
			break
		}
		for _, e := range s.q.take() {
			at, missed := e.next, 0
			next := e.sched.Next(at)
			// collapse the times that passed while we could not fire; a time still to come whose hand-off
			// passed meanwhile is not one of them: it is handed off as its own fire right after this one
			for !next.IsZero() && !next.After(now) {
				at, missed = next, missed+1
				next = e.sched.Next(next)
			}
			due = append(due, Due{Job: e.job, Ref: e.ref, At: at, Next: next, Missed: missed})
			e.prev = at.UnixNano()
			if next.IsZero() {
				delete(s.entries, e.job)
				continue
			}
			e.next, e.at = next, s.handOff(e.sched, next)
			s.q.push(e)
		}
	}
	wait := time.Hour
	if k, ok := s.q.first(); ok {
		wait = time.Unix(0, k).Sub(now)
	}
	return due, wait
}
