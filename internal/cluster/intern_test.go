package cluster

import (
	"maps"
	"reflect"
	"testing"
)

func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestStringMapsIntern(t *testing.T) {
	var tab stringMaps
	a := map[string]string{"10.0.0.1@-@1": "10.0.0.1", "10.0.0.2@-@2": "10.0.0.2"}
	tests := []struct {
		name  string
		m     map[string]string
		share bool
	}{
		{"equal content", map[string]string{"10.0.0.2@-@2": "10.0.0.2", "10.0.0.1@-@1": "10.0.0.1"}, true},
		{"one more entry", map[string]string{"10.0.0.1@-@1": "10.0.0.1", "10.0.0.2@-@2": "10.0.0.2", "x": "y"}, false},
		{"another value", map[string]string{"10.0.0.1@-@1": "10.0.0.1", "10.0.0.2@-@2": "DISABLED"}, false},
		{"the bytes of a key moved into a value", map[string]string{"10.0.0.1@-@1": "10.0.0.112:10.0.0.2@-@28:10.0.0.2"}, false},
	}
	if got := tab.intern(a); !sameMap(got, a) {
		t.Fatal("the first map of a content is the shared one")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tab.intern(tt.m)
			if !maps.Equal(got, tt.m) {
				t.Fatalf("interned %v, want %v", got, tt.m)
			}
			if sameMap(got, a) != tt.share {
				t.Fatalf("shared with the first: %v, want %v", sameMap(got, a), tt.share)
			}
		})
	}
	if got := tab.intern(nil); got != nil {
		t.Fatal("nil stays nil")
	}
}

func TestStringMapsStartOverWhenFull(t *testing.T) {
	tab := stringMaps{max: 2}
	first := tab.intern(map[string]string{"a": "1"})
	tab.intern(map[string]string{"b": "1"})
	tab.intern(map[string]string{"c": "1"}) // full: starts over
	again := map[string]string{"a": "1"}
	if got := tab.intern(again); !sameMap(got, again) || len(tab.byKey) != 2 {
		t.Fatalf("after starting over the table holds %d maps", len(tab.byKey))
	}
	if first["a"] != "1" {
		t.Fatal("a map handed out before stays valid")
	}
}

// Interning never changes content: whatever two maps it is given, each comes back equal to itself, and
// two come back shared only when their contents are equal.
func FuzzStringMapsIntern(f *testing.F) {
	f.Add("a", "1", "b", "2", "a", "1", "b", "2")
	f.Add("a", "1b", "", "", "a1", "b", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3, k4, v4 string) {
		var tab stringMaps
		m1 := map[string]string{k1: v1, k2: v2}
		m2 := map[string]string{k3: v3, k4: v4}
		g1, g2 := tab.intern(m1), tab.intern(m2)
		if !maps.Equal(g1, m1) || !maps.Equal(g2, m2) {
			t.Fatal("content changed")
		}
		if sameMap(g1, g2) != maps.Equal(m1, m2) {
			t.Fatalf("shared %v for %v and %v", sameMap(g1, g2), m1, m2)
		}
	})
}
