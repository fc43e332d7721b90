package cluster

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
)

// CreateJob writes a new job in ElasticJob's layout in one transaction: the root ("HTTP"), config, the
// folders ejserver watches, and leader/sharding/necessary so that its first leader shards it before its first
// fire. A job that exists gets ECONFLICT.
func (r *Registry) CreateJob(cfg ejserver.JobConfig) (int32, error) {
	return r.CreateJobSharded(cfg, nil)
}

// CreateJobSharded is CreateJob with the job's first sharding: when owners names an owner for each of the
// job's items, sharding/{i}/instance is written in the creating transaction instead of
// leader/sharding/necessary, so every peer fires the job from its first scheduled time without waiting for a
// leader to be elected and to reshard (the leader later keeps the sharding if it is what the strategy gives:
// sharding.Assess). The layout is ElasticJob's, as after any resharding.
func (r *Registry) CreateJobSharded(cfg ejserver.JobConfig, owners []string) (int32, error) {
	if len(owners) != cfg.ShardingTotalCount || slices.Contains(owners, "") {
		owners = nil
	}
	data, err := ejserver.MarshalElasticJobYAML(cfg)
	if err != nil {
		return 0, err
	}
	job := cfg.JobName
	ops := []any{r.s.opCreate(r.p.Job(job), []byte(JobRootData), 0), r.s.opCreate(r.p.Config(job), data, 0)}
	for _, pth := range r.p.jobSkeleton(job) {
		ops = append(ops, r.s.opCreate(pth, nil, 0))
	}
	if owners == nil {
		ops = append(ops, r.s.opCreate(r.p.Necessary(job), nil, 0))
	}
	for i, owner := range owners {
		ops = append(ops, r.s.opCreate(r.p.Item(job, i), nil, 0), r.s.opCreate(r.p.ItemNode(job, i, NodeInstance), []byte(owner), 0))
	}
	// the audit trail's mark: created in the same transaction as the config, so it has the config's czxid
	// and no peer reports the creation as made outside the API (see ExternalWatch). A new name's creation is
	// one multi, its audit folder in it: every read before it queues, under a registration's load, behind the
	// peer's other reads (steady-100000: 4.8 s a creation). A node there already (a root left over, an earlier
	// life's audit folder) or missing (the audit tree on a new cluster) sends it the careful way.
	mark := r.s.opCreate(r.p.SeenCreate(job), []byte(seenByAPI), 0)
	_, err = r.s.multi(append(slices.Clip(ops), r.s.opCreate(r.p.SeenJob(job), nil, 0), mark)...)
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
		if err := r.createJobCarefully(job, data, ops, mark); err != nil {
			return 0, err
		}
	} else if err != nil {
		return 0, ejserver.Unavailable(err, "create job %q", job)
	}
	r.Notice(job)
	return 0, nil
}

// createJobCarefully creates job when its first multi found a node there or missing: the audit folder made
// if missing, an earlier life's mark removed, then the job's nodes and the mark; a root left over by
// ElasticJob or a half-finished delete is filled in; a job whose config exists is a conflict.
func (r *Registry) createJobCarefully(job string, data []byte, ops []any, mark any) error {
	if err := r.s.ensurePath(r.p.SeenJob(job)); err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	conflict := ejserver.Errorf(ejserver.ECONFLICT, "job %q already exists", job)
	if ok, _, err := r.s.exists(r.p.Config(job)); err == nil {
		if ok {
			return conflict
		}
		_ = r.s.del(r.p.SeenCreate(job), -1)
	}
	_, err := r.s.multi(append(slices.Clip(ops), mark)...)
	if err == nil {
		return nil
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return ejserver.Unavailable(err, "create job %q", job)
	}
	// the config was not there a moment ago: the root is left over, or a creation raced this one (then the
	// config's create below finds it)
	if _, err := r.s.multi(r.s.opCreate(r.p.Config(job), data, 0), mark); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return conflict
		}
		return ejserver.Unavailable(err, "registry unavailable")
	}
	if err := r.ensureSkeleton(job); err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	_ = r.s.create(r.p.Necessary(job), nil, 0)
	return nil
}

// GetJob reads a job's config and its version (the ETag) from ZooKeeper itself.
func (r *Registry) GetJob(job string) (ejserver.JobConfig, int32, error) {
	data, st, err := r.s.get(r.p.Config(job))
	if errors.Is(err, zk.ErrNoNode) {
		return ejserver.JobConfig{}, 0, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", job)
	}
	if err != nil {
		return ejserver.JobConfig{}, 0, ejserver.Unavailable(err, "registry unavailable")
	}
	cfg, err := parseConfig(job, data)
	if err != nil {
		return *cfg, st.Version, &ejserver.Error{Code: ejserver.EINTERNAL, Message: "stored config can't be parsed", Err: err}
	}
	return *cfg, st.Version, nil
}

// ReplaceJob writes a job's config if its version is still version (-1: any). A stale version gets
// EPRECONDITION, a missing job ENOTFOUND. The new version is returned.
func (r *Registry) ReplaceJob(cfg ejserver.JobConfig, version int32) (int32, error) {
	data, err := ejserver.MarshalElasticJobYAML(cfg)
	if err != nil {
		return 0, err
	}
	job := cfg.JobName
	st, err := r.setWithSeen(r.p.Config(job), data, version, func(czxid int64, v int32) string {
		return r.p.SeenConfig(job, czxid, v)
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", cfg.JobName)
	case errors.Is(err, zk.ErrBadVersion):
		return 0, ejserver.Errorf(ejserver.EPRECONDITION, "job %q was changed by someone else (version %d is stale); read it again", cfg.JobName, version)
	case err != nil:
		return 0, ejserver.Unavailable(err, "registry unavailable")
	}
	return st.Version, nil
}

// DeleteJob removes a job's whole subtree. The config goes first, in its own step, so every peer stops
// firing the job at once and no peer re-creates its nodes; then the rest goes bottom-up in batches.
func (r *Registry) DeleteJob(job string) error {
	if err := r.deleteConfig(job); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			if ok, _, eerr := r.s.exists(r.p.Job(job)); eerr == nil && !ok {
				return ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", job)
			}
		} else {
			return ejserver.Unavailable(err, "registry unavailable")
		}
	}
	r.pruneSeen(job)                      // the audit trail's marks of the job's versions (see ExternalWatch)
	_ = r.s.del(r.p.FireCounter(job), -1) // a job made again under the name counts its remainingFires anew
	for attempt := 0; ; attempt++ {
		err := r.deleteTree(r.p.Job(job))
		if err == nil || errors.Is(err, zk.ErrNoNode) && attempt > 0 {
			return nil
		}
		if attempt == 5 || !(errors.Is(err, zk.ErrNotEmpty) || errors.Is(err, zk.ErrNoNode)) {
			return ejserver.Unavailable(err, "delete job %q", job)
		}
	}
}

// deleteConfig deletes a job's config node and, in the same transaction, marks the deletion of its life as
// the API's, so that no peer reports it as made outside the API.
func (r *Registry) deleteConfig(job string) error {
	if err := r.s.ensurePath(r.p.SeenJob(job)); err != nil {
		return err
	}
	for range 5 {
		ok, st, err := r.s.exists(r.p.Config(job))
		if err != nil || !ok {
			if err == nil {
				err = zk.ErrNoNode
			}
			return err
		}
		_, err = r.s.multi(opDelete(r.p.Config(job), st.Version), r.s.opCreate(r.p.SeenDelete(job, st.Czxid), []byte(seenByAPI), 0))
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
			if errors.Is(err, zk.ErrNodeExists) {
				return r.s.del(r.p.Config(job), -1) // this life's deletion is marked already
			}
			return err
		}
		// changed, or re-created, meanwhile: read it again
	}
	return r.s.del(r.p.Config(job), -1) // it keeps changing: delete it all the same
}

// pruneSeen deletes a deleted job's seen nodes but the deletion marks, which peers may still be checking.
func (r *Registry) pruneSeen(job string) {
	kids, _, err := r.s.children(r.p.SeenJob(job))
	if err != nil {
		return
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, seenDeletePrefix) {
			_ = r.s.del(r.p.SeenJob(job)+"/"+k, -1)
		}
	}
}

// deleteTree deletes root and everything below it, deepest first, in multis of bounded size.
func (r *Registry) deleteTree(root string) error {
	var all []string
	queue := []string{root}
	for len(queue) > 0 {
		pth := queue[0]
		queue = queue[1:]
		kids, _, err := r.s.children(pth)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		all = append(all, pth)
		for _, k := range kids {
			queue = append(queue, pth+"/"+k)
		}
	}
	if len(all) == 0 {
		return zk.ErrNoNode
	}
	// deepest first: sort by depth descending
	sort.SliceStable(all, func(i, j int) bool { return strings.Count(all[i], "/") > strings.Count(all[j], "/") })
	for len(all) > 0 {
		n := min(len(all), maxBatchOps)
		ops := make([]any, n)
		for i, pth := range all[:n] {
			ops[i] = opDelete(pth, -1)
		}
		if _, err := r.s.multi(ops...); err != nil {
			return err
		}
		all = all[n:]
	}
	return nil
}

// SetServerState writes servers/{ip} of one job (ENABLED or DISABLED).
func (r *Registry) SetServerState(job, ip, state string) error {
	if _, err := r.setWithSeen(r.p.Server(job, ip), []byte(state), -1, func(czxid int64, v int32) string {
		return r.p.SeenServer(job, ip, czxid, v)
	}); err != nil {
		if !errors.Is(err, zk.ErrNoNode) {
			return ejserver.Unavailable(err, "registry unavailable")
		}
		if err := r.s.create(r.p.Server(job, ip), []byte(state), 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			if errors.Is(err, zk.ErrNoNode) {
				return ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", job)
			}
			return ejserver.Unavailable(err, "registry unavailable")
		}
	}
	if state == ServerEnabled && ip == r.me.ServerIP {
		r.Reregister(job)
	}
	return nil
}

// SetItemDisabled creates or deletes sharding/{i}/disabled.
func (r *Registry) SetItemDisabled(job string, item int, disabled bool) error {
	pth := r.p.ItemNode(job, item, NodeDisabled)
	var err error
	if disabled {
		if err = r.s.ensurePath(r.p.Item(job, item)); err == nil {
			err = r.s.create(pth, nil, 0)
		}
		if errors.Is(err, zk.ErrNodeExists) {
			err = nil
		}
	} else {
		err = r.s.del(pth, -1)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
	}
	if err != nil {
		return ejserver.Unavailable(err, "registry unavailable")
	}
	return nil
}

// CreateTriggers creates trigger/{id} for each instance, in one transaction. A trigger still pending for
// one of them fails the whole request with ECONFLICT naming it.
func (r *Registry) CreateTriggers(job string, instances []string, req TriggerRequest) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ops := []any{opCheck(r.p.Config(job), -1)}
	for _, id := range instances {
		ops = append(ops, r.s.opCreate(r.p.Trigger(job, id), data, 0))
	}
	_, err = r.s.multi(ops...)
	if err == nil {
		return nil
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return ejserver.Errorf(ejserver.ECONFLICT, "a trigger of job %q is still waiting to be picked up by an instance; try again in a moment", job)
	}
	if errors.Is(err, zk.ErrNoNode) {
		return ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", job)
	}
	return ejserver.Unavailable(err, "registry unavailable")
}

// DumpLine is one node of a job's subtree.
type DumpLine struct {
	Path  string
	Value string
}

// Dump reads a job's registry subtree, depth first in name order (ElasticJob's dump).
func (r *Registry) Dump(job string) ([]DumpLine, error) {
	var out []DumpLine
	var walk func(pth string) error
	walk = func(pth string) error {
		data, _, err := r.s.get(pth)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, DumpLine{Path: pth, Value: redactProps(pth, data, r.p.Config(job))})
		kids, _, err := r.s.children(pth)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		}
		slices.SortFunc(kids, compareNodeNames)
		for _, k := range kids {
			if err := walk(pth + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(r.p.Job(job)); err != nil {
		return nil, ejserver.Unavailable(err, "registry unavailable")
	}
	if len(out) == 0 {
		return nil, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", job)
	}
	return out, nil
}

// redactProps masks webhook secrets in the config node's YAML.
func redactProps(pth string, data []byte, configPath string) string {
	s := string(data)
	if pth != configPath {
		return s
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	skipDeeper := -1 // while >= 0: drop the lines indented deeper than this (a redacted multi-line value)
	for _, l := range lines {
		t := strings.TrimSpace(l)
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if skipDeeper >= 0 {
			if t == "" || indent > skipDeeper {
				continue
			}
			skipDeeper = -1
		}
		if secretProp(t) {
			k, _, _ := strings.Cut(l, ":")
			out = append(out, k+": '******'")
			skipDeeper = indent
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// secretProp reports whether a YAML line starts a props entry holding a secret.
func secretProp(line string) bool {
	for _, k := range []string{ejserver.PropSecret, ejserver.PropPreviousSecret, ejserver.PropTLSClientKey} {
		if strings.HasPrefix(line, k+":") {
			return true
		}
	}
	return false
}

// compareNodeNames orders numeric names numerically, the rest by text.
func compareNodeNames(a, b string) int {
	na, okA := itemNumber(a)
	nb, okB := itemNumber(b)
	if okA && okB {
		return cmp.Compare(na, nb)
	}
	return strings.Compare(a, b)
}

// ItemDetail is the registry state of one item, read directly for the sharding view.
type ItemDetail struct {
	Item        int
	Exists      bool
	Owner       string
	Running     *Running
	Misfire     bool
	Disabled    bool
	FailoverTo  string
	Failovering string
	Completed   *Completed
}

// ItemDetails reads sharding/{i} for i below n (one children read per item, plus the data of the nodes that
// exist).
func (r *Registry) ItemDetails(job string, n int) ([]ItemDetail, error) {
	out := make([]ItemDetail, n)
	err := concurrently(n, func(i int) error {
		d := ItemDetail{Item: i}
		kids, _, err := r.s.children(r.p.Item(job, i))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		d.Exists = err == nil
		for _, k := range kids {
			data, _, err := r.s.get(r.p.ItemNode(job, i, k))
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			v := strings.TrimSpace(string(data))
			switch k {
			case NodeInstance:
				d.Owner = v
			case NodeRunning:
				run := decodeRunning(data)
				d.Running = &run
			case NodeMisfire:
				d.Misfire = true
			case NodeDisabled:
				d.Disabled = true
			case NodeFailover:
				d.FailoverTo = v
			case NodeFailovering:
				d.Failovering = v
			case NodeCompleted:
				var c Completed
				if json.Unmarshal(data, &c) == nil {
					d.Completed = &c
				}
			}
		}
		out[i] = d
		return nil
	})
	if err != nil {
		return nil, ejserver.Unavailable(err, "registry unavailable")
	}
	return out, nil
}

// Peers lists the peers registered in the namespace's meta node.
func (r *Registry) Peers() ([]Identity, error) {
	ids, _, err := r.s.children(r.p.Peers())
	if err != nil {
		return nil, ejserver.Unavailable(err, "registry unavailable")
	}
	var out []Identity
	for _, id := range ids {
		data, _, err := r.s.get(r.p.Peer(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, ejserver.Unavailable(err, "registry unavailable")
		}
		var p Identity
		if json.Unmarshal(data, &p) != nil || p.InstanceID == "" {
			p = Identity{InstanceID: id}
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Identity) int { return strings.Compare(a.InstanceID, b.InstanceID) })
	return out, nil
}
