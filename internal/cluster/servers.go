package cluster

import (
	"errors"
	"maps"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// The servers/{ip} nodes of a job: their states (ENABLED, DISABLED) and, for the audit trail, their versions.

// readServers lists servers/ with a watch and reads (and watches) each server node not in known. It returns
// the versions of the nodes it read (not of the known ones).
func (r *Registry) readServers(job string, known map[string]string) (map[string]string, map[string]nodeVersion, error) {
	var mu sync.Mutex
	vers := map[string]nodeVersion{}
	cur, err := r.readChildren(job, r.p.Servers(job), known, func(ip string) (string, error) {
		data, st, err := r.s.getW(r.p.Server(job, ip))
		if err == nil {
			mu.Lock()
			vers[ip] = nodeVersion{czxid: st.Czxid, version: st.Version}
			mu.Unlock()
		}
		return strings.TrimSpace(string(data)), err
	})
	return cur, vers, err
}

func (r *Registry) refreshServers(e *jobEntry) error {
	e.mu.Lock()
	known := e.st.servers
	e.mu.Unlock()
	cur, vers, err := r.readServers(e.name, known)
	if err != nil {
		return err
	}
	r.applyServers(e, cur, vers)
	return nil
}

func (r *Registry) refreshServer(e *jobEntry, ip string) error {
	data, st, err := r.s.getW(r.p.Server(e.name, ip))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	r.applyServer(e, ip, data, st, err == nil)
	return nil
}

// applyServer applies a read of a job's servers/{ip}: its data and stat, or not present.
func (r *Registry) applyServer(e *jobEntry, ip string, data []byte, st *zk.Stat, present bool) {
	e.mu.Lock()
	cur := maps.Clone(e.st.servers)
	e.mu.Unlock()
	if cur == nil {
		cur = map[string]string{}
	}
	vers := map[string]nodeVersion{}
	if present {
		cur[ip] = strings.TrimSpace(string(data))
		vers[ip] = nodeVersion{czxid: st.Czxid, version: st.Version}
	} else {
		delete(cur, ip)
	}
	r.applyServers(e, cur, vers)
}

// applyServers takes the servers/ states read (cur, all of them) and the versions of the nodes read (vers):
// an event for each node whose state changed, or whose version moved on with the same state (changes
// this peer's one-shot watch did not show one by one).
func (r *Registry) applyServers(e *jobEntry, cur map[string]string, vers map[string]nodeVersion) {
	e.mu.Lock()
	prev, prevVers := e.st.servers, e.st.serverVers
	moved := false
	for ip, v := range vers {
		if pv, ok := prevVers.get(ip); ok && pv != v {
			moved = true
		}
	}
	if maps.Equal(prev, cur) && !moved {
		e.mu.Unlock()
		return
	}
	e.st.servers = r.shared.intern(cur)
	e.st.serverVers = nextServerVersions(e.st.servers, vers, prevVers)
	e.changedLocked()
	leader := e.st.leader
	e.mu.Unlock()
	var evs []Event
	for ip, v := range cur {
		nv, read := vers[ip]
		pv, known := prevVers.get(ip)
		if ps, ok := prev[ip]; !ok || ps != v || read && known && nv != pv {
			ev := Event{Kind: ServersChanged, Job: e.name, IP: ip, PrevState: ps, State: v, PrevVersion: -1, Version: -1}
			if read {
				ev.Version, ev.Czxid = nv.version, nv.czxid
				if known && pv.czxid == nv.czxid {
					ev.PrevVersion = pv.version
				}
			}
			evs = append(evs, ev)
		}
	}
	for ip, pv := range prev {
		if _, ok := cur[ip]; !ok {
			evs = append(evs, Event{Kind: ServersChanged, Job: e.name, IP: ip, PrevState: pv})
		}
	}
	myIP := r.me.ServerIP
	if prev[myIP] != cur[myIP] {
		if cur[myIP] == ServerDisabled {
			if leader == r.me.InstanceID {
				r.abdicate(e.name) // a leader whose server is disabled steps down
			}
		} else {
			r.w.kick(refreshKey{kind: kindCampaign, job: e.name})
		}
	}
	r.emit(evs)
}
