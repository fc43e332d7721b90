package cluster

import (
	"cmp"
	"container/heap"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// register writes servers/{ip} (ENABLED unless an operator set it already) and this peer's ephemeral
// instances/{id} for a job, then campaigns for the job's leadership.
func (r *Registry) register(e *jobEntry) error {
	job := e.name
	e.mu.Lock()
	skip := !e.st.hasConfig || e.st.registered || e.st.removedByOperator
	_, serverKnown := e.st.servers[r.me.ServerIP]
	e.mu.Unlock()
	if skip || !r.s.Healthy() {
		return nil
	}
	// one group: the config check keeps a job that is being deleted from getting an instance node again,
	// servers/{ip} (ENABLED) when this peer has not seen it, and the instance node; many jobs registering at
	// once (start-up, renewal, a burst of creations) share multis through the batcher
	ops := registerOps(r.p, job, r.me, r.s.opCreate, !serverKnown)
	_, err := r.b.submit(ops...)
	var oe *OpError
	if errors.As(err, &oe) && !serverKnown && oe.Op == 1 && errors.Is(oe.Err, zk.ErrNodeExists) {
		// servers/{ip} was there (an operator's state, or this server's earlier process): it stays as it is
		_, err = r.b.submit(registerOps(r.p, job, r.me, r.s.opCreate, false)...)
	}
	if errors.As(err, &oe) {
		err = oe.Err
	}
	switch {
	case err == nil:
		e.mu.Lock()
		e.st.registered, e.st.pendingRegister = true, false
		e.changedLocked()
		e.mu.Unlock()
	case errors.Is(err, zk.ErrNodeExists):
		_, st, gerr := r.s.get(r.p.Instance(job, r.me.InstanceID))
		e.mu.Lock()
		if gerr == nil && st.EphemeralOwner == r.s.ID() {
			e.st.registered = true
			e.changedLocked()
		} else {
			// an earlier process with our id still has a session: take over when its node goes
			e.st.pendingRegister = true
			r.log.Warn("instance node held by another session; waiting for it to expire",
				"job", job, "instance", r.me.InstanceID)
		}
		e.mu.Unlock()
	case errors.Is(err, zk.ErrNoNode):
		return nil
	default:
		return err
	}
	r.w.kick(refreshKey{kind: kindCampaign, job: job})
	return nil
}

// registerSoon is register for a job's first load: it submits the registration group without waiting, so
// the worker goes on to the next job's load and the registrations of many jobs share a multi. Anything but
// success (an instance node held by another session, a job being deleted, a connection loss, a session
// renewed meanwhile) is left to the register refresh, which handles each case.
func (r *Registry) registerSoon(e *jobEntry) {
	e.mu.Lock()
	skip := !e.st.hasConfig || e.st.registered || e.st.removedByOperator
	_, serverKnown := e.st.servers[r.me.ServerIP]
	e.mu.Unlock()
	if skip || !r.s.Healthy() {
		return
	}
	session := r.s.ID()
	again := refreshKey{kind: kindRegister, job: e.name}
	r.b.submitThen(func(_ []zk.MultiResponse, err error) {
		if err != nil || r.s.ID() != session {
			r.w.kick(again)
			return
		}
		e.mu.Lock()
		e.st.registered, e.st.pendingRegister = true, false
		e.changedLocked()
		e.mu.Unlock()
		r.w.kick(refreshKey{kind: kindCampaign, job: e.name})
	}, registerOps(r.p, e.name, r.me, r.s.opCreate, !serverKnown)...)
}

// registerOps is this peer's registration on a job as one atomic group: the config must exist, then
// servers/{ip} as ENABLED (withServer: op 1), then the ephemeral instances/{id}.
func registerOps(p Paths, job string, me Identity, create func(string, []byte, int32) *zk.CreateRequest, withServer bool) []any {
	ops := []any{opCheck(p.Config(job), -1)}
	if withServer {
		ops = append(ops, create(p.Server(job, me.ServerIP), []byte(ServerEnabled), 0))
	}
	return append(ops, create(p.Instance(job, me.InstanceID), instanceData(me), zk.FlagEphemeral))
}

// Reregister puts this peer back on a job after an operator removed its instance node (an "enable").
func (r *Registry) Reregister(job string) {
	e := r.entry(job)
	if e == nil {
		return
	}
	e.mu.Lock()
	e.st.removedByOperator = false
	e.mu.Unlock()
	r.w.kick(refreshKey{kind: kindRegister, job: job})
}

// campaign creates leader/election/instance if the job has no leader and this peer may lead it: it is
// registered, its server is not disabled and its session is sound. The first to create the node leads.
//
// A peer that is not the job's preferred candidate (preferredLeader) puts its campaign off by campaignDelay
// (late: the put-off campaign, which runs whoever is preferred then): when a peer leaves, the others would
// otherwise all race for each of its leaderships, one create each and all but one failing.
//
// The create is not waited for: it is sent by a sender goroutine (campaignsInFlight of them) and its outcome
// applied when it comes (campaigned), so a stopped peer's thousands of leaderships are not campaigned for one
// round trip per refresh worker at a time (~1,200 elections a second at 30,000 jobs, while the jobs' fires
// waited for their leaders). A sender sends up to campaignBatch creates in one multi of its own
// (createLeaders), not in the registry's shared batcher: while peers register on new jobs their views of
// who is preferred differ and creates collide, and in the shared batcher a multi that failed on one op was
// sent again without it, once per failing op, while every other write of the peer (its items' begins and
// ends) waited behind it for minutes. Here a collision costs one request more (the creates before it and
// those after it go on apart), and nothing else waits for it. Sent one create to a request, a stopped peer's
// 33,000 leaderships at 100,000 jobs were as many requests, which held ZooKeeper at its limit of
// outstanding requests with the survivors' writes behind them, and took ~50 s (docs/benchmarks.md, run 27).
func (r *Registry) campaign(e *jobEntry, late bool) error {
	job := e.name
	e.mu.Lock()
	ok := e.st.hasConfig && e.st.registered && !e.st.led() && e.st.servers[r.me.ServerIP] != ServerDisabled
	first := ok && !late && preferredLeader(job, r.me.InstanceID, e.st.instances, e.st.servers) == r.me.InstanceID
	e.mu.Unlock()
	if !ok || !r.s.Healthy() {
		return nil
	}
	if !first && !late {
		r.kickLater(refreshKey{kind: kindCampaignLate, job: job})
		return nil
	}
	if !r.campaigns.begin(job) {
		return nil // a create of this peer's for the job is on its way
	}
	if !r.campaigns.take(e) {
		return nil // queued: a sender on its way takes it next
	}
	r.wg.Add(1) // on a refresher worker: Stop waits for the workers before r.wg
	go r.sendCampaigns(e)
	return nil
}

// sendCampaigns sends e's create, applies its outcome, then sends the creates queued meanwhile, until none is
// left (it holds one of the campaignSet's senders). A campaign waiting for a sender holds no refresh worker:
// ZooKeeper writes ~1,200 leaderships a second here, and a stopped peer's 36,000 at 100,000 jobs held all 32
// workers for ~30 s, the ~94,000 reports of its deletions (a leader learns from them which jobs to reshard)
// behind them.
func (r *Registry) sendCampaigns(e *jobEntry) {
	defer r.wg.Done()
	for batch := []*jobEntry{e}; batch != nil; batch = r.campaigns.nextBatch(campaignBatch) {
		select {
		case <-r.stop:
			for _, e := range batch {
				r.campaigns.end(e.name)
			}
			continue
		default:
		}
		session := r.s.ID()
		paths := make([]string, len(batch))
		for i, e := range batch {
			paths[i] = r.p.LeaderInstance(e.name)
		}
		errs := r.campaigns.create(paths, []byte(r.me.InstanceID), func(i int) bool { return r.leaderKnown(batch[i]) })
		for i, e := range batch {
			r.campaigned(e, session, errs[i])
			if r.campaigns.end(e.name) {
				r.w.kick(refreshKey{kind: kindCampaign, job: e.name}) // kicked while this one was on its way
			}
		}
	}
}

// campaignsInFlight bounds the campaigns' multis on their way at once (the campaignSet's senders), and
// campaignBatch the creates in one.
const (
	campaignsInFlight = 16
	campaignBatch     = 128
)

// createLeaders creates the leader nodes at paths (ephemeral, data) in multis, and returns each one's error:
// all in one, and when a create is refused (its node exists: another peer leads), the creates before it in
// one multi and those after it in another, each refusal splitting again, so a refusal costs one request more
// and a create is sent at most once for each refusal in its batch. Before each multi the creates whose node
// is known to exist by then (taken, if not nil: the watch's events say another peer leads) are left out, with
// ErrNodeExists as if refused.
func (r *Registry) createLeaders(paths []string, data []byte, taken func(i int) bool) []error {
	errs := make([]error, len(paths))
	todo := [][2]int{{0, len(paths)}} // ranges of paths still to send
	var send []int                    // the indexes of a range's creates to send
	for len(todo) > 0 {
		lo, hi := todo[len(todo)-1][0], todo[len(todo)-1][1]
		todo = todo[:len(todo)-1]
		send = send[:0]
		for i := lo; i < hi; i++ {
			if taken != nil && taken(i) {
				errs[i] = zk.ErrNodeExists
				continue
			}
			send = append(send, i)
		}
		switch len(send) {
		case 0:
			continue
		case 1:
			errs[send[0]] = r.s.create(paths[send[0]], data, zk.FlagEphemeral)
			continue
		}
		ops := make([]any, len(send))
		for k, i := range send {
			ops[k] = r.s.opCreate(paths[i], data, zk.FlagEphemeral)
		}
		resps, err := r.s.multi(ops...)
		if err == nil {
			continue
		}
		bad, opErr := failedOp(resps)
		if bad < 0 { // the connection or the server: no create's outcome is known
			for _, i := range send {
				errs[i] = err
			}
			continue
		}
		at := send[bad]
		errs[at] = opErr
		if at+1 < hi {
			todo = append(todo, [2]int{at + 1, hi})
		}
		if at > lo {
			todo = append(todo, [2]int{lo, at}) // sent first: due first
		}
	}
	return errs
}

// leaderKnown reports whether e's leader node is known to exist (led).
func (r *Registry) leaderKnown(e *jobEntry) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.led()
}

// led reports whether the job's leader node is known to exist: read, or reported created by the watch.
func (st *jobState) led() bool { return st.leader != "" || st.leaderSeen }

// leaderHeld reports whether leader/election/instance, as cached, names me and was created by session: the
// node this session holds, whose cached version guards leader writes (leaderGuard) and deletes it (Withdraw).
func (st *jobState) leaderHeld(me string, session int64) bool {
	return st.leader == me && st.leaderOwner != 0 && st.leaderOwner == session
}

// campaigned applies the outcome of a campaign's create. The listeners hear of a won leadership from the
// refresher (kindReport), and a lost race or a failure is a refresh queued.
func (r *Registry) campaigned(e *jobEntry, session int64, err error) {
	job := e.name
	switch {
	case err == nil:
		e.mu.Lock()
		changed := e.st.leader != r.me.InstanceID
		e.st.leader, e.st.leaderOwner, e.st.leaderVersion, e.st.leaderSeen = r.me.InstanceID, session, 0, false
		e.direct.leader++ // a read of the leader begun before the create landed reads again
		if changed {
			e.changedLocked()
		}
		e.mu.Unlock()
		r.log.Info("elected leader", "job", job, "instance", r.me.InstanceID)
		if changed {
			r.reportLeader(job, r.me.InstanceID)
		}
	case errors.Is(err, zk.ErrNodeExists):
		r.w.kick(refreshKey{kind: kindLeader, job: job})
	case errors.Is(err, zk.ErrNoNode):
		// the job is gone
	default:
		r.log.Debug("campaign failed; trying again", "job", job, "err", err)
		r.kickLater(refreshKey{kind: kindCampaignLate, job: job})
	}
}

// campaignSet holds the jobs whose campaign's create is on its way or queued, so that a job kicked again
// meanwhile sends no second create (it campaigns again once the first has its outcome: a leader lost
// meanwhile), and the senders that bound the creates on their way (campaignsInFlight).
type campaignSet struct {
	mu sync.Mutex
	// jobs: true when the job's campaign was kicked again while its create was on its way
	jobs map[string]bool
	// senders: the goroutines sending creates (at most max); waiting: the campaigns queued for one, a heap
	// by due (when the job's fires next need a leader), earliest first
	senders, max int
	waiting      campaignQueue
	due          func(job string) time.Time
	// create creates ephemeral nodes, one error each (createLeaders; a test may hold it)
	create func(paths []string, data []byte, taken func(i int) bool) []error
}

// take reports whether the campaign of e, begun, has a sender of its own (the caller starts it); otherwise it
// is queued for a sender on its way (next).
func (c *campaignSet) take(e *jobEntry) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.senders < max(c.max, 1) {
		c.senders++
		return true
	}
	var due time.Time
	if c.due != nil {
		due = c.due(e.name)
	}
	heap.Push(&c.waiting, queuedCampaign{e: e, due: due})
	return false
}

// nextBatch hands a sender the next queued campaigns, earliest due first, up to n, or nil when none is left
// (the sender ends).
func (c *campaignSet) nextBatch(n int) []*jobEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		c.waiting = nil // a burst's array goes
		c.senders--
		return nil
	}
	out := make([]*jobEntry, 0, min(n, len(c.waiting)))
	for len(out) < n && len(c.waiting) > 0 {
		out = append(out, heap.Pop(&c.waiting).(queuedCampaign).e)
	}
	return out
}

// queuedCampaign is a campaign waiting for a sender, and when its job's fires next need a leader (zero:
// unknown, after the others).
type queuedCampaign struct {
	e   *jobEntry
	due time.Time
}

// campaignQueue is a min-heap of queued campaigns by due, then job (container/heap).
type campaignQueue []queuedCampaign

func (q campaignQueue) Len() int { return len(q) }
func (q campaignQueue) Less(i, j int) bool {
	return cmp.Or(CompareDue(q[i].due, q[j].due), cmp.Compare(q[i].e.name, q[j].e.name)) < 0
}

func (q campaignQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *campaignQueue) Push(x any)   { *q = append(*q, x.(queuedCampaign)) }
func (q *campaignQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = queuedCampaign{}
	*q = old[:len(old)-1]
	return x
}

// CompareDue orders two jobs' due times (when their fires next need their sharding): earlier first, a zero
// time (unknown) after the others.
func CompareDue(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// begin adds job; false if it is in already (it is marked to campaign again then).
func (c *campaignSet) begin(job string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.jobs[job]; ok {
		c.jobs[job] = true
		return false
	}
	if c.jobs == nil {
		c.jobs = map[string]bool{}
	}
	c.jobs[job] = false
	return true
}

// end removes job and reports whether it was kicked again meanwhile; the map goes when it empties (a burst's
// groups with it).
func (c *campaignSet) end(job string) (again bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	again = c.jobs[job]
	delete(c.jobs, job)
	if len(c.jobs) == 0 {
		c.jobs = nil
	}
	return again
}

// campaignDelay is how long a peer that is not a leaderless job's preferred candidate waits before it
// campaigns: the preferred one's create, batched with others, lands well within it.
const campaignDelay = 2 * time.Second

// preferredLeader is the instance that campaigns first for a leaderless job: of its instances on servers not
// disabled and me (registered, whether listed yet or not), the one whose hash with the job's name is least.
// Peers that list the same instances name the same one, and the jobs' leaderships spread over the instances
// evenly.
func preferredLeader(job, me string, instances, servers map[string]string) string {
	best, bestHash := me, leaderHash(job, me)
	for id, ip := range instances {
		if servers[ip] == ServerDisabled {
			continue
		}
		if h := leaderHash(job, id); h < bestHash || (h == bestHash && id < best) {
			best, bestHash = id, h
		}
	}
	return best
}

// leaderHash is FNV-1a over job, a zero byte and id, mixed by MurmurHash3's finalizer: FNV-1a alone ranks ids
// that differ in their last bytes (a@-@1, b@-@2) unevenly.
func leaderHash(job, id string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := range len(job) {
		h = (h ^ uint64(job[i])) * prime
	}
	h *= prime // the separator, a zero byte
	for i := range len(id) {
		h = (h ^ uint64(id[i])) * prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// abdicate gives up the job's leadership if this session holds it.
func (r *Registry) abdicate(job string) {
	data, st, err := r.s.get(r.p.LeaderInstance(job))
	if err != nil || strings.TrimSpace(string(data)) != r.me.InstanceID || st.EphemeralOwner != r.s.ID() {
		return
	}
	if err := r.s.del(r.p.LeaderInstance(job), st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
		r.log.Warn("could not step down as leader", "job", job, "err", err)
		return
	}
	r.log.Info("stepped down as leader", "job", job)
}

// Abdicate steps down from the job's leadership (if held) so another peer is elected.
func (r *Registry) Abdicate(job string) { r.abdicate(job) }

// IsLeader reports whether this peer leads the job and its session is sound enough to act on it.
func (r *Registry) IsLeader(job string) bool {
	e := r.entry(job)
	if e == nil {
		return false
	}
	// from the entry, as Job(job).IsLeader() would say, without making a snapshot of a cold job (sweepCold)
	e.mu.Lock()
	lead := e.st.loaded && e.st.hasConfig && e.st.leader != "" && e.st.leader == r.me.InstanceID
	e.mu.Unlock()
	return lead && r.s.Lease()
}

// Leaderships counts the loaded jobs whose leader node names this peer (JobSnapshot.IsLeader). The metrics
// scrape calls it: the count is kept as the jobs' entries change (leadcount.go), so a scrape visits no job.
func (r *Registry) Leaderships() int {
	return int(r.entries.leads.n.Load())
}

// ReadsWaiting is how many of the registry's reads wait for a worker, by lane (see urgent in settled.go):
// a peer that falls behind ZooKeeper's events shows it here first.
func (r *Registry) ReadsWaiting() (urgent, batched, other int) {
	b := r.w.backlog()
	return b.Urgent, b.Batched, b.Other
}

// leaderGuard returns a multi op that fails unless this session still holds the job's leader node, from
// the registry's cache (no read): a deposed leader's write then fails instead of landing. The owning session
// is compared too, because a new leader's node has the same data version as the one it replaced.
func (r *Registry) leaderGuard(job string) (any, error) {
	e := r.entry(job)
	if e == nil {
		return nil, ErrNotLeader
	}
	e.mu.Lock()
	held := e.st.leaderHeld(r.me.InstanceID, r.s.ID())
	version := e.st.leaderVersion
	e.mu.Unlock()
	if !held || !r.s.Lease() {
		return nil, ErrNotLeader
	}
	return opCheck(r.p.LeaderInstance(job), version), nil
}

// ErrNotLeader is returned by leader-only writes when this peer does not (or may no longer) lead the job.
var ErrNotLeader = errors.New("not the job's leader")

// Lease reports whether the session is sound enough to start work on (see Session.Lease).
func (r *Registry) Lease() bool { return r.s.Lease() }

// leaderNode is leader/election/instance as read: the leader's id, the node's owning session and version.
type leaderNode struct {
	id      string
	owner   int64
	version int32
}

func (r *Registry) readLeader(job string) (leaderNode, error) {
	data, st, ok, err := r.readNode(r.p.LeaderInstance(job))
	if !ok {
		return leaderNode{}, err
	}
	return leaderOf(data, st), nil
}

// leaderOf is the leader named by leader/election/instance's data and stat.
func leaderOf(data []byte, st *zk.Stat) leaderNode {
	return leaderNode{id: strings.TrimSpace(string(data)), owner: st.EphemeralOwner, version: st.Version}
}

func (r *Registry) refreshLeader(e *jobEntry) error {
	direct := e.directCount().leader
	node, err := r.readLeader(e.name)
	if err != nil {
		return err
	}
	r.applyLeader(e, node, direct)
	return nil
}

// applyLeader applies a read of a job's leader node made when the job's direct count of leader changes
// was direct.
func (r *Registry) applyLeader(e *jobEntry, node leaderNode, direct uint16) {
	if !r.lockUnlessStale(e, kindLeader, func() bool { return e.direct.leader != direct }) {
		return
	}
	if node.id == "" && e.st.leaderSeen {
		// answered before the node's creation was reported (leaderCreated): the creation's read follows
		e.mu.Unlock()
		return
	}
	prev := e.st.leader
	e.st.leader, e.st.leaderOwner, e.st.leaderVersion, e.st.leaderSeen = node.id, node.owner, node.version, false
	if prev != node.id {
		e.changedLocked()
	}
	e.mu.Unlock()
	if node.id == "" {
		r.w.kick(refreshKey{kind: kindCampaign, job: e.name})
	}
	if prev != node.id {
		r.emit([]Event{{Kind: LeaderChanged, Job: e.name, Leader: node.id}})
	}
}
