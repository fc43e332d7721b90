package cluster

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/ratelog"
)

// Who accounted for a version, as written in its seen node.
const (
	seenByAPI       = "api"
	seenByZooKeeper = "zookeeper"
)

// seenKeep is how many versions of a node keep their seen nodes: a peer whose cache lags further behind
// counts the older ones as not seen.
const seenKeep = 16

// maxVersionGap bounds the versions between two seen ones that a peer looks up.
const maxVersionGap = 64

// ExternalChange is a change made in ZooKeeper outside ejserver's API (zkCli, another tool), noticed by
// this peer's watches and claimed by it for the cluster: no other peer reports the same version.
type ExternalChange struct {
	Job string
	// Created and Deleted: the job was created (After is its config) or deleted (Before is its config as
	// last loaded) outside the API.
	Created, Deleted bool
	// Server is set for a change of a job's servers/{ip} node (PrevState and State are its data, as this
	// peer saw them); otherwise the change is of the job's config (Before and After).
	Server           string
	PrevState, State string
	Before, After    ejserver.JobConfig
	// FromVersion and ToVersion are the node's (config, or servers/{ip}) versions this peer saw before and
	// after: ToVersion minus FromVersion changes in all. Of those, ThroughAPI were made through the API (and
	// recorded by it), OtherPeer were reported by another peer, and Unseen by nobody (watches are one-shot:
	// two quick edits can give one event).
	FromVersion, ToVersion        int32
	ThroughAPI, OtherPeer, Unseen int
}

// Changes is the number of changes between FromVersion and ToVersion.
func (c ExternalChange) Changes() int {
	if c.Created || c.Deleted {
		return 1
	}
	return int(c.ToVersion - c.FromVersion)
}

// ExternalWatchConfig configures an ExternalWatch.
type ExternalWatchConfig struct {
	Registry *Registry
	// OnChange is called, from the watch's own goroutine, with each change this peer claimed.
	OnChange func(ExternalChange)
	Logger   *slog.Logger
}

// ExternalWatch reports the changes made in ZooKeeper outside the API, once for the cluster: it takes the
// registry's config and server events (the watches the peer holds anyway), claims each new version by
// creating its seen node, and reports the versions it claimed.
type ExternalWatch struct {
	cfg ExternalWatchConfig

	mu     sync.Mutex
	queue  []Event
	signal chan struct{}
	on     bool
	full   *ratelog.Warning // an event dropped: once per 10 s at most (a registration of thousands of jobs)

	// taken counts the events taken from the queue to be checked (each costs a request or more)
	taken atomic.Int64

	runMu sync.Mutex
	stop  chan struct{}
	done  chan struct{}
}

// maxQueued bounds the events waiting; beyond it events are dropped (and logged).
const maxQueued = 10_000

// NewExternalWatch returns an ExternalWatch; Start it.
func NewExternalWatch(cfg ExternalWatchConfig) *ExternalWatch {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w := &ExternalWatch{cfg: cfg, signal: make(chan struct{}, 1),
		full: ratelog.New(cfg.Logger, nil, 10*time.Second, "external change dropped: too many waiting")}
	cfg.Registry.OnEvent(w.onEvent)
	return w
}

// interesting reports whether an event may be a change made outside the API.
func interesting(ev Event) bool {
	switch ev.Kind {
	case JobUpdated:
		return ev.Config != nil && ev.PrevConfig != nil && ev.Version > ev.PrevVersion
	case JobAdded:
		return ev.Created && ev.Config != nil && ev.Czxid != 0 && !ev.ThroughAPI
	case JobRemoved:
		return ev.PrevConfig != nil && ev.Czxid != 0
	case ServersChanged:
		// a state that changed, or a version that moved on (changes this peer's watch did not show one by one)
		return ev.State != "" && ((ev.PrevState == ServerDisabled) != (ev.State == ServerDisabled) ||
			ev.PrevVersion >= 0 && ev.Version > ev.PrevVersion)
	}
	return false
}

func (w *ExternalWatch) onEvent(ev Event) {
	if !interesting(ev) {
		return
	}
	w.mu.Lock()
	if !w.on {
		w.mu.Unlock()
		return
	}
	if len(w.queue) >= maxQueued {
		w.mu.Unlock()
		w.full.Warn("job", ev.Job)
		return
	}
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// Start starts taking events; Stop ends it.
func (w *ExternalWatch) Start(context.Context) error {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	if w.done != nil {
		return nil
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	w.mu.Lock()
	w.on = true
	w.mu.Unlock()
	go w.run(w.stop, w.done)
	return nil
}

// Stop stops the watch and returns once its goroutine has exited; safe twice and before Start.
func (w *ExternalWatch) Stop() {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	if w.done == nil {
		return
	}
	w.mu.Lock()
	w.on, w.queue = false, nil
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.stop, w.done = nil, nil
}

func (w *ExternalWatch) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-w.signal:
		}
		for {
			w.mu.Lock()
			if len(w.queue) == 0 || !w.on {
				w.mu.Unlock()
				break
			}
			ev := w.queue[0]
			w.queue = w.queue[1:]
			w.mu.Unlock()
			w.taken.Add(1)
			if err := w.handle(ev); err != nil {
				w.cfg.Logger.Warn("external change not checked", "job", ev.Job, "err", err)
			}
		}
	}
}

func (w *ExternalWatch) handle(ev Event) error {
	r := w.cfg.Registry
	me := seenByZooKeeper + " " + r.me.InstanceID
	switch ev.Kind {
	case JobUpdated:
		ok, err := r.claimSeen(r.p.SeenConfig(ev.Job, ev.Czxid, ev.Version), me)
		if err != nil || !ok {
			return err
		}
		r.forgetSeen(r.p.SeenConfig(ev.Job, ev.Czxid, ev.Version-seenKeep))
		ch := ExternalChange{Job: ev.Job, Before: *ev.PrevConfig, After: *ev.Config, FromVersion: ev.PrevVersion,
			ToVersion: ev.Version}
		if err := r.countBetween(&ch, func(v int32) string { return r.p.SeenConfig(ev.Job, ev.Czxid, v) }); err != nil {
			return err
		}
		w.cfg.OnChange(ch)
	case JobAdded:
		// the API marks its creations in the creating transaction: the mark shares the config's czxid (a
		// bulk load reads it, Event.ThroughAPI: such a job is not queued; here the load did not read it)
		ok, st, err := r.s.exists(r.p.SeenCreate(ev.Job))
		if err != nil || ok && st.Czxid == ev.Czxid {
			return err
		}
		if ok, err := r.claimSeen(r.p.SeenCreated(ev.Job, ev.Czxid), me); err != nil || !ok {
			return err
		}
		w.cfg.OnChange(ExternalChange{Job: ev.Job, Created: true, After: *ev.Config})
	case JobRemoved:
		if ok, err := r.claimSeen(r.p.SeenDelete(ev.Job, ev.Czxid), me); err != nil || !ok {
			return err
		}
		w.cfg.OnChange(ExternalChange{Job: ev.Job, Deleted: true, Before: *ev.PrevConfig})
	case ServersChanged:
		if ev.Version <= 0 {
			return nil // a new node: a peer registering, not a change of state
		}
		ok, err := r.claimSeen(r.p.SeenServer(ev.Job, ev.IP, ev.Czxid, ev.Version), me)
		if err != nil || !ok {
			return err
		}
		r.forgetSeen(r.p.SeenServer(ev.Job, ev.IP, ev.Czxid, ev.Version-seenKeep))
		ch := ExternalChange{Job: ev.Job, Server: ev.IP, PrevState: ev.PrevState, State: ev.State,
			FromVersion: ev.PrevVersion, ToVersion: ev.Version}
		if ev.PrevVersion < 0 {
			ch.FromVersion = ev.Version - 1 // not read before by this peer: one change, as far as it knows
		}
		if err := r.countBetween(&ch, func(v int32) string { return r.p.SeenServer(ev.Job, ev.IP, ev.Czxid, v) }); err != nil {
			return err
		}
		w.cfg.OnChange(ch)
	}
	return nil
}

// countBetween counts the versions between ch's FromVersion and ToVersion (both excluded) by who accounted
// for them: the API, another peer, or nobody (missed: watches are one-shot).
func (r *Registry) countBetween(ch *ExternalChange, seen func(v int32) string) error {
	for v := max(ch.FromVersion+1, ch.ToVersion-maxVersionGap); v < ch.ToVersion; v++ {
		by, err := r.seenBy(seen(v))
		switch {
		case err != nil:
			return err
		case by == seenByAPI:
			ch.ThroughAPI++
		case by != "":
			ch.OtherPeer++
		default:
			ch.Unseen++
		}
	}
	ch.Unseen += int(max(0, ch.ToVersion-maxVersionGap-(ch.FromVersion+1)))
	return nil
}

// claimSeen creates a seen node: true if this call created it, false if it existed (someone accounted for
// that version already).
func (r *Registry) claimSeen(pth, by string) (bool, error) {
	for attempt := 0; ; attempt++ {
		err := r.s.create(pth, []byte(by), 0)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNodeExists):
			return false, nil
		case errors.Is(err, zk.ErrNoNode) && attempt == 0:
			if err := r.s.ensurePath(parent(pth)); err != nil {
				return false, err
			}
		default:
			return false, err
		}
	}
}

// seenBy returns who accounted for a version ("" when nobody did).
func (r *Registry) seenBy(pth string) (string, error) {
	data, _, err := r.s.get(pth)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	by, _, _ := strings.Cut(string(data), " ")
	return by, nil
}

// forgetSeen deletes an old seen node, if it is there.
func (r *Registry) forgetSeen(pth string) {
	if strings.Contains(pth, "@-") {
		return // a negative version: nothing that old
	}
	_ = r.s.del(pth, -1)
}

// setWithSeen writes a node the API changes at version (-1: any) and, in the same transaction, marks the
// version the write produces as accounted for by the API, so that no peer reports it as a change made
// outside the API. It returns the node's new stat.
func (r *Registry) setWithSeen(pth string, data []byte, version int32, seen func(czxid int64, v int32) string) (*zk.Stat, error) {
	ok, st, err := r.s.exists(pth)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, zk.ErrNoNode
	}
	if version >= 0 && st.Version != version {
		return nil, zk.ErrBadVersion
	}
	mark := seen(st.Czxid, st.Version+1)
	if err := r.s.ensurePath(parent(mark)); err != nil {
		return nil, err
	}
	_, err = r.s.multi(opSet(pth, data, st.Version), r.s.opCreate(mark, []byte(seenByAPI), 0))
	if errors.Is(err, zk.ErrNodeExists) {
		return r.s.set(pth, data, version) // a seen node left over: write without it
	}
	if errors.Is(err, zk.ErrBadVersion) && version < 0 {
		return r.setWithSeen(pth, data, version, seen) // changed in between: read again
	}
	if err != nil {
		return nil, err
	}
	r.forgetSeen(seen(st.Czxid, st.Version+1-seenKeep))
	return &zk.Stat{Czxid: st.Czxid, Version: st.Version + 1}, nil
}
