package dispatch

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/cluster"
)

// Steering gives a job's effective-schedule rules: its calendars (from a cache kept by watches), endAt and
// pause (calendarstore.Store satisfies it). An error names a calendar the job refers to that is unknown.
type Steering interface {
	Rules(cfg *ejserver.JobConfig) (calendar.Rules, error)
}

// FireCounters keeps the jobs' remainingFires counters (cluster.Registry satisfies it): a conditional write
// (create, or set at the version read) fails with cluster.ErrCounterChanged when another peer wrote first.
type FireCounters interface {
	ReadFireCounter(job string) ([]byte, int32, error)
	WriteFireCounter(job string, data []byte, version int32) error
}

var _ FireCounters = (*cluster.Registry)(nil)

// steer decides whether a scheduled fire runs by the job's pause, endAt, calendars and remainingFires (a
// manual trigger always runs). A fire that does not is a planned skip: recorded as the job's skip reason and
// in the skipped-fires metric (reasons paused, ended, calendar), logged, but not told to the alert follower
// as FIRE_SKIPPED: an operator asked for it, nothing went wrong.
func (e *Executor) steer(req fireRequest, cfg *ejserver.JobConfig) bool {
	if req.trigger != nil || req.source == ejserver.SourceManual {
		return true
	}
	if e.cfg.Steering != nil {
		r, err := e.cfg.Steering.Rules(cfg)
		if err != nil {
			e.plannedSkip(req, calendar.ReasonCalendar+": "+err.Error())
			return false
		}
		if v := r.Decide(req.scheduledAt); !v.Run {
			e.plannedSkip(req, v.Reason)
			return false
		}
	}
	if cfg.RemainingFires <= 0 || e.cfg.Counters == nil {
		return true
	}
	run, err := e.countFire(req, cfg.RemainingFires)
	switch {
	case err != nil:
		e.plannedSkip(req, calendar.ReasonEnded+" for want of its remainingFires counter, which can't be read or written: "+err.Error())
		return false
	case !run:
		e.plannedSkip(req, fmt.Sprintf("%s: its %d remainingFires are used up", calendar.ReasonEnded, cfg.RemainingFires))
		return false
	}
	return true
}

// countFire counts a scheduled fire once across peers: read the counter, decide, write conditionally, and
// on a lost race read again (the winner may have counted this very fire, which then runs here too).
func (e *Executor) countFire(req fireRequest, limit int) (bool, error) {
	for attempt := 0; attempt < 8; attempt++ {
		data, version, err := e.cfg.Counters.ReadFireCounter(req.job)
		if err != nil {
			return false, err
		}
		var cur *calendar.Counter
		if version >= 0 {
			cur = &calendar.Counter{}
			if err := json.Unmarshal(data, cur); err != nil {
				cur = nil // unreadable: start again from the limit
			}
		}
		next, write, run := calendar.Count(cur, limit, req.scheduledAt)
		if !write {
			return run, nil
		}
		b, _ := json.Marshal(next)
		err = e.cfg.Counters.WriteFireCounter(req.job, b, version)
		if errors.Is(err, cluster.ErrCounterChanged) {
			continue
		}
		if err != nil {
			return false, err
		}
		if next.Left == 0 {
			e.log.Info("last of the job's remainingFires counted", "job", req.job, "scheduled_at", req.scheduledAt)
		}
		return run, nil
	}
	return false, errors.New("too many concurrent writes")
}

// plannedSkip records a fire the job's steering skips.
func (e *Executor) plannedSkip(req fireRequest, reason string) {
	e.markSkipped(req)
	e.mu.Lock()
	st := e.jobStatus(req.job)
	st.SkipReason = reason
	st.PlannedSkips++
	e.mu.Unlock()
	e.cfg.Observer.Skipped(req.job, reason)
	// Debug: an ended or paused per-second job would log every second on every peer; the metric and the
	// job's skip reason say it
	e.log.Debug("fire skipped: "+reason, "job", req.job, "scheduled_at", req.scheduledAt)
}
