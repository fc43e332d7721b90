package soak

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestPlanIsTheSeedsAndKeepsItsRules(t *testing.T) {
	cfg := PlanConfig{Seed: 7, Duration: 30 * time.Minute, Peers: 4, Jobs: Mix, SessionTimeout: 4 * time.Second}
	a, b := Plan(cfg), Plan(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed, two plans")
	}
	cfg.Seed = 8
	if reflect.DeepEqual(a, Plan(cfg)) {
		t.Fatal("two seeds, one plan")
	}
	kinds := map[string]int{}
	type span struct{ from, to time.Duration }
	var zk []span
	for _, x := range a {
		kinds[x.Kind]++
		if x.At < 0 || x.At >= 30*time.Minute {
			t.Fatalf("action outside the run: %s", x)
		}
		if x.Kind == ZKNode || x.Kind == ZKQuorum {
			for _, s := range zk {
				if x.At < s.to {
					t.Fatalf("ZooKeeper faults overlap: %s", x)
				}
			}
			zk = append(zk, span{x.At, x.At + x.Hold})
		}
		if x.Kind == FreezePeer || x.Kind == CutPeer || x.Kind == ZKQuorum {
			if x.Hold <= cfg.SessionTimeout {
				t.Fatalf("%s does not outlast the session", x)
			}
		}
	}
	for _, m := range menu {
		if kinds[m.kind] == 0 {
			t.Fatalf("30 minutes without a %s: %v", m.kind, kinds)
		}
	}
	// at most half of the peers under a peer fault at any moment
	for _, x := range a {
		n := 0
		for _, y := range a {
			switch y.Kind {
			case KillPeer, FreezePeer, CutPeer, UpgradePeer, DisableServer:
				if y.At <= x.At && x.At < y.At+y.Hold {
					n++
				}
			}
		}
		if n > cfg.Peers/2 {
			t.Fatalf("%d peers faulted at %s", n, x.At)
		}
	}
	t.Log(fmt.Sprint(kinds))
}
