package cluster

import "sync/atomic"

// leadCount is the number of loaded jobs whose leader node names this peer (JobSnapshot.IsLeader), kept as
// the jobs' entries change, so the metrics scrape reads it without visiting any job: counted by a walk, a
// scrape at 100,000 jobs took every entry's lock (6 % of a peer's CPU while a registration loaded, with the
// harness scraping every peer twice a second).
type leadCount struct {
	me string
	n  atomic.Int64
}

// leadsLocked reports whether the entry counts as one of this peer's leaderships (e.mu held).
func (e *jobEntry) leadsLocked() bool {
	return !e.detached && e.st.loaded && e.st.hasConfig && e.st.leader != "" && e.st.leader == e.sh.leads.me
}

// recountLocked brings the peer's count up to date with the entry's state (e.mu held). Every change of
// the fields leadsLocked reads is followed by changedLocked, which calls it.
func (e *jobEntry) recountLocked() {
	if e.sh == nil {
		return
	}
	if leads := e.leadsLocked(); leads != e.counted {
		e.counted = leads
		if leads {
			e.sh.leads.n.Add(1)
		} else {
			e.sh.leads.n.Add(-1)
		}
	}
}
