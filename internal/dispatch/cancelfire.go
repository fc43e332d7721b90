package dispatch

// workflowCancelCause is the cause an item ended by its workflow run's cancel records.
const workflowCancelCause = "cancelled: its workflow run was cancelled"

// CancelFire ends the items of a followed fire (a workflow node's) that run on this peer, as CANCEL_PREVIOUS
// ends an item a later fire replaces (overlap.go): a request in flight is aborted and the item recorded
// CANCELLED; an accepted item's lease is cancelled (its receiver's next heartbeat answers 409
// execution-cancelled), whether its request is still being recorded here or it waits under its lease (found
// through its running node); a run of the fire queued behind another is dropped. It returns how many items
// it stopped.
func (e *Executor) CancelFire(job, fire, reason string) int {
	cause := workflowCancelCause
	if reason != "" {
		cause += " (" + reason + ")"
	}
	type stop struct {
		item     int
		cancel   func(error)
		accepted bool
		id       string
	}
	var stops []stop
	e.mu.Lock()
	for k, r := range e.running {
		if k.job != job {
			continue
		}
		kept := r.triggers[:0]
		for _, q := range r.triggers {
			if q.trigger == nil || FireKey(q.trigger.RequestedAt, "t"+q.trigger.ID) != fire {
				kept = append(kept, q)
			}
		}
		r.triggers = kept
		if r.fire != fire || r.cancelled {
			continue
		}
		r.cancelled, r.cause = true, &cancelError{cause}
		s := stop{item: k.item, accepted: r.accepted, id: r.executionID}
		if r.cancel != nil {
			s.cancel = r.cancel
		}
		stops = append(stops, s)
	}
	e.mu.Unlock()
	n := 0
	for _, s := range stops {
		if s.cancel != nil {
			s.cancel(&cancelError{cause})
			n++
		}
		if s.accepted && e.cancelLease(job, s.item, s.id, cause) && s.cancel == nil {
			n++
		}
	}
	return n + e.cancelAccepted(job, fire, cause)
}

// cancelAccepted cancels the leases of the fire's accepted items this peer ran whose request ended here:
// their running node names the fire and the lease.
func (e *Executor) cancelAccepted(job, fire, cause string) int {
	snap := e.reg.Job(job)
	if snap == nil || e.cfg.Async == nil {
		return 0
	}
	n := 0
	for i := range snap.Config.ShardingTotalCount {
		run, _, ok, err := e.reg.ReadRunning(job, i)
		if err != nil || !ok || !run.Async || run.Fire != fire || run.InstanceID != e.me.InstanceID {
			continue
		}
		if e.cancelLease(job, i, run.ExecutionID, cause) {
			n++
		}
	}
	return n
}
