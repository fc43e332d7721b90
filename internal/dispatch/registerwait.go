package dispatch

import (
	"context"

	"github.com/ejserver/ejserver/internal/cluster"
)

// awaitsRegistration reports whether a fire waits for this peer's registration on the job: the peer is not
// registered yet but is about to be (its first load of the job, or a session renewal, writes the instance
// node right after the job is scheduled), and the fire would otherwise run. A peer an operator removed from
// the job (not Registering) is skipped at once, as before.
func awaitsRegistration(s *cluster.JobSnapshot) bool {
	return !s.Registered && s.Registering && s.ConfigErr == nil && !s.Config.Disabled
}

// awaitRegistration returns the job's snapshot once this peer is registered on it, waiting while its
// registration is under way (as long as the fire would wait for its sharding); otherwise, or when the wait
// ends first, the latest snapshot, which the fire then skips as not registered.
func (e *Executor) awaitRegistration(snap *cluster.JobSnapshot) *cluster.JobSnapshot {
	if !awaitsRegistration(snap) {
		return snap
	}
	wait := shardingWait(e.cfg.ReshardWait, e.cfg.FireLead, e.clk.Now(), e.nextFire(snap.Name), snap.Config.Misfire)
	ctx, cancel := context.WithTimeout(e.soft, wait)
	defer cancel()
	got, _ := e.reg.Wait(ctx, snap.Name, func(s *cluster.JobSnapshot) bool { return !awaitsRegistration(s) })
	if got == nil {
		return snap
	}
	return got
}
