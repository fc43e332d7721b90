package soak

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ejserver/ejserver/integration/soak/checker"
)

// runPlan carries out the plan from start, each action in a goroutine of its own (they overlap), and returns
// once every action has healed what it broke.
func (e *env) runPlan(ctx context.Context, plan []Action, start time.Time) {
	var wg sync.WaitGroup
	for _, a := range plan {
		wg.Go(func() {
			if sleepCtx(ctx, time.Until(start.Add(a.At))) != nil {
				return
			}
			e.do(ctx, a)
		})
	}
	wg.Wait()
}

// heal makes sure nothing is left broken: every peer running, every ZooKeeper node up, receivers answering.
func (e *env) heal() {
	for i, p := range e.peers {
		_ = p.Resume()
		for _, l := range e.proxies[i] {
			l.Heal() // closes the connections of a cut link only: healing a healthy one must not be a fault
		}
		if p.Exited() {
			e.restart(i)
		}
	}
	for _, j := range Mix {
		e.recv.setMode(j.Name, modeOK)
	}
}

func (e *env) instancesOf(peer int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.instances[peer])
}

func (e *env) allInstances() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ids := range e.instances {
		out = append(out, ids...)
	}
	return out
}

// restart starts a peer that exited again (a few tries: its port may linger).
func (e *env) restart(peer int) {
	p := e.peers[peer]
	for try := range 5 {
		err := p.Restart()
		if err == nil {
			break
		}
		e.logf("restart peer %d (try %d): %v", peer+1, try+1, err)
		time.Sleep(time.Second)
	}
	e.mu.Lock()
	e.instances[peer] = append(e.instances[peer], p.InstanceID())
	e.mu.Unlock()
}

func (e *env) record(f checker.Fault) {
	e.mu.Lock()
	e.faults = append(e.faults, f)
	e.mu.Unlock()
	e.event("fault", f.Kind+" "+f.Target, "from", f.From.UTC().Format(time.RFC3339Nano), "to", f.To.UTC().Format(time.RFC3339Nano),
		"instances", f.Instances)
}

func (e *env) jobWindow(job string, item int, w checker.Window) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := e.jobs[job]
	if item < 0 {
		j.Disabled = append(j.Disabled, w)
	} else {
		j.ItemDisabled[item] = append(j.ItemDisabled[item], w)
	}
}

// do carries out one action and records its fault window.
func (e *env) do(ctx context.Context, a Action) {
	from := time.Now()
	hold := func() { _ = sleepCtx(ctx, a.Hold) }
	f := checker.Fault{Kind: a.Kind, From: from, Excuses: true}
	e.event("action", a.String())
	switch a.Kind {
	case KillPeer:
		p := e.peers[a.Target]
		f.Target, f.Kills = fmt.Sprintf("peer%d", a.Target+1), true
		p.Kill()
		hold()
		e.restart(a.Target)
		f.Instances = e.instancesOf(a.Target)
	case FreezePeer:
		p := e.peers[a.Target]
		f.Target, f.Instances = fmt.Sprintf("peer%d", a.Target+1), e.instancesOf(a.Target)
		_ = p.Pause()
		hold()
		_ = p.Resume()
	case CutPeer:
		f.Target, f.Instances = fmt.Sprintf("peer%d", a.Target+1), e.instancesOf(a.Target)
		for _, l := range e.proxies[a.Target] {
			l.Cut()
		}
		hold()
		for _, l := range e.proxies[a.Target] {
			l.Heal()
		}
	case UpgradePeer:
		p := e.peers[a.Target]
		f.Target = fmt.Sprintf("peer%d", a.Target+1)
		_ = p.Stop(20 * time.Second)
		p.Config.Binary = e.bins[1]
		e.restart(a.Target)
		f.Instances = e.instancesOf(a.Target)
	case DisableServer:
		ip := fmt.Sprintf("127.0.0.%d", a.Target+1)
		f.Target, f.Instances = "server "+ip, e.instancesOf(a.Target)
		e.retry(a, "POST", "/api/v1/servers/"+ip+"/disable", nil) // ZooKeeper may be down: as an operator would, try again
		hold()
		e.retry(a, "POST", "/api/v1/servers/"+ip+"/enable", nil)
	case ZKNode:
		n := e.zk.Nodes[a.Target]
		f.Target, f.Instances = fmt.Sprintf("zk%d", a.Target+1), e.allInstances()
		n.Kill()
		hold()
		e.startZK(n.Start)
	case ZKQuorum:
		n1, n2 := e.zk.Nodes[a.Target], e.zk.Nodes[(a.Target+1)%3]
		f.Target, f.Instances = fmt.Sprintf("zk%d+zk%d", a.Target+1, (a.Target+1)%3+1), e.allInstances()
		n1.Stop()
		n2.Stop()
		hold()
		var wg sync.WaitGroup
		wg.Go(func() { e.startZK(n1.Start) })
		wg.Go(func() { e.startZK(n2.Start) })
		wg.Wait()
	case ReceiverHang, Receiver5xx, Receiver429, ReceiverSlow:
		job := Mix[a.Target].Name
		f.Target, f.Excuses = job, false
		mode := map[string]string{ReceiverHang: modeHang, Receiver5xx: mode5xx, Receiver429: mode429, ReceiverSlow: modeSlow}[a.Kind]
		e.recv.setMode(job, mode)
		hold()
		e.recv.setMode(job, modeOK)
	case DisableItem:
		job := Mix[a.Target].Name
		f.Target, f.Excuses = fmt.Sprintf("%s item %d", job, a.Arg), false
		path := fmt.Sprintf("/api/v1/jobs/%s/sharding/%d/", job, a.Arg)
		if err := e.api("POST", path+"disable", nil, nil); err != nil && !e.landedAnyway(a, err, job, a.Arg) {
			e.retry(a, "POST", path+"enable", nil) // a request still on its way to a peer lands on nothing
			return
		}
		hold()
		e.retry(a, "POST", path+"enable", nil)
		e.jobWindow(job, a.Arg, checker.Window{From: from, To: time.Now()})
	case DisableJob:
		job := Mix[a.Target].Name
		f.Target, f.Excuses = job, false
		if err := e.api("POST", "/api/v1/jobs/"+job+"/disable", nil, nil); err != nil && !e.landedAnyway(a, err, job, -1) {
			e.retry(a, "POST", "/api/v1/jobs/"+job+"/enable", nil)
			return
		}
		hold()
		e.retry(a, "POST", "/api/v1/jobs/"+job+"/enable", nil)
		e.jobWindow(job, -1, checker.Window{From: from, To: time.Now()})
	case Reshard:
		j := Mix[a.Target]
		f.Target = fmt.Sprintf("%s to %d items", j.Name, a.Arg)
		var cur map[string]any
		if err := e.api("GET", "/api/v1/jobs/"+j.Name, nil, &cur); err != nil {
			e.logf("%s: %v", a, err)
			return
		}
		body := j.body(e.recv.URL, a.Arg)
		if err := e.api("PUT", "/api/v1/jobs/"+j.Name, body, nil); err != nil {
			e.logf("%s: %v", a, err)
			return
		}
		e.mu.Lock()
		e.jobs[j.Name].Totals = append(e.jobs[j.Name].Totals, checker.Total{At: time.Now(), Total: a.Arg})
		e.mu.Unlock()
	case Trigger:
		job := Mix[a.Target].Name
		if err := e.api("POST", "/api/v1/jobs/"+job+"/trigger", map[string]any{}, nil); err != nil {
			e.logf("%s: %v", a, err)
		}
		e.event("trigger", job)
		return // not a fault
	}
	f.To = time.Now()
	e.record(f)
}

// startZK restarts a ZooKeeper node, a few tries.
func (e *env) startZK(start func() error) {
	for try := range 5 {
		if err := start(); err == nil {
			return
		} else {
			e.logf("restart ZooKeeper (try %d): %v", try+1, err)
		}
	}
}

// retry repeats an API call that heals (an enable) until a peer takes it, for up to a minute.
func (e *env) retry(a Action, method, path string, body any) {
	for deadline := time.Now().Add(time.Minute); ; {
		err := e.api(method, path, body, nil)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.logf("%s: gave up healing: %v", a, err)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// landedAnyway tells whether a disable the cluster refused (err) took effect all the same: a write whose
// answer was lost with the connection may have landed. The soak's model of what was disabled must be
// ZooKeeper's truth, not its intent, so it reads the state back (item < 0: the job's) from any peer that
// answers, for up to a minute, and records what it read in events.jsonl. When the state cannot be read,
// it is taken as disabled (the caller then holds, enables and records the window): an excuse too many
// hides less than a wrong accusation misleads. Either way the caller enables it afterwards, which undoes a
// request that was still on its way and lands later (seed 2027: a starting peer ran a disable from its
// listener's backlog 2.7 s after the soak's client had given up; peers now answer 503 while starting).
func (e *env) landedAnyway(a Action, err error, job string, item int) bool {
	e.logf("%s: %v", a, err)
	var disabled bool
	var rerr error
	for deadline := time.Now().Add(time.Minute); ; {
		disabled, rerr = e.readDisabled(job, item)
		if rerr == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	landed := disabled || rerr != nil
	kv := []any{"job", job, "item", item, "refused", err.Error(), "disabled", disabled, "landed", landed}
	if rerr != nil {
		kv = append(kv, "readErr", rerr.Error())
	}
	e.event("readback", a.String(), kv...)
	return landed
}

// readDisabled reads whether a job (item < 0) or one of its items is disabled.
func (e *env) readDisabled(job string, item int) (bool, error) {
	if item < 0 {
		var j struct {
			Disabled bool `json:"disabled"`
		}
		err := e.api("GET", "/api/v1/jobs/"+job, nil, &j)
		return j.Disabled, err
	}
	var list struct {
		Items []struct {
			Item     int  `json:"item"`
			Disabled bool `json:"disabled"`
		} `json:"items"`
	}
	if err := e.api("GET", "/api/v1/jobs/"+job+"/sharding", nil, &list); err != nil {
		return false, err
	}
	for _, it := range list.Items {
		if it.Item == item {
			return it.Disabled, nil
		}
	}
	return false, nil // not an item of the job (any more): nothing of it fires
}
