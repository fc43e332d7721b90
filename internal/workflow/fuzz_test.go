package workflow

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomDAG builds a valid random DAG: node i may wait only for nodes before it.
func randomDAG(rng *rand.Rand, size int) Workflow {
	w := Workflow{Name: "fuzz"}
	ons := []On{OnSuccess, OnSuccess, OnFailure, OnAlways}
	for i := range size {
		nd := Node{Name: fmt.Sprintf("n%d", i), Job: "j"}
		if i > 0 {
			seen := map[int]bool{}
			for range rng.IntN(3) {
				p := rng.IntN(i)
				if !seen[p] {
					seen[p] = true
					nd.After = append(nd.After, Edge{Node: fmt.Sprintf("n%d", p), On: ons[rng.IntN(len(ons))]})
				}
			}
		}
		w.Nodes = append(w.Nodes, nd)
	}
	w.Normalize()
	return w
}

// FuzzRun drives random DAGs with random outcomes, cancels and retries: no node fires before every parent
// ended, a node fires at most once per run attempt, and a run that is not cancelled ends with every node ended.
func FuzzRun(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(0))
	f.Add(uint64(7), uint8(40), uint8(3))
	f.Add(uint64(42), uint8(200), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, size, retries uint8) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		w := randomDAG(rng, 1+int(size)%120)
		r := NewRun(w, "r", TriggerManual, t0, t0, nil)
		fires := map[string]int{} // "node/attempt" -> fires
		running := map[string]string{}
		apply := func(e Event) {
			next, effects, err := Apply(r, e, t0)
			if err != nil {
				t.Fatalf("Apply(%+v): %v", e, err)
			}
			for _, ef := range effects {
				if ef.Kind != EffectFire {
					continue
				}
				nr, _ := next.Node(ef.Node)
				key := fmt.Sprintf("%s/%d", ef.Node, nr.Attempt)
				if fires[key]++; fires[key] > 1 {
					t.Fatalf("node %s fired twice in attempt %d", ef.Node, nr.Attempt)
				}
				for _, edge := range nr.After {
					if p, _ := next.Node(edge.Node); !p.State.Ended() {
						t.Fatalf("node %s fired before its parent %s ended (%s)", ef.Node, edge.Node, p.State)
					}
				}
				fire := key
				next.SetFire(ef.Node, fire)
				running[ef.Node] = fire
			}
			r = next
		}
		apply(Event{Kind: EventStart})
		left := int(retries) % 4
		for steps := 0; steps < 10000; steps++ {
			if len(running) == 0 {
				if r.State == RunRunning {
					t.Fatalf("run RUNNING with no node running: %+v", states(r))
				}
				if left > 0 && (r.State == RunFailed || r.State == RunCancelled) {
					left--
					apply(Event{Kind: EventRetryFailed})
					continue
				}
				break
			}
			// end a random running node (maps iterate in random order; pick deterministically by seed)
			var names []string
			for nm := range running {
				names = append(names, nm)
			}
			nm := names[rng.IntN(len(names))]
			fire := running[nm]
			delete(running, nm)
			if rng.IntN(50) == 0 {
				apply(Event{Kind: EventCancel})
				clear(running)
				continue
			}
			apply(Event{Kind: EventNodeEnded, Node: nm, Fire: fire, Succeeded: rng.IntN(4) > 0})
			if rng.IntN(10) == 0 { // the same end again (a report read twice) changes nothing
				before := r
				apply(Event{Kind: EventNodeEnded, Node: nm, Fire: fire, Succeeded: true})
				if before.State != r.State {
					t.Fatalf("a repeated end changed the run")
				}
			}
		}
		if !r.State.Ended() {
			t.Fatalf("run still %s", r.State)
		}
		for _, nr := range r.Nodes {
			if !nr.State.Ended() {
				t.Fatalf("node %s still %s in a %s run", nr.Name, nr.State, r.State)
			}
		}
	})
}

// FuzzValidate: Validate never panics, and a workflow it accepts has a topological order.
func FuzzValidate(f *testing.F) {
	f.Add(uint64(3), uint8(10), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, size, back uint8) {
		rng := rand.New(rand.NewPCG(seed, 1))
		w := randomDAG(rng, 1+int(size)%60)
		for range int(back) % 3 { // maybe add edges going forward: cycles
			i, j := rng.IntN(len(w.Nodes)), rng.IntN(len(w.Nodes))
			w.Nodes[i].After = append(w.Nodes[i].After, Edge{Node: w.Nodes[j].Name, On: OnAlways})
		}
		if err := Validate(w, nil); err == nil {
			if _, cyc := topoOrder(w.Nodes); cyc >= 0 {
				t.Fatalf("Validate accepted a cycle through %s", w.Nodes[cyc].Name)
			}
		}
	})
}
