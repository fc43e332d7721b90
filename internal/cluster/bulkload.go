package cluster

import (
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/parallel"
)

// A job's load in bulk (issue 21). A peer's first load of a job is a dozen small reads (config, the
// servers and instances folders and their nodes, the leader, necessary, the failover items, its trigger,
// the sharding folder and each item's instance, disabled and failover): at 100,000 jobs a starting peer
// is bound by the number of requests ZooKeeper must process, not by their latency. Under the namespace's
// recursive watch (jobwatch.go) the reads need no watch of their own, so they travel as two multiRead
// requests (ZooKeeper 3.6+, the fork's MultiRead): the job's fixed nodes and folders, then the listed
// children. An absent node is its read's NoNode (an exists check costs nothing more). A job whose config
// or one of whose folders is missing (a job being created or deleted by another tool) is read one node at
// a time, as without the recursive watch, which waits for the config or creates the folder.

// bulkChunk bounds the reads of one multiRead request (a job of thousands of items is read in several,
// pipelined), so an answer stays far below ZooKeeper's 1 MB packet limit.
const bulkChunk = 256

// jobRead is what a job's load read.
type jobRead struct {
	data                 []byte
	st                   *zk.Stat
	cfgRead              error
	servers, instances   map[string]string
	serverVers           map[string]nodeVersion
	leader               leaderNode
	necessary, triggered bool
	failover             []int
	items                []string
	read                 map[int]*ItemState
	// direct is the job's counts of changes applied from events when the read began (deletions.go)
	direct directCounts
	// apiMark is the czxid of the API's creation mark (Paths.SeenCreate), read with a first load: equal to
	// the config's, the job was created through the API (0: absent, or not read)
	apiMark int64
}

// readJobBulk reads a job in two multiRead requests. It reports false, having read nothing usable, when the
// bulk path does not apply: no recursive watch covers the job, the server does not speak multiRead, or the
// config or a folder is missing.
func (r *Registry) readJobBulk(job string, first bool) (jobRead, bool, error) {
	rds, bulk, err := r.readJobsBulk([]string{job}, []bool{first})
	if err != nil || bulk == nil {
		return jobRead{}, false, err
	}
	return rds[0], bulk[0], nil
}

// The reads of a job's fixed nodes and folders, in this order (fixedReads).
const (
	rdConfig = iota
	rdServers
	rdInstances
	rdLeader
	rdNecessary
	rdFailoverItems
	rdTrigger
	rdSharding
	rdMark // a first load only
)

// fixedReads are the reads of a job's first multiRead.
func (r *Registry) fixedReads(job string, first bool) []zk.ReadOp {
	ops := []zk.ReadOp{
		rdConfig:        {Path: r.p.Config(job)},
		rdServers:       {Path: r.p.Servers(job), Children: true},
		rdInstances:     {Path: r.p.Instances(job), Children: true},
		rdLeader:        {Path: r.p.LeaderInstance(job)},
		rdNecessary:     {Path: r.p.Necessary(job)},
		rdFailoverItems: {Path: r.p.FailoverItems(job), Children: true},
		rdTrigger:       {Path: r.p.Trigger(job, r.me.InstanceID)},
		rdSharding:      {Path: r.p.Sharding(job), Children: true},
	}
	if first {
		// the API's creation mark: a job it created is no change made outside it, and the external-change
		// watch need not look it up (one exists per job and peer, queued behind a registration's thousands)
		ops = append(ops, zk.ReadOp{Path: r.p.SeenCreate(job)})
	}
	return ops
}

// readJobsBulk reads jobs together: the fixed nodes of all of them, then the listed children of all of them,
// each phase in multiRead requests of up to bulkChunk reads sent at once, so a batch of loads costs about as
// many requests as one job's. bulk[i] reports whether jobs[i] was read (see readJobBulk); bulk is nil, and
// nothing was read, when the bulk path does not apply to any job.
func (r *Registry) readJobsBulk(jobs []string, first []bool) (rds []jobRead, bulk []bool, err error) {
	if r.noMultiRead.Load() || len(jobs) == 0 || !r.s.isCovered(r.p.Config(jobs[0])) {
		return nil, nil, nil
	}
	var ops []zk.ReadOp
	at := make([]int, len(jobs)+1)
	for i, job := range jobs {
		at[i] = len(ops)
		ops = append(ops, r.fixedReads(job, first[i])...)
	}
	at[len(jobs)] = len(ops)
	res, err := r.multiReadChunked(ops)
	if r.multiReadRefused(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	rds, bulk = make([]jobRead, len(jobs)), make([]bool, len(jobs))
	var children []zk.ReadOp
	var apply []func(zk.ReadResult)
	for i, job := range jobs {
		var ok bool
		ok, children, apply = r.fixedRead(job, first[i], res[at[i]:at[i+1]], &rds[i], children, apply)
		bulk[i] = ok
	}
	out, err := r.multiReadChunked(children)
	if err != nil {
		return nil, nil, err
	}
	for k, x := range out {
		apply[k](x)
	}
	return rds, bulk, nil
}

// readValue is what a multiRead's data read found: the node's trimmed data and data version (-1 when
// absent), and whether it is present.
func readValue(x zk.ReadResult) (value string, version int32, present bool) {
	if x.Err != nil {
		return "", -1, false
	}
	return strings.TrimSpace(string(x.Data)), x.Stat.Version, true
}

// multiReadRefused reports whether err is a server's refusal of multiRead (before 3.6), and remembers it: the
// registry reads node by node from then on.
func (r *Registry) multiReadRefused(err error) bool {
	if !errors.Is(err, zk.ErrUnimplemented) {
		return false
	}
	if !r.noMultiRead.Swap(true) {
		r.log.Warn("ZooKeeper does not speak multiRead (3.6+): reading every job's nodes one by one")
	}
	return true
}

// multiReadChunked sends ops in multiRead requests of up to bulkChunk reads, at once, and returns their
// results in order. An error other than NoNode in any result fails the whole.
func (r *Registry) multiReadChunked(ops []zk.ReadOp) ([]zk.ReadResult, error) {
	results := make([][]zk.ReadResult, (len(ops)+bulkChunk-1)/bulkChunk)
	err := parallel.For(len(results), len(results), func(c int) error {
		out, err := r.s.multiRead(ops[c*bulkChunk : min(len(ops), (c+1)*bulkChunk)])
		for _, x := range out {
			if x.Err != nil && !errors.Is(x.Err, zk.ErrNoNode) {
				return x.Err
			}
		}
		results[c] = out
		return err
	})
	if err != nil {
		return nil, err
	}
	all := make([]zk.ReadResult, 0, len(ops))
	for _, out := range results {
		all = append(all, out...)
	}
	return all, nil
}

// fixedRead fills rd from the results of a job's fixedReads and appends the reads of its listed children
// (each server's state, the instances of processes that are not live ejserver peers, and on a first load
// each item's nodes) with the functions that apply their results. It reports false when the bulk path does
// not apply to the job: its config or one of its folders is missing.
func (r *Registry) fixedRead(job string, first bool, res []zk.ReadResult, rd *jobRead, ops []zk.ReadOp,
	apply []func(zk.ReadResult)) (bool, []zk.ReadOp, []func(zk.ReadResult)) {
	for _, i := range []int{rdConfig, rdServers, rdInstances, rdFailoverItems, rdSharding} {
		if res[i].Err != nil {
			return false, ops, apply
		}
	}
	*rd = jobRead{
		data: res[rdConfig].Data, st: res[rdConfig].Stat,
		necessary: res[rdNecessary].Err == nil, triggered: res[rdTrigger].Err == nil,
		failover: itemNumbers(res[rdFailoverItems].Children), items: res[rdSharding].Children,
	}
	if res[rdLeader].Err == nil {
		rd.leader = leaderOf(res[rdLeader].Data, res[rdLeader].Stat)
	}
	if first && res[rdMark].Err == nil {
		rd.apiMark = res[rdMark].Stat.Czxid
	}
	rd.servers, rd.serverVers = map[string]string{}, map[string]nodeVersion{}
	for _, ip := range res[rdServers].Children {
		ops = append(ops, zk.ReadOp{Path: r.p.Server(job, ip)})
		apply = append(apply, func(x zk.ReadResult) {
			if x.Err == nil { // a server gone meanwhile is left out: the watch tells us again
				rd.servers[ip] = strings.TrimSpace(string(x.Data))
				rd.serverVers[ip] = nodeVersion{czxid: x.Stat.Czxid, version: x.Stat.Version}
			}
		})
	}
	rd.instances = map[string]string{}
	for _, id := range res[rdInstances].Children {
		if ip := r.peerIP(id); ip != "" {
			rd.instances[id] = ip
			continue
		}
		ops = append(ops, zk.ReadOp{Path: r.p.Instance(job, id)})
		apply = append(apply, func(x zk.ReadResult) {
			if x.Err == nil {
				rd.instances[id] = serverIPOf(id, x.Data)
			}
		})
	}
	if first {
		rd.read = map[int]*ItemState{}
		for _, i := range itemNumbers(rd.items) {
			it := &ItemState{Exists: true, OwnerVersion: -1}
			rd.read[i] = it
			for _, kind := range []refreshKind{kindItemInstance, kindItemDisabled, kindItemFailover} {
				ops = append(ops, zk.ReadOp{Path: r.p.ItemNode(job, i, itemNodeOf(kind))})
				apply = append(apply, func(x zk.ReadResult) {
					value, version, present := readValue(x)
					it.setRead(kind, value, version, present)
				})
			}
		}
	}
	return true, ops, apply
}

// readJobOneByOne reads a job node by node, with a watch on each node no recursive watch covers; the reads
// are independent of each other and sent at once (go-zookeeper pipelines them on its connection), so a
// load costs two round trips (the lists, then the listed children).
func (r *Registry) readJobOneByOne(job string, first bool) (jobRead, error) {
	var rd jobRead
	reads := []func() error{
		func() error {
			rd.data, rd.st, rd.cfgRead = r.s.getW(r.p.Config(job))
			if errors.Is(rd.cfgRead, zk.ErrNoNode) {
				return nil
			}
			return rd.cfgRead
		},
		func() (err error) { rd.servers, rd.serverVers, err = r.readServers(job, nil); return },
		func() (err error) { rd.instances, err = r.readInstances(job, nil); return },
		func() (err error) { rd.leader, err = r.readLeader(job); return },
		func() (err error) { rd.necessary, err = r.readExists(r.p.Necessary(job)); return },
		func() (err error) { rd.failover, err = r.readFailoverItems(job); return },
		func() (err error) { rd.triggered, err = r.readExists(r.p.Trigger(job, r.me.InstanceID)); return },
		func() (err error) {
			if rd.items, err = r.folderW(job, r.p.Sharding(job)); err == nil && first {
				rd.read, err = r.readItems(job, itemNumbers(rd.items))
			}
			return err
		},
	}
	err := parallel.For(len(reads), len(reads), func(i int) error { return reads[i]() })
	return rd, err
}
