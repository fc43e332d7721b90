package sharding

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ejserver/ejserver"
)

func TestFirstOwners(t *testing.T) {
	peers := []Instance{{"c@-@3", "10.0.0.3"}, {"a@-@1", "10.0.0.1"}, {"b@-@2", "10.0.0.2"}}
	cfg := func(total int, strategy string) ejserver.JobConfig {
		c := ejserver.DefaultJobConfig()
		c.JobName, c.ShardingTotalCount, c.JobShardingStrategyType = "settle", total, strategy
		return c
	}
	tests := []struct {
		name  string
		peers []Instance
		cfg   ejserver.JobConfig
		want  []string
	}{
		{"average over the peers in IP order", peers, cfg(4, ejserver.StrategyAverage), []string{"a@-@1", "b@-@2", "c@-@3", "a@-@1"}},
		{"one item", peers, cfg(1, ejserver.StrategyAverage), []string{"a@-@1"}},
		{"one peer", peers[:1], cfg(3, ""), []string{"c@-@3", "c@-@3", "c@-@3"}},
		{"no peer: the leader shards it", nil, cfg(2, ""), nil},
		{"unknown strategy", peers, cfg(2, "NOPE"), nil},
		{"too many items for the creating transaction", peers, cfg(MaxFirstItems+1, ""), nil},
		{"as many items as allowed", peers[:1], cfg(MaxFirstItems, ""), slices.Repeat([]string{"c@-@3"}, MaxFirstItems)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.peers)
			got := FirstOwners(in, tt.cfg)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("FirstOwners = %v, want %v", got, tt.want)
			}
			if !slices.Equal(in, tt.peers) {
				t.Fatal("FirstOwners reordered its input")
			}
		})
	}
	// the same as the leader's resharding would write for the same instances
	c := cfg(7, ejserver.StrategyRoundRobin)
	list := slices.Clone(peers)
	Sort(list)
	if got, want := FirstOwners(peers, c), Owners(RoundRobin(list, c.JobName, 7), 7); !slices.Equal(got, want) {
		t.Fatalf("FirstOwners %v, the resharding's %v", got, want)
	}
}

func TestAssess(t *testing.T) {
	a, b, c := Instance{"a@-@1", "10.0.0.1"}, Instance{"b@-@2", "10.0.0.2"}, Instance{"c@-@3", "10.0.0.3"}
	over := func(total int, in ...Instance) []string { return assign(Average, in, "j", total) }
	tests := []struct {
		name      string
		owners    []string
		available []Instance
		coming    []Instance
		want      Verdict
	}{
		{"what the strategy gives", over(4, a, b, c), []Instance{c, a, b}, nil, Keep},
		{"peers still registering on a job sharded at its creation", over(4, a, b, c), []Instance{a}, []Instance{b, c}, Coming},
		{"one still registering", over(4, a, b, c), []Instance{a, b}, []Instance{c}, Coming},
		{"registered and also listed as coming", over(4, a, b, c), []Instance{a, b, c}, []Instance{c}, Keep},
		{"an owner left (not a live peer)", over(4, a, b, c), []Instance{a, b}, nil, Reshard},
		{"a peer joined", over(4, a, b), []Instance{a, b, c}, nil, Rebalance},
		{"a peer joined, an owner left", over(4, a, b), []Instance{a, c}, nil, Reshard},
		{"an owner's server disabled (not available)", over(4, a, b), []Instance{a}, []Instance{c}, Reshard},
		{"a live peer that is not an owner is coming", over(4, a, b), []Instance{a, b}, []Instance{c}, Keep},
		{"an item without an owner", []string{"a@-@1", ""}, []Instance{a}, nil, Reshard},
		{"not sharded at all", make([]string, 3), []Instance{a}, nil, Reshard},
		{"no item", nil, []Instance{a}, nil, Reshard},
		{"balanced otherwise than the strategy", []string{"b@-@2", "a@-@1"}, []Instance{a, b}, nil, Rebalance},
		{"all on one instance, another available", over(2, a), []Instance{a, c}, nil, Rebalance},
		{"no available instance", over(2, a), nil, nil, Reshard},
		{"only coming instances", over(2, a), nil, []Instance{a}, Coming},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Assess(Assessment{Job: "j", Owners: tt.owners, Strategy: Average, Available: tt.available, Coming: tt.coming})
			if got != tt.want {
				t.Fatalf("Assess = %s, want %s", got, tt.want)
			}
		})
	}
	if Assess(Assessment{Job: "j", Owners: over(2, a), Available: []Instance{a}}) != Reshard {
		t.Fatal("no strategy: want reshard")
	}
}

// FuzzAssess: what a strategy gives a set of instances is kept by a leader that sees those instances (whatever
// their order, and whichever of them are still registering); adding an instance that gets an item, or removing
// one that has one, is resharded.
func FuzzAssess(f *testing.F) {
	f.Add(uint8(3), uint8(4), uint8(1), "settle", uint8(0))
	f.Add(uint8(1), uint8(1), uint8(0), "j", uint8(2))
	f.Add(uint8(5), uint8(2), uint8(4), "x", uint8(1))
	f.Fuzz(func(t *testing.T, n, total, registered uint8, job string, which uint8) {
		if n == 0 || n > 20 || total == 0 || total > 200 {
			return
		}
		strategy := []Strategy{Average, Odevity, RoundRobin}[which%3]
		var in []Instance
		for k := range int(n) {
			in = append(in, Instance{ID: fmt.Sprintf("i%d@-@%d", k, k), ServerIP: fmt.Sprintf("10.0.%d.%d", k%3, k)})
		}
		owners := assign(strategy, in, job, int(total))
		for i, o := range owners {
			if o == "" {
				t.Fatalf("item %d has no owner", i)
			}
		}
		reg := 1 + int(registered)%int(n)
		rev := slices.Clone(in)
		slices.Reverse(rev)
		want := Keep // what the registered ones alone would get may already be the same (one item, say)
		if reg < int(n) && !slices.Equal(assign(strategy, rev[:reg], job, int(total)), owners) {
			want = Coming
		}
		if got := Assess(Assessment{Job: job, Owners: owners, Strategy: strategy, Available: rev[:reg], Coming: rev[reg:]}); got != want {
			t.Fatalf("%d of %d registered: %s, want %s", reg, n, got, want)
		}
		joined := append(slices.Clone(in), Instance{ID: "new@-@9", ServerIP: "10.9.9.9"})
		if slices.Contains(assign(strategy, joined, job, int(total)), "new@-@9") {
			if got := Assess(Assessment{Job: job, Owners: owners, Strategy: strategy, Available: joined}); got != Rebalance {
				t.Fatalf("a joined instance that gets an item: %s (every owner is still available: rebalance)", got)
			}
		}
		if n > 1 && slices.Contains(owners, in[0].ID) {
			if got := Assess(Assessment{Job: job, Owners: owners, Strategy: strategy, Available: in[1:]}); got != Reshard {
				t.Fatalf("an owner left: %s", got)
			}
		}
	})
}
