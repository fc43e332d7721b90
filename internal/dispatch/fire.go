package dispatch

import "github.com/ejserver/ejserver/internal/cluster"

// fire runs one fire of a job on this peer and returns once its items are started or it is skipped: a manual
// trigger's node is dropped, and its job's next trigger read, after that.
func (e *Executor) fire(req fireRequest) {
	snap := e.fireable(&req)
	if snap == nil {
		return
	}
	done := make(chan struct{})
	e.ensureSharded(req, snap, func(snap *cluster.JobSnapshot, waited bool, err error) {
		e.fireSharded(req, snap, waited, err)
		close(done)
	})
	<-done
}

// fireScheduled runs a scheduled fire of a job on this peer; a fire that waits for its sharding is left to the
// wait (ensureSharded) and this goroutine ends.
func (e *Executor) fireScheduled(req fireRequest) {
	if snap := e.fireable(&req); snap != nil {
		e.ensureSharded(req, snap, func(snap *cluster.JobSnapshot, waited bool, err error) { e.fireSharded(req, snap, waited, err) })
	}
}

// fireable is the start of a fire: the job's snapshot to fire with once it is sharded, or nil when the fire is
// skipped (the session at its hand-off, its job's and this peer's settings, steering, the clock check).
func (e *Executor) fireable(req *fireRequest) *cluster.JobSnapshot {
	job := req.job
	snap := e.reg.Job(job)
	if snap == nil {
		return nil
	}
	if snap = e.sessionAtHandOff(req, snap); snap == nil {
		return nil
	}
	snap = e.awaitRegistration(snap)
	cfg := snap.Config
	switch {
	case snap.ConfigErr != nil:
		e.skip(*req, "config can't be parsed", "err", snap.ConfigErr)
		return nil
	case cfg.Disabled:
		e.skip(*req, "job disabled")
		return nil
	case !snap.Registered:
		e.skip(*req, "this peer's instance node is not registered on the job")
		return nil
	case snap.ServerDisabled(snap.MyIP):
		e.markSkipped(*req)
		e.skip(*req, "this peer's server is disabled for the job")
		return nil
	case !e.steer(*req, cfg):
		return nil
	}
	if msg := e.clockCheck(cfg.MaxTimeDiffSeconds); msg != "" {
		e.mu.Lock()
		e.jobStatus(job).ClockError = msg
		e.mu.Unlock()
		e.skip(*req, "clock check failed", "detail", msg)
		return nil
	}
	e.mu.Lock()
	st := e.jobStatus(job)
	st.ClockError, st.SkipReason, st.LastFireAt = "", "", req.scheduledAt
	e.mu.Unlock()
	return snap
}
