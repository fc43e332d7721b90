package sharding

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func hosts(n int) []Instance {
	out := make([]Instance, n)
	for i := range out {
		out[i] = Instance{ID: fmt.Sprintf("host%d", i), ServerIP: "127.0.0.1"}
	}
	return out
}

// The vectors are ElasticJob's own strategy tests (reference/elasticjob.md).
func TestStrategyVectors(t *testing.T) {
	tests := []struct {
		name     string
		strategy Strategy
		job      string
		n, total int
		want     Assignment
	}{
		{"avg no instances", Average, "j", 0, 3, Assignment{}},
		{"avg one instance", Average, "j", 1, 3, Assignment{"host0": {0, 1, 2}}},
		{"avg fewer items", Average, "j", 3, 2, Assignment{"host0": {0}, "host1": {1}, "host2": {}}},
		{"avg 9 on 3", Average, "j", 3, 9, Assignment{"host0": {0, 1, 2}, "host1": {3, 4, 5}, "host2": {6, 7, 8}}},
		{"avg 8 on 3", Average, "j", 3, 8, Assignment{"host0": {0, 1, 6}, "host1": {2, 3, 7}, "host2": {4, 5}}},
		{"avg 10 on 3", Average, "j", 3, 10, Assignment{"host0": {0, 1, 2, 9}, "host1": {3, 4, 5}, "host2": {6, 7, 8}}},
		{"avg 4 on 3", Average, "j", 3, 4, Assignment{"host0": {0, 3}, "host1": {1}, "host2": {2}}},
		{"odevity odd hash", Odevity, "1", 3, 2, Assignment{"host0": {0}, "host1": {1}, "host2": {}}},
		{"odevity even hash", Odevity, "0", 3, 2, Assignment{"host2": {0}, "host1": {1}, "host0": {}}},
		{"round robin 1", RoundRobin, "1", 3, 2, Assignment{"host1": {0}, "host2": {1}, "host0": {}}},
		{"round robin 2", RoundRobin, "2", 3, 2, Assignment{"host2": {0}, "host0": {1}, "host1": {}}},
		{"round robin 3", RoundRobin, "3", 3, 2, Assignment{"host0": {0}, "host1": {1}, "host2": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.strategy(hosts(tt.n), tt.job, tt.total)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// The expected values were printed by Java 17's String.hashCode.
func TestJavaHashCode(t *testing.T) {
	tests := []struct {
		in   string
		want int32
	}{
		{"", 0}, {"0", 48}, {"1", 49}, {"test_job", -1146456432}, {"hello world", 1794106052},
		{"polygenelubricants", -2147483648}, {"日本", 835047}, {"😀", 1772899},
	}
	for _, tt := range tests {
		if got := JavaHashCode(tt.in); got != tt.want {
			t.Errorf("JavaHashCode(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestSortByNumericIPThenID(t *testing.T) {
	in := []Instance{
		{"10.0.0.10@-@1", "10.0.0.10"}, {"b", "10.0.0.9"}, {"a", "10.0.0.9"},
		{"x", "::1"}, {"y", "not-an-ip"}, {"z", "9.255.255.255"},
	}
	Sort(in)
	var ids []string
	for _, i := range in {
		ids = append(ids, i.ID)
	}
	want := []string{"z", "a", "b", "10.0.0.10@-@1", "x", "y"}
	if !slices.Equal(ids, want) {
		t.Fatalf("order %v, want %v", ids, want)
	}
}

func TestStrategyFor(t *testing.T) {
	for _, name := range []string{"", "AVG_ALLOCATION", "ODEVITY", "ROUND_ROBIN"} {
		if _, err := StrategyFor(name); err != nil {
			t.Errorf("StrategyFor(%q): %v", name, err)
		}
	}
	if _, err := StrategyFor("HASH"); err == nil {
		t.Error("StrategyFor(HASH) succeeded")
	}
}

// FuzzStrategies checks the properties every strategy must keep: every item assigned exactly once, only to
// listed instances, loads differing by at most one, and the same input giving the same output.
func FuzzStrategies(f *testing.F) {
	f.Add("job", uint8(3), uint16(10))
	f.Add("0", uint8(1), uint16(0))
	f.Add("polygenelubricants", uint8(7), uint16(2000))
	f.Add("", uint8(0), uint16(5))
	f.Fuzz(func(t *testing.T, job string, n uint8, total uint16) {
		t16 := int(total) % 10001
		instances := hosts(int(n))
		for _, s := range []Strategy{Average, Odevity, RoundRobin} {
			got := s(instances, job, t16)
			if !reflect.DeepEqual(got, s(instances, job, t16)) {
				t.Fatal("same input gave different output")
			}
			if n == 0 {
				if len(got) != 0 {
					t.Fatalf("no instances but %v", got)
				}
				continue
			}
			seen := make([]bool, t16)
			minLoad, maxLoad := t16+1, -1
			for id, items := range got {
				if !slices.ContainsFunc(instances, func(i Instance) bool { return i.ID == id }) {
					t.Fatalf("item given to unknown instance %q", id)
				}
				minLoad, maxLoad = min(minLoad, len(items)), max(maxLoad, len(items))
				for _, it := range items {
					if it < 0 || it >= t16 || seen[it] {
						t.Fatalf("item %d out of range or assigned twice", it)
					}
					seen[it] = true
				}
			}
			if len(got) != int(n) {
				t.Fatalf("%d instances in assignment, want %d", len(got), n)
			}
			if slices.Contains(seen, false) {
				t.Fatal("an item was not assigned")
			}
			if maxLoad-minLoad > 1 {
				t.Fatalf("loads differ by %d", maxLoad-minLoad)
			}
		}
	})
}
