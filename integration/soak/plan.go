package soak

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Fault kinds: the nemesis menu.
const (
	KillPeer      = "kill-peer"      // kill -9, restart a few seconds later
	FreezePeer    = "freeze-peer"    // SIGSTOP past the session timeout, then SIGCONT
	CutPeer       = "cut-peer"       // the peer's ZooKeeper links black-holed past the session, then healed
	ZKNode        = "zk-node"        // one ZooKeeper node killed (quorum kept), restarted
	ZKQuorum      = "zk-quorum"      // two ZooKeeper nodes stopped past the session (quorum lost), restarted
	ReceiverHang  = "receiver-hang"  // a job's receiver answers long after the webhook timeout
	Receiver5xx   = "receiver-5xx"   // ... answers 503
	Receiver429   = "receiver-429"   // ... answers 429 with Retry-After
	ReceiverSlow  = "receiver-slow"  // ... answers after 1.5-2.5 s
	DisableServer = "disable-server" // a peer's server disabled, then enabled
	DisableItem   = "disable-item"   // one item of a job disabled, then enabled
	DisableJob    = "disable-job"    // a job disabled, then enabled
	Reshard       = "reshard"        // a job's shardingTotalCount changed
	UpgradePeer   = "upgrade-peer"   // a peer stopped and restarted on the newer build (rolling restart)
	Trigger       = "trigger"        // a manual trigger (not a fault: an event the checker must tell apart)
)

// Action is one planned nemesis step: at At after the start, Kind on Target (a peer, a ZooKeeper node or
// a job index), held for Hold; Arg is the kind's argument (an item, a new total).
type Action struct {
	At     time.Duration
	Kind   string
	Target int
	Hold   time.Duration
	Arg    int
}

func (a Action) String() string {
	return fmt.Sprintf("+%s %s target=%d hold=%s arg=%d", a.At.Round(time.Millisecond), a.Kind, a.Target, a.Hold.Round(time.Millisecond), a.Arg)
}

// PlanConfig is what a plan is made for.
type PlanConfig struct {
	Seed           uint64
	Duration       time.Duration // faults start within it
	Peers          int
	Jobs           []JobSpec
	SessionTimeout time.Duration
	// MeanGap is the mean time between two actions' starts (default 4 s): holds are longer, so faults overlap.
	MeanGap time.Duration
}

type weighted struct {
	kind string
	w    int
}

var menu = []weighted{
	{KillPeer, 4}, {FreezePeer, 3}, {CutPeer, 3}, {ZKNode, 2}, {ZKQuorum, 1},
	{ReceiverHang, 2}, {Receiver5xx, 2}, {Receiver429, 2}, {ReceiverSlow, 2},
	{DisableServer, 2}, {DisableItem, 2}, {DisableJob, 1}, {Reshard, 2}, {UpgradePeer, 1}, {Trigger, 4},
}

// Plan draws the fault schedule of a seed: the same seed, the same schedule. It keeps the run meaningful
// without narrowing the menu: at most half the peers are faulted at once, a resource (a peer, the ZooKeeper
// ensemble, a job's receiver, a job) has one fault at a time, and a ZooKeeper fault never overlaps another.
func Plan(cfg PlanConfig) []Action {
	if cfg.MeanGap <= 0 {
		cfg.MeanGap = 4 * time.Second
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed))
	total := 0
	for _, m := range menu {
		total += m.w
	}
	busy := map[string]time.Duration{} // resource -> busy until
	free := func(res string, at time.Duration) bool { return busy[res] <= at }
	secs := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
	}
	session := cfg.SessionTimeout
	var out []Action
	for at := secs(2, 5); at < cfg.Duration; at += time.Duration(rng.ExpFloat64() * float64(cfg.MeanGap)) {
		pick := rng.IntN(total)
		kind := ""
		for _, m := range menu {
			if pick < m.w {
				kind = m.kind
				break
			}
			pick -= m.w
		}
		a := Action{At: at, Kind: kind}
		faulted := 0
		for p := range cfg.Peers {
			if !free(fmt.Sprint("peer", p), at) {
				faulted++
			}
		}
		switch kind {
		case KillPeer, FreezePeer, CutPeer, UpgradePeer, DisableServer:
			if faulted >= cfg.Peers/2 {
				continue
			}
			a.Target = rng.IntN(cfg.Peers)
			res := fmt.Sprint("peer", a.Target)
			if !free(res, at) {
				continue
			}
			switch kind {
			case KillPeer:
				a.Hold = secs(1, 6)
			case FreezePeer, CutPeer:
				a.Hold = session + secs(1, 5)
			case UpgradePeer:
				a.Hold = 0
			case DisableServer:
				a.Hold = secs(5, 15)
			}
			busy[res] = at + a.Hold + 15*time.Second // its restart and re-registration
		case ZKNode, ZKQuorum:
			if !free("zk", at) {
				continue
			}
			a.Target = rng.IntN(3)
			if kind == ZKNode {
				a.Hold = secs(3, 12)
			} else {
				a.Hold = session + secs(2, 6)
			}
			busy["zk"] = at + a.Hold + 20*time.Second
		case ReceiverHang, Receiver5xx, Receiver429, ReceiverSlow, DisableItem, DisableJob, Reshard, Trigger:
			a.Target = rng.IntN(len(cfg.Jobs))
			j := cfg.Jobs[a.Target]
			res := "job" + j.Name
			if kind == Trigger {
				out = append(out, a)
				continue
			}
			if !free(res, at) || (kind == Reshard && j.Async) {
				continue
			}
			a.Hold = secs(4, 15)
			switch kind {
			case DisableItem:
				a.Arg = rng.IntN(j.MinTotal)
			case Reshard:
				a.Hold = 0
				a.Arg = j.MinTotal + rng.IntN(j.MaxTotal-j.MinTotal+1)
			}
			busy[res] = at + a.Hold + 5*time.Second
		}
		out = append(out, a)
	}
	return out
}
