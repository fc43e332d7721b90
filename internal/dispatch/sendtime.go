package dispatch

import (
	"github.com/ejserver/ejserver/internal/clock"
)

// awaitScheduledTime holds an item that was prepared ahead of its fire (fenced, its running node created)
// until the scheduled time, so the request leaves on time rather than after ZooKeeper's round trips. It
// reports whether the item may still run then: the peer is not shutting down, the session the fire began
// under is sound (a suspended one is waited for, within a grace: awaitSession), and the job and the item are
// still this peer's to run. Otherwise the running node created for it goes.
// waited: the item was counted in Activity as waiting for its time, and still is (its departure uncounts it).
func (e *Executor) awaitScheduledTime(req fireRequest, item int, runningVersion int32) (send, waited bool) {
	wait := req.sendAt().Sub(e.clk.Now())
	if wait <= 0 {
		return true, false
	}
	reason := ""
	// counted once its timer is set: a test that sees the item waiting may move a fake clock past its time at
	// once (counted before, an item whose timer came after the move slept a second too long, and the test
	// failed for want of its request)
	slept := clock.SleepArmed(e.clk, wait, e.soft.Done(), func() { e.cfg.Activity.waiting(req.sendAt(), 1) })
	if !slept {
		reason = "the peer is shutting down"
	} else if ok, why := e.awaitSession(&req, item, stageSend, req.sendAt()); !ok {
		reason = why
	} else if snap := e.job(&req); snap == nil || snap.Config.Disabled || !snap.Registered ||
		snap.ServerDisabled(snap.MyIP) || !snap.IsMyItem(item) {
		reason = "the job or the item is no longer this peer's to run"
	}
	if reason == "" {
		return true, true
	}
	e.cfg.Activity.waiting(req.sendAt(), -1)
	e.log.Info("prepared item not sent: "+reason, "job", req.job, "item", item)
	if runningVersion == 0 {
		e.clearUnsent(req.job, item)
	}
	return false, false
}
