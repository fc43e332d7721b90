package cluster

import "github.com/go-zookeeper/zk"

// Loads in batches (issue 21, readiness). A job is scheduled on a peer once the peer has loaded it, and a
// registration of thousands of jobs queues a load per job on every peer. Loaded one job per refresh worker,
// each load two round trips, a peer loaded at most workers / (2 x latency) jobs a second, and the latency
// was the fires' : the peer's requests share one session, which ZooKeeper serves in order, behind the
// batched writes of the items' ends. The refresher hands the queued loads to one worker at once, up to
// loadBatch of them, and loadJobs reads them together (readJobsBulk: the fixed nodes of all, then the
// children of all, in multiReads of up to bulkChunk reads sent at once): a batch costs about the round trips
// of one load, so the loads keep up with a registration however slow each round trip is. Loads go before
// the refreshes queued for loaded jobs (not before the urgent ones, which decide items of loaded jobs' fires):
// a job that is not loaded cannot fire at all.

// loadBatch bounds the loads read together: 64 one-item jobs are ~9 reads each in the first phase and ~6 in
// the second, a few multiRead requests of at most bulkChunk reads.
const loadBatch = 64

// loadStart reports, as a load of the job begins, whether it is a first load (the job has not been loaded
// yet, or its config came back), and the job's direct counts (applyLoad: a change applied from its event
// meanwhile makes what the load read stale).
func (e *jobEntry) loadStart() (first bool, direct directCounts) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.st.loaded || !e.st.hasConfig, e.direct
}

// loadJobs loads the jobs of keys (kindLoad) together; errs[i] is keys[i]'s outcome. A job whose entry is
// gone is done; one the bulk path does not apply to is read node by node (applyLoad).
func (r *Registry) loadJobs(keys []refreshKey) []error {
	errs := make([]error, len(keys))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if err := r.armNamespace(); err != nil {
		return fail(err)
	}
	var es []*jobEntry
	for _, k := range keys {
		es = append(es, r.entry(k.job)) // nil: the job went away
	}
	// each job's refreshes are serialised by its refreshMu (Registry.refresh); no two batches hold the same
	// job (a key runs on one worker at a time) and no other holder of one waits for another's
	names, first := make([]string, 0, len(keys)), make([]bool, 0, len(keys))
	direct := make([]directCounts, 0, len(keys))
	var held []*jobEntry
	for _, e := range es {
		if e == nil {
			continue
		}
		e.refreshMu.Lock()
		held = append(held, e)
		f, d := e.loadStart()
		names, first, direct = append(names, e.name), append(first, f), append(direct, d)
	}
	defer func() {
		for _, e := range held {
			e.refreshMu.Unlock()
		}
	}()
	rds, bulk, err := r.readJobsBulk(names, first)
	if err != nil {
		return fail(err)
	}
	j := 0
	for i, e := range es {
		if e == nil {
			continue
		}
		var rd jobRead
		ok := false
		if bulk != nil {
			rd, ok = rds[j], bulk[j]
		}
		rd.direct = direct[j]
		errs[i] = r.applyLoad(e, first[j], rd, ok)
		j++
	}
	return errs
}

// rootChanged handles a job's root created or deleted (the namespace's recursive watch). A creation loads
// the job straight away: the load reads the config, and a job whose config or root is gone by then asks
// for its presence itself (applyLoad), so the exists of refreshPresence, and a pass through the queue, per
// job and peer are left out of a registration. A deletion reads the root's presence, which converges
// whatever order the events, loads and listings in flight are applied in.
func (r *Registry) rootChanged(job string, typ zk.EventType) {
	if typ == zk.EventNodeCreated {
		for _, n := range r.addEntries([]string{job}) {
			r.w.kick(refreshKey{kind: kindLoad, job: n})
		}
		return
	}
	r.w.kick(refreshKey{kind: kindPresence, job: job})
}

// startsWith selects the refreshes a starting registry waits for (Registry.Start): the namespace's listing,
// the live peers and the jobs' loads. Waiting for the refresher to be idle, a peer restarted in a cluster of
// 30,000 jobs waited the whole 2 x session timeout with every job loaded (its API not ready, its jobs not
// fired meanwhile): the registrations and the other peers' answers to them kept the refresher busy.
func startsWith(k refreshKey) bool {
	return k.kind == kindJobs || k.kind == kindPeers || k.kind == kindLoad
}
