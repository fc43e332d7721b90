package dispatch

import (
	"log/slog"
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

// A scheduled fire or trigger on this peer: its session and registration waited for (fire), its checks and
// steering (decideFire), its sharding (fireSharded), the decision and the run of this peer's items
// (fireDecided, runFire). A fire with nothing to run here may be decided where it is handed off (firehere.go).

// fire runs one fire of a job on this peer.
func (e *Executor) fire(req fireRequest) {
	// read again, not taken from fireHere's read at the hand-off: a goroutine started in a busy second may run
	// seconds later, and deciding on the hand-off's owners then would run items another peer now holds
	snap := e.job(&req)
	if snap == nil {
		return
	}
	if snap = e.sessionAtHandOff(&req, snap); snap == nil {
		return
	}
	e.decideFire(req, e.awaitRegistration(snap), false)
}

// decideFire goes on with a fire whose session and registration were waited for: the job's and the peer's
// checks, its steering, the sharding (waited for, or done as leader), the decision and the run of this
// peer's items. atOnce: it runs on a caller that must not wait (fireHere): a fire whose sharding is not ready
// goes on on a goroutine of its own.
func (e *Executor) decideFire(req fireRequest, snap *cluster.JobSnapshot, atOnce bool) {
	job := req.job
	cfg := snap.Config
	switch {
	case snap.ConfigErr != nil:
		e.skip(req, "config can't be parsed", "err", snap.ConfigErr)
		return
	case cfg.Disabled:
		e.skip(req, "job disabled")
		return
	case !snap.Registered:
		e.skip(req, "this peer's instance node is not registered on the job")
		return
	case snap.ServerDisabled(snap.MyIP):
		e.markSkipped(req)
		e.skip(req, "this peer's server is disabled for the job")
		return
	case !e.steer(req, cfg):
		return
	}
	if msg := e.clockCheck(cfg.MaxTimeDiffSeconds); msg != "" {
		e.mu.Lock()
		e.jobStatus(job).ClockError = msg
		e.mu.Unlock()
		e.skip(req, "clock check failed", "detail", msg)
		return
	}
	e.mu.Lock()
	st := e.jobStatus(job)
	st.ClockError, st.SkipReason, st.LastFireAt = "", "", req.scheduledAt
	e.mu.Unlock()
	switch {
	case !atOnce:
		e.fireSharded(req, snap)
	case fireReady(snap, Peers(e.reg)):
		e.fireDecided(req, snap, false) // what ensureSharded does with a ready snapshot, without looking again
	default:
		req := req // the goroutine's own: a capture of the parameter moves it to the heap at every call
		e.spawn(func() { e.fireSharded(req, snap) })
	}
}

// fireSharded is the rest of decideFire: the sharding, then fireDecided.
func (e *Executor) fireSharded(req fireRequest, snap *cluster.JobSnapshot) {
	snap, waited, err := e.ensureSharded(req, snap)
	if err != nil {
		level := slog.LevelWarn
		if e.soft.Err() != nil {
			level = slog.LevelInfo // the peer is stopping: its waits end, no fault
		}
		e.skipAt(level, req, "no sharding to fire with", "err", err)
		return
	}
	e.fireDecided(req, snap, waited)
}

// fireDecided decides a fire with a snapshot whose sharding is ready (waited: it was not at first) and runs
// this peer's items of it.
func (e *Executor) fireDecided(req fireRequest, snap *cluster.JobSnapshot, waited bool) {
	job := req.job
	if req.trigger != nil && snap.IsLeader() {
		e.handOnTrigger(snap, *req.trigger)
	}
	e.decided(req, snap)
	items := snap.MyItems()
	if req.items != nil {
		items = slices.DeleteFunc(items, func(i int) bool { return !slices.Contains(req.items, i) })
	}
	if req.source == ejserver.SourceNormal && (waited || e.reshardedNear(snap, req.scheduledAt)) {
		items = e.notRunYet(req, items)
	}
	items, replay := e.missedFires(snap, req, items)
	if e.runFire(snap, req, items, replay) {
		e.cfg.Observer.Fired(job, req.source)
	}
}

// runFire starts the fire's items on this peer (with the catch-ups replay lists per item) and reports
// whether it did.
func (e *Executor) runFire(snap *cluster.JobSnapshot, req fireRequest, items []int, replay map[int][]time.Time) bool {
	if len(items) == 0 {
		return false
	}
	job := req.job
	req.taskID = ejserver.TaskID(job, items, false, e.me.InstanceID)
	req.task = e.newTask(req.taskID, job, req.source, items)
	req.untraced = req.task == nil
	req.params = parseItemParams(snap.Config)
	defer e.startFire(&req, items)()
	var err error
	if req.follow, err = e.followFire(snap, req, items); err != nil {
		e.log.Info("fire not run: its trigger was handed on to other instances meanwhile", "job", job, "trigger", req.trigger.ID, "items", items)
		return false
	}
	for _, item := range items {
		e.startItem(snap, req, item)
		e.queueCatchUp(snap, req, item, replay[item])
	}
	return true
}
