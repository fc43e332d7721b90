package sharding

import (
	"maps"
	"slices"
	"time"
)

// Hold records that a fire of job scheduled at fire waits on this peer for the job's sharding (its items'
// owner is gone or leaving): until release is called, a resharding this peer does as the job's leader gives
// items only to the instances that hold that fire too (Holders). Every peer's executor holds, not only the
// leader's: a peer may become the leader while it waits.
func (c *Coordinator) Hold(job string, fire time.Time) (release func()) {
	c.mu.Lock()
	fires := c.holds[job]
	if fires == nil {
		fires = map[time.Time]int{}
		c.holds[job] = fires
	}
	fires[fire]++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		fires := c.holds[job] // there while this hold counts in it
		if fires[fire]--; fires[fire] <= 0 {
			delete(fires, fire)
		}
		if len(fires) == 0 {
			delete(c.holds, job)
		}
	}
}

// heldFire is the earliest fire of job held on this peer: the one whose holders the resharding must keep.
func (c *Coordinator) heldFire(job string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fires := c.holds[job]
	if len(fires) == 0 {
		return time.Time{}, false
	}
	return slices.MinFunc(slices.Collect(maps.Keys(fires)), time.Time.Compare), true
}

// holders narrows a resharding's candidates while a fire of the job is held here (Holders). It returns the
// instances left out, to be given items at a resharding RecheckAt flags (recheckLater). A failed read of the
// instances' registration leaves the candidates as they are.
//
// When no fire is held here but an item's owner is gone (ownerGone), other peers may hold a fire of the job
// (their executors wait for the resharding), and this peer cannot know which: a peer newly elected leader
// (a restarted peer's new process, say) reshards so. It then takes the earliest fire that can still be held
// anywhere (Holding.Earliest): the instances registered too late to hold that one are left out for now.
func (c *Coordinator) holders(job string, candidates []Instance, ownerGone, misfire bool) (hold, later []Instance) {
	fire, held := c.heldFire(job)
	if !held && !ownerGone || len(candidates) < 2 {
		return candidates, nil
	}
	holding := c.holding(job, misfire)
	if !held {
		fire = holding.Earliest(c.clk.Now())
	}
	if c.reg.InstancesJoinedBefore(job, HoldCutoff(fire, c.cfg.FireLead)) {
		// every candidate was on the job before the fire was handed off, as this peer saw them join: all hold
		// it, and ZooKeeper is not asked (one read a held fire, ~33,000 in a restart's minute at 100,000 jobs)
		return candidates, nil
	}
	registered, err := c.reg.InstancesRegistered(job, instanceIDs(candidates))
	if err != nil {
		c.log.Warn("could not read when the job's instances registered: resharding over all of them", "job", job, "err", err)
		return candidates, nil
	}
	hold, later = Holders(candidates, registered, fire, c.cfg.FireLead)
	if len(later) > 0 {
		due := RecheckAt(later, registered, fire, holding)
		c.log.Info("resharding at a held fire: instances registered after it was handed off get items later",
			"job", job, "fire", fire, "instances", instanceIDs(later), "recheck_at", due)
		c.recheckLater(job, due)
	}
	return hold, later
}

// holding is how long the executors may hold the job's fires (misfire: it takes late fires).
func (c *Coordinator) holding(job string, misfire bool) Holding {
	h := Holding{Lead: c.cfg.FireLead, Wait: c.cfg.ReshardWait, Misfire: misfire}
	if c.cfg.Fires != nil {
		h.Last, h.Next = c.cfg.Fires(job)
		h.Known = true
	}
	return h
}

func instanceIDs(ins []Instance) []string {
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
	}
	return ids
}

// recheckLater makes the leader look at job's sharding again (queueCheck) at due.
func (c *Coordinator) recheckLater(job string, due time.Time) {
	c.mu.Lock()
	if cur, ok := c.rechecks[job]; !ok || due.After(cur) {
		c.rechecks[job] = due
	}
	c.mu.Unlock()
	select {
	case c.recheck <- struct{}{}:
	default:
	}
}

// recheckPending reports whether job waits for a recheck: a look at its sharding before then would give its
// items to the instances left out for a fire that may still be held on another peer.
func (c *Coordinator) recheckPending(job string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.rechecks[job]
	return ok
}

// recheckLoop queues the checks recheckLater asked for once they are due.
func (c *Coordinator) recheckLoop() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		now := c.clk.Now()
		var next time.Time
		for job, due := range c.rechecks {
			if !due.After(now) {
				delete(c.rechecks, job)
				c.checked[job] = true
				continue
			}
			if next.IsZero() || due.Before(next) {
				next = due
			}
		}
		queued := len(c.checked) > 0
		c.mu.Unlock()
		if queued {
			select {
			case c.flags <- "":
			default:
			}
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = next.Sub(now)
		}
		t := c.clk.NewTimer(wait)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-c.recheck:
		case <-t.C():
		}
		t.Stop()
	}
}
