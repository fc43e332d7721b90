package cluster

import (
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/parallel"
)

// onWatch routes a watch event to the refresh that re-reads (and re-watches) the node. It runs on the
// session goroutine, so it only kicks work.
func (r *Registry) onWatch(ev zk.Event) {
	if r.onItemStateEvent(ev) || r.oneShot(ev.Path) ||
		r.onChannelWatch(ev.Path) || r.onBackfillWatch(ev.Path) || r.onCalendarWatch(ev.Path) {
		return
	}
	presence, forward := routeRecursive(r.p, ev, func(job string) bool { return r.entry(job) != nil })
	if presence {
		r.rootChanged(r.p.JobOf(ev.Path), ev.Type)
	}
	if !forward || r.applyFromEvent(ev) {
		return
	}
	if k, ok := r.keyFor(ev.Path); ok && !(k.kind == kindItemInstance && r.ownEcho(ev.Path)) &&
		!r.readByQueuedLoad(k, ev) {
		r.w.kick(k)
	}
}

// keyFor maps a watched path to its refresh.
func (r *Registry) keyFor(pth string) (refreshKey, bool) {
	if pth == r.p.Root() {
		return refreshKey{kind: kindJobs}, true
	}
	if pth == r.p.Peers() {
		return refreshKey{kind: kindPeers}, true
	}
	job := r.p.JobOf(pth)
	if job == "" {
		return refreshKey{}, false
	}
	rest := strings.TrimPrefix(pth, r.p.Job(job))
	switch rest {
	case "/config":
		return refreshKey{kind: kindConfig, job: job}, true
	case "/instances":
		return refreshKey{kind: kindInstances, job: job}, true
	case "/servers":
		return refreshKey{kind: kindServers, job: job}, true
	case "/leader/election/instance":
		return refreshKey{kind: kindLeader, job: job}, true
	case "/leader/sharding/necessary":
		return refreshKey{kind: kindNecessary, job: job}, true
	case "/leader/failover/items":
		return refreshKey{kind: kindFailoverItems, job: job}, true
	case "/sharding":
		return refreshKey{kind: kindSharding, job: job}, true
	case "/trigger/" + r.me.InstanceID:
		return refreshKey{kind: kindTrigger, job: job}, true
	}
	if ip, ok := strings.CutPrefix(rest, "/servers/"); ok && !strings.Contains(ip, "/") {
		return refreshKey{kind: kindServer, job: job, ip: ip}, true
	}
	if k, ok := folderKey(job, rest); ok {
		return k, true
	}
	if i := r.p.ItemOf(job, pth); i >= 0 {
		switch {
		case strings.HasSuffix(rest, "/"+NodeInstance):
			return refreshKey{kind: kindItemInstance, job: job, item: i}, true
		case strings.HasSuffix(rest, "/"+NodeDisabled):
			return refreshKey{kind: kindItemDisabled, job: job, item: i}, true
		case strings.HasSuffix(rest, "/"+NodeFailover):
			return refreshKey{kind: kindItemFailover, job: job, item: i}, true
		}
	}
	return refreshKey{}, false
}

// refresh runs one refresh key. The refreshes of one job's job-level nodes run one at a time, so a read
// that started earlier can never be applied after a newer one; item nodes are refreshed in parallel (each
// key alone touches its own field, and a key never runs twice at once).
func (r *Registry) refresh(k refreshKey) error {
	switch k.kind {
	case kindJobs:
		return r.refreshJobs()
	case kindPeer:
		return r.registerPeer()
	case kindPeers:
		return r.refreshPeers()
	case kindPresence:
		return r.refreshPresence(k.job)
	case kindReport:
		r.emitReported(k.job)
		return nil
	}
	e := r.entry(k.job)
	if e == nil {
		return nil // the job went away
	}
	switch k.kind {
	case kindItemInstance, kindItemDisabled, kindItemFailover:
		if !e.ready() {
			// a job's first load reads its items itself, under refreshMu: a watch event that comes while
			// it runs waits for it to end, so this newer read lands after the load's
			e.refreshMu.Lock()
			//lint:ignore SA2001 an empty critical section: waiting for the load to end is the point
			e.refreshMu.Unlock()
			if !e.ready() {
				return nil
			}
		}
		return r.refreshItem(e, k.kind, k.item)
	}
	e.refreshMu.Lock()
	defer e.refreshMu.Unlock()
	switch k.kind {
	case kindLoad:
		return r.loadJob(e)
	case kindConfig:
		return r.refreshConfig(e)
	}
	if !e.ready() {
		return nil
	}
	switch k.kind {
	case kindRegister:
		return r.register(e)
	case kindCampaign:
		return r.campaign(e, false)
	case kindCampaignLate:
		return r.campaign(e, true)
	case kindInstances:
		return r.refreshInstances(e)
	case kindServers:
		return r.refreshServers(e)
	case kindServer:
		return r.refreshServer(e, k.ip)
	case kindLeader:
		return r.refreshLeader(e)
	case kindNecessary:
		return r.refreshNecessary(e)
	case kindFailoverItems:
		return r.refreshFailoverItems(e)
	case kindTrigger:
		return r.refreshTrigger(e)
	case kindSharding:
		return r.refreshSharding(e)
	}
	return nil
}

// ready reports whether the job's config is loaded.
func (e *jobEntry) ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.hasConfig && e.st.loaded
}

func (r *Registry) pendingDelta(k refreshKey, d int) {
	if k.job == "" {
		return
	}
	e := r.entry(k.job)
	if e == nil {
		return
	}
	e.mu.Lock()
	before, beforeItems := e.pending, e.pendingItems
	e.pending = max(0, e.pending+int32(d))
	if decidesItems(k.kind) {
		e.pendingItems = max(0, e.pendingItems+int32(d))
	}
	if (before == 0) != (e.pending == 0) || (beforeItems == 0) != (e.pendingItems == 0) {
		e.changedLocked()
	}
	e.mu.Unlock()
}

// refreshJobs lists the namespace: new children are loaded, vanished ones removed. It runs when a session
// starts or is resumed; in between, the recursive watch's events add and remove jobs one at a time
// (refreshPresence).
func (r *Registry) refreshJobs() error {
	if err := r.armNamespace(); err != nil {
		return err
	}
	names, _, err := r.s.childrenW(r.p.Root())
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	added := r.addEntries(names)
	var gone []string
	r.mu.RLock()
	for n := range r.jobs {
		if !present[n] {
			gone = append(gone, n)
		}
	}
	r.mu.RUnlock()
	r.listed.Store(true)
	for _, n := range added {
		r.w.kick(refreshKey{kind: kindLoad, job: n})
	}
	// a job missing from the listing is removed once its own read confirms it: refreshPresence may have
	// added it after this listing was read
	for _, n := range gone {
		r.w.kick(refreshKey{kind: kindPresence, job: n})
	}
	return nil
}

// refreshPresence adds or removes one job after the namespace's recursive watch reported its root created
// or deleted: one exists request, where listing the namespace again read every job's name (~1.5 MB at
// 100,000 jobs, once per job created, on every peer: the registration of 100,000 jobs was quadratic). It
// reads the root's current state, so its runs converge whatever the order in which events, loads and a
// listing in flight are applied: a job a stale listing brought back is removed again by its load, which
// finds no config and asks for its presence.
func (r *Registry) refreshPresence(job string) error {
	ok, _, err := r.s.exists(r.p.Job(job))
	if err != nil {
		return err
	}
	if !ok {
		// under the job's refreshMu, as its loads: a load that read the config before the deletion then
		// either announced the job before this removal does, or finds its entry detached and announces
		// nothing (applyLoad), never a JobAdded after the JobRemoved
		if e := r.entry(job); e != nil {
			e.refreshMu.Lock()
			defer e.refreshMu.Unlock()
		}
		r.emit(r.removeEntries([]string{job}))
		return nil
	}
	for _, n := range r.addEntries([]string{job}) {
		r.w.kick(refreshKey{kind: kindLoad, job: n})
	}
	return nil
}

// addEntries adds an entry for each name the registry does not know and returns the added names. A job
// added after the first listing appeared while this peer watched (its load reports it as created).
func (r *Registry) addEntries(names []string) []string {
	appeared := r.listed.Load()
	var added []string
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if r.jobs[n] == nil {
			r.jobs[n] = &jobEntry{name: n, st: jobState{appeared: appeared}, sh: &r.entries}
			added = append(added, n)
		}
	}
	return added
}

// removeEntries drops the named jobs' entries and returns a JobRemoved event for each one that was loaded.
func (r *Registry) removeEntries(names []string) []Event {
	var evs []Event
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		e := r.jobs[n]
		if e == nil {
			continue
		}
		delete(r.jobs, n)
		e.mu.Lock()
		if e.st.hasConfig && e.st.loaded {
			evs = append(evs, Event{Kind: JobRemoved, Job: n, PrevConfig: e.configLocked(), Czxid: e.st.cfgCzxid})
		}
		e.st.hasConfig, e.detached = false, true
		e.changedLocked()
		e.mu.Unlock()
	}
	return evs
}

// loadJob reads every node of a job with watches, registers this peer on it and campaigns for its lead.
func (r *Registry) loadJob(e *jobEntry) error {
	if err := r.armNamespace(); err != nil {
		return err
	}
	first, direct := e.loadStart()
	// the nodes are independent of each other: read them at once (go-zookeeper pipelines the requests on
	// its connection), so a load costs two round trips (the lists, then the listed children) rather than
	// eight; with thousands of jobs starting together, load latency is what bounds how soon every job can
	// fire. A first load reads the items' nodes too, instead of queueing three refreshes per item behind
	// every other job's: the job is announced with its owners known, so its first fire need not wait.
	// Under the namespace's recursive watch the reads take two requests in all (bulkload.go).
	rd, bulk, err := r.readJobBulk(e.name, first)
	if err != nil {
		return err
	}
	rd.direct = direct
	return r.applyLoad(e, first, rd, bulk)
}

// applyLoad applies what a load read (rd, when bulk; otherwise it reads the job node by node first).
func (r *Registry) applyLoad(e *jobEntry, first bool, rd jobRead, bulk bool) error {
	job := e.name
	if !bulk {
		var err error
		if rd, err = r.readJobOneByOne(job, first); err != nil {
			return err
		}
	}
	data, st, cfgRead := rd.data, rd.st, rd.cfgRead
	servers, instances, serverVers, leader := rd.servers, rd.instances, rd.serverVers, rd.leader
	necessary, triggered, failover, items, read := rd.necessary, rd.triggered, rd.failover, rd.items, rd.read
	if cfgRead != nil {
		// a job root without config (being created by another tool, or being deleted): wait for config
		ok, _, err := r.s.existsW(r.p.Config(job))
		if err != nil {
			return err
		}
		if ok {
			r.w.kick(refreshKey{kind: kindLoad, job: job})
			return nil
		}
		r.dropConfig(e)
		r.w.kick(refreshKey{kind: kindPresence, job: job}) // the root too may be gone
		return nil
	}
	body, cfgErr := r.bodies.parse(data)
	nums := itemNumbers(items)

	if !r.lockUnlessStale(e, kindLoad, func() bool { return e.direct != rd.direct }) {
		return nil
	}
	if e.detached {
		// the job was removed after this load read it (refreshPresence): announcing it would add a job the
		// registry no longer holds after its JobRemoved
		e.mu.Unlock()
		return nil
	}
	wasLoaded := e.st.loaded && e.st.hasConfig
	// a creation: a job that appeared while this peer watched, or whose config came back after it went
	created := !wasLoaded && (e.st.appeared || e.st.loaded)
	prev, prevVersion := e.configLocked(), e.st.cfgVersion
	e.st.hasConfig, e.st.loaded = true, true
	e.setConfigLocked(body, cfgErr, st)
	cfg := e.configLocked()
	e.st.servers = r.shared.intern(servers)
	if !wasLoaded {
		r.noteJoinLocked(e) // the instances a first load finds joined by now
	}
	r.setInstancesLocked(e, instances)
	e.st.serverVers = nextServerVersions(e.st.servers, serverVers, nil)
	e.st.leader, e.st.leaderOwner, e.st.leaderVersion = leader.id, leader.owner, leader.version
	e.st.necessary, e.st.failover = necessary, failover
	e.st.items.retain(func(i int) bool { return slices.Contains(nums, i) })
	for _, i := range nums {
		if it := read[i]; it != nil {
			e.st.items.set(i, it)
		} else if e.st.items.get(i) == nil {
			e.st.items.set(i, &ItemState{Exists: true, OwnerVersion: -1})
		}
	}
	if _, ok := instances[r.me.InstanceID]; !ok {
		e.st.registered = false
	}
	e.changedLocked()
	e.mu.Unlock()

	for _, i := range nums {
		if read[i] == nil {
			r.kickItem(job, i)
		}
	}
	ev := Event{Kind: JobAdded, Job: job, Config: cfg, Czxid: st.Czxid, Created: created,
		ThroughAPI: rd.apiMark != 0 && rd.apiMark == st.Czxid}
	if wasLoaded {
		ev = Event{Kind: JobUpdated, Job: job, PrevConfig: prev, Config: cfg, PrevVersion: prevVersion,
			Version: st.Version, Czxid: st.Czxid}
	}
	r.emit([]Event{ev})
	// a first load registers at once rather than behind every other job's load (a fire waits for a
	// registration under way: JobSnapshot.Registering), without waiting for it: many jobs' registrations
	// share a multi through the batcher
	if first {
		r.registerSoon(e)
	} else {
		r.w.kick(refreshKey{kind: kindRegister, job: job})
	}
	if triggered {
		r.emit([]Event{{Kind: TriggerRequested, Job: job}})
	}
	return nil
}

func (r *Registry) kickItem(job string, i int) {
	r.w.kick(refreshKey{kind: kindItemInstance, job: job, item: i})
	r.w.kick(refreshKey{kind: kindItemDisabled, job: job, item: i})
	r.w.kick(refreshKey{kind: kindItemFailover, job: job, item: i})
}

// parseConfig parses a config node. The config it returns is never nil (the zero config when the node does
// not parse) and is never written again: the job's entry, its snapshots and its events share it.
func parseConfig(job string, data []byte) (*ejserver.JobConfig, error) {
	cfg, err := ejserver.ParseElasticJobYAML(data)
	if err == nil && cfg.JobName != job {
		cfg.JobName = job // ElasticJob's node name is authoritative
	}
	internConfig(&cfg)
	return &cfg, err
}

func (r *Registry) dropConfig(e *jobEntry) {
	e.mu.Lock()
	was := e.st.hasConfig && e.st.loaded
	e.st.hasConfig, e.st.registered = false, false
	prev, czxid := e.configLocked(), e.st.cfgCzxid
	e.changedLocked()
	e.mu.Unlock()
	if was {
		r.emit([]Event{{Kind: JobRemoved, Job: e.name, PrevConfig: prev, Czxid: czxid}})
	}
}

// ensureSkeleton creates the folders ejserver watches under a job that another tool created.
func (r *Registry) ensureSkeleton(job string) error {
	for _, pth := range r.p.jobSkeleton(job) {
		if err := r.s.ensurePath(pth); err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return nil // the job is being deleted
			}
			return err
		}
	}
	return nil
}

func (r *Registry) refreshConfig(e *jobEntry) error {
	data, st, err := r.s.getW(r.p.Config(e.name))
	if errors.Is(err, zk.ErrNoNode) {
		ok, _, err := r.s.existsW(r.p.Config(e.name))
		if err != nil {
			return err
		}
		if ok {
			r.w.kick(refreshKey{kind: kindConfig, job: e.name})
			return nil
		}
		r.dropConfig(e)
		return nil
	}
	if err != nil {
		return err
	}
	e.mu.Lock()
	if !e.st.hasConfig || !e.st.loaded {
		e.mu.Unlock()
		r.w.kick(refreshKey{kind: kindLoad, job: e.name}) // the job came (back)
		return nil
	}
	if st.Version == e.st.cfgVersion && e.st.cfgErr == nil {
		e.mu.Unlock()
		return nil
	}
	prev, prevVersion := e.configLocked(), e.st.cfgVersion
	body, cfgErr := r.bodies.parse(data)
	e.setConfigLocked(body, cfgErr, st)
	cur := e.configLocked()
	e.changedLocked()
	e.mu.Unlock()
	r.emit([]Event{{Kind: JobUpdated, Job: e.name, PrevConfig: prev, Config: cur, PrevVersion: prevVersion,
		Version: st.Version, Czxid: st.Czxid}})
	return nil
}

// folderW lists a job folder's children with a watch, creating the folder first if it is missing (a job that
// ElasticJob or another tool created lazily). A job being deleted (no root) lists nothing.
func (r *Registry) folderW(job, pth string) ([]string, error) {
	names, _, err := r.s.childrenW(pth)
	if !errors.Is(err, zk.ErrNoNode) {
		return names, err
	}
	if ok, _, err := r.s.exists(r.p.Config(job)); err != nil || !ok {
		return nil, err
	}
	if err := r.s.ensurePath(pth); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	names, _, err = r.s.childrenW(pth)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return names, err
}

// readInstances lists instances/ with a watch; known gives the server IPs already read. The instance
// node of an ejserver peer holds the server IP its peer node (/{ns}.ejserver/peers/{id}) holds, written once
// by the same process: a live peer's IP is taken from there, and only the nodes of other instances (an
// ElasticJob process, a peer not seen yet) are read, one request each.
func (r *Registry) readInstances(job string, known map[string]string) (map[string]string, error) {
	return r.readChildren(job, r.p.Instances(job), known, func(id string) (string, error) {
		if ip := r.peerIP(id); ip != "" {
			return ip, nil
		}
		data, _, err := r.s.get(r.p.Instance(job, id))
		return serverIPOf(id, data), err
	})
}

// readChildren lists pth's children with a watch and returns a value for each: from known when it holds
// the child, otherwise from read, for all unknown children at once (go-zookeeper pipelines the reads). A
// child gone meanwhile is left out; the watch tells us again.
func (r *Registry) readChildren(job, pth string, known map[string]string, read func(name string) (string, error)) (map[string]string, error) {
	names, err := r.folderW(job, pth)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	var unknown []string
	for _, n := range names {
		if v, ok := known[n]; ok {
			out[n] = v
		} else {
			unknown = append(unknown, n)
		}
	}
	values := make([]string, len(unknown))
	found := make([]bool, len(unknown))
	err = parallel.For(len(unknown), len(unknown), func(k int) error {
		v, err := read(unknown[k])
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		values[k], found[k] = v, err == nil
		return err
	})
	if err != nil {
		return nil, err
	}
	for k, n := range unknown {
		if found[k] {
			out[n] = values[k]
		}
	}
	return out, nil
}

func (r *Registry) readExists(pth string) (bool, error) {
	ok, _, err := r.s.existsW(pth)
	return ok, err
}

func (r *Registry) refreshNecessary(e *jobEntry) error {
	ok, err := r.readExists(r.p.Necessary(e.name))
	if err != nil {
		return err
	}
	r.applyNecessary(e, ok)
	return nil
}

// applyNecessary applies a read of a job's leader/sharding/necessary: ok, whether it is there.
func (r *Registry) applyNecessary(e *jobEntry, ok bool) {
	e.mu.Lock()
	changed := e.st.necessary != ok
	e.st.necessary = ok
	if changed {
		e.changedLocked()
	}
	e.mu.Unlock()
	if changed {
		r.emit([]Event{{Kind: NecessaryChanged, Job: e.name}})
	}
}

func (r *Registry) readFailoverItems(job string) ([]int, error) {
	names, err := r.folderW(job, r.p.FailoverItems(job))
	if err != nil {
		return nil, err
	}
	return itemNumbers(names), nil
}

func (r *Registry) refreshFailoverItems(e *jobEntry) error {
	items, err := r.readFailoverItems(e.name)
	if err != nil {
		return err
	}
	e.mu.Lock()
	changed := !slices.Equal(e.st.failover, items)
	e.st.failover = items
	if changed {
		e.changedLocked()
	}
	e.mu.Unlock()
	if changed {
		r.emit([]Event{{Kind: FailoverItemsChanged, Job: e.name}})
	}
	return nil
}

func (r *Registry) refreshTrigger(e *jobEntry) error {
	ok, err := r.readExists(r.p.Trigger(e.name, r.me.InstanceID))
	if err != nil {
		return err
	}
	if ok {
		r.emit([]Event{{Kind: TriggerRequested, Job: e.name}})
	}
	return nil
}

func (r *Registry) refreshSharding(e *jobEntry) error {
	names, err := r.folderW(e.name, r.p.Sharding(e.name))
	if err != nil {
		return err
	}
	nums := itemNumbers(names)
	var added []int
	e.mu.Lock()
	changed := e.st.items.retain(func(i int) bool { return slices.Contains(nums, i) })
	for _, i := range nums {
		if e.st.items.get(i) == nil {
			e.st.items.set(i, &ItemState{Exists: true, OwnerVersion: -1})
			added = append(added, i)
			changed = true
		}
	}
	if changed {
		e.changedLocked()
	}
	e.mu.Unlock()
	for _, i := range added {
		r.kickItem(e.name, i)
	}
	if changed {
		r.emit([]Event{{Kind: ItemsChanged, Job: e.name}})
	}
	return nil
}

// refreshItem reads one of sharding/{i}/instance, disabled or failover, with a watch.
func (r *Registry) refreshItem(e *jobEntry, kind refreshKind, i int) error {
	var value string
	version := int32(-1)
	var present bool
	var err error
	switch kind {
	case kindItemInstance, kindItemFailover:
		value, version, present, err = r.readData(r.p.ItemNode(e.name, i, itemNodeOf(kind)))
	case kindItemDisabled:
		present, err = r.readExists(r.p.ItemNode(e.name, i, NodeDisabled))
	}
	if err != nil {
		return err
	}
	r.applyItem(e, kind, i, value, version, present)
	return nil
}

// itemNodeOf names the item's node a refresh of kind reads.
func itemNodeOf(kind refreshKind) string {
	switch kind {
	case kindItemDisabled:
		return NodeDisabled
	case kindItemFailover:
		return NodeFailover
	}
	return NodeInstance
}

// setRead sets the field of it that its node of kind holds, from what a read found: the node's trimmed data
// value and data version (-1 when absent), and whether it is present.
func (it *ItemState) setRead(kind refreshKind, value string, version int32, present bool) {
	switch kind {
	case kindItemInstance:
		it.Owner, it.OwnerVersion = value, version
	case kindItemDisabled:
		it.Disabled = present
	case kindItemFailover:
		it.FailoverTo = value
	}
}

// applyItem applies what a read of item i's node of kind found: its trimmed data value and data version (-1
// when absent), and whether it is present.
func (r *Registry) applyItem(e *jobEntry, kind refreshKind, i int, value string, version int32, present bool) {
	e.mu.Lock()
	it := e.st.items.get(i)
	if it == nil {
		e.mu.Unlock()
		return // the item was removed by a resharding
	}
	before := *it
	if kind == kindItemInstance && it.OwnerVersion >= 0 && it.OwnerVersion != version {
		e.st.ownersChangedAt = r.clk.Now()
	}
	it.setRead(kind, value, version, present)
	changed := before != *it
	if changed {
		e.changedLocked()
	}
	e.mu.Unlock()
	if changed {
		r.emit([]Event{{Kind: ItemsChanged, Job: e.name}})
	}
}

// readItems reads (and watches) the instance, disabled and failover nodes of the items at once.
func (r *Registry) readItems(job string, nums []int) (map[int]*ItemState, error) {
	out := make([]ItemState, len(nums))
	err := parallel.For(3*len(nums), min(3*len(nums), 64), func(k int) error {
		i, it := nums[k/3], &out[k/3]
		var err error
		switch k % 3 {
		case 0:
			it.Owner, it.OwnerVersion, _, err = r.readData(r.p.ItemNode(job, i, NodeInstance))
		case 1:
			it.Disabled, err = r.readExists(r.p.ItemNode(job, i, NodeDisabled))
		case 2:
			it.FailoverTo, _, _, err = r.readData(r.p.ItemNode(job, i, NodeFailover))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	m := make(map[int]*ItemState, len(nums))
	for k, i := range nums {
		out[k].Exists = true
		m[i] = &out[k]
	}
	return m, nil
}

// readData reads a node's data (trimmed) and version, with readNode's watch.
func (r *Registry) readData(pth string) (string, int32, bool, error) {
	data, st, ok, err := r.readNode(pth)
	if !ok {
		return "", -1, false, err
	}
	return strings.TrimSpace(string(data)), st.Version, true, nil
}

// readNode reads a node with a watch, or watches for its creation when absent. A node the namespace's
// recursive watch covers needs no watch of its own for its creation: one request, not two.
func (r *Registry) readNode(pth string) ([]byte, *zk.Stat, bool, error) {
	for {
		// whether the watch covered the node when it was read: armed only afterwards, it could miss a
		// creation between the read and the arming
		covered := r.s.isCovered(pth)
		data, st, err := r.s.getW(pth)
		if err == nil {
			return data, st, true, nil
		}
		if !errors.Is(err, zk.ErrNoNode) || covered {
			return nil, nil, false, ignoreNoNode(err)
		}
		ok, _, err := r.s.existsW(pth)
		if err != nil || !ok {
			return nil, nil, false, err
		}
	}
}

// itemNumbers parses item node names, ignoring anything that is not a canonical non-negative integer.
func itemNumbers(names []string) []int {
	out := make([]int, 0, len(names))
	for _, n := range names {
		if i, ok := itemNumber(n); ok {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// ignoreNoNode is err, or nil when it says the node does not exist.
func ignoreNoNode(err error) error {
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
