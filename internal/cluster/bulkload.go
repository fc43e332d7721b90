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
	// apiMark is the czxid of the API's creation mark (Paths.SeenCreate), read with a first load: equal to
	// the config's, the job was created through the API (0: absent, or not read)
	apiMark int64
}

// readJobBulk reads a job in two multiRead requests. It reports false, having read nothing usable, when the
// bulk path does not apply: no recursive watch covers the job, the server does not speak multiRead, or the
// config or a folder is missing.
func (r *Registry) readJobBulk(job string, first bool) (jobRead, bool, error) {
	if r.noMultiRead.Load() || !r.s.isCovered(r.p.Config(job)) {
		return jobRead{}, false, nil
	}
	const (
		cfg = iota
		servers
		instances
		leader
		necessary
		failoverItems
		trigger
		sharding
		mark
	)
	fixed := []zk.ReadOp{
		cfg:           {Path: r.p.Config(job)},
		servers:       {Path: r.p.Servers(job), Children: true},
		instances:     {Path: r.p.Instances(job), Children: true},
		leader:        {Path: r.p.LeaderInstance(job)},
		necessary:     {Path: r.p.Necessary(job)},
		failoverItems: {Path: r.p.FailoverItems(job), Children: true},
		trigger:       {Path: r.p.Trigger(job, r.me.InstanceID)},
		sharding:      {Path: r.p.Sharding(job), Children: true},
	}
	if first {
		// the API's creation mark: a job it created is no change made outside it, and the external-change
		// watch need not look it up (one exists per job and peer, queued behind a registration's thousands)
		fixed = append(fixed, zk.ReadOp{Path: r.p.SeenCreate(job)})
	}
	res, err := r.s.multiRead(fixed)
	if errors.Is(err, zk.ErrUnimplemented) {
		if !r.noMultiRead.Swap(true) {
			r.log.Warn("ZooKeeper does not speak multiRead (3.6+): reading every job's nodes one by one")
		}
		return jobRead{}, false, nil
	}
	if err != nil {
		return jobRead{}, false, err
	}
	for _, x := range res {
		if x.Err != nil && !errors.Is(x.Err, zk.ErrNoNode) {
			return jobRead{}, false, x.Err
		}
	}
	for _, i := range []int{cfg, servers, instances, failoverItems, sharding} {
		if res[i].Err != nil {
			return jobRead{}, false, nil
		}
	}
	rd := jobRead{
		data: res[cfg].Data, st: res[cfg].Stat,
		necessary: res[necessary].Err == nil, triggered: res[trigger].Err == nil,
		failover: itemNumbers(res[failoverItems].Children), items: res[sharding].Children,
	}
	if res[leader].Err == nil {
		rd.leader = leaderOf(res[leader].Data, res[leader].Stat)
	}
	if first && res[mark].Err == nil {
		rd.apiMark = res[mark].Stat.Czxid
	}

	// the children: each server's state, the instances of processes that are not live ejserver peers (a
	// peer's IP is in its peer node), and on a first load each item's nodes
	var ops []zk.ReadOp
	var apply []func(zk.ReadResult)
	rd.servers, rd.serverVers = map[string]string{}, map[string]nodeVersion{}
	for _, ip := range res[servers].Children {
		ops = append(ops, zk.ReadOp{Path: r.p.Server(job, ip)})
		apply = append(apply, func(x zk.ReadResult) {
			if x.Err == nil { // a server gone meanwhile is left out: the watch tells us again
				rd.servers[ip] = strings.TrimSpace(string(x.Data))
				rd.serverVers[ip] = nodeVersion{czxid: x.Stat.Czxid, version: x.Stat.Version}
			}
		})
	}
	rd.instances = map[string]string{}
	for _, id := range res[instances].Children {
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
			ops = append(ops, zk.ReadOp{Path: r.p.ItemNode(job, i, NodeInstance)},
				zk.ReadOp{Path: r.p.ItemNode(job, i, NodeDisabled)}, zk.ReadOp{Path: r.p.ItemNode(job, i, NodeFailover)})
			apply = append(apply,
				func(x zk.ReadResult) {
					if x.Err == nil {
						it.Owner, it.OwnerVersion = strings.TrimSpace(string(x.Data)), x.Stat.Version
					}
				},
				func(x zk.ReadResult) { it.Disabled = x.Err == nil },
				func(x zk.ReadResult) {
					if x.Err == nil {
						it.FailoverTo = strings.TrimSpace(string(x.Data))
					}
				})
		}
	}
	results := make([][]zk.ReadResult, (len(ops)+bulkChunk-1)/bulkChunk)
	err = parallel.For(len(results), len(results), func(c int) error {
		chunk := ops[c*bulkChunk : min(len(ops), (c+1)*bulkChunk)]
		out, err := r.s.multiRead(chunk)
		for _, x := range out {
			if x.Err != nil && !errors.Is(x.Err, zk.ErrNoNode) {
				return x.Err
			}
		}
		results[c] = out
		return err
	})
	if err != nil {
		return jobRead{}, false, err
	}
	k := 0
	for _, out := range results {
		for _, x := range out {
			apply[k](x)
			k++
		}
	}
	return rd, true, nil
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
