package cluster

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

func TestLeftAfter(t *testing.T) {
	tests := []struct {
		name           string
		left           []string
		added, removed []string
		want           []string
	}{
		{name: "a peer goes", removed: []string{"x"}, want: []string{"x"}},
		{name: "it comes back under the same id", left: []string{"x", "y"}, added: []string{"x"}, want: []string{"y"}},
		{name: "a new peer is not one that left", left: []string{"x"}, added: []string{"n"}, want: []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left := map[string]bool{}
			for _, id := range tt.left {
				left[id] = true
			}
			got := slices.Sorted(maps.Keys(leftAfter(left, tt.added, tt.removed)))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("left %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		var left map[string]bool
		for i := range 3 * maxLeft {
			left = leftAfter(left, nil, []string{fmt.Sprint(i)})
		}
		if len(left) > maxLeft || !left[fmt.Sprint(3*maxLeft-1)] {
			t.Fatalf("%d peers kept as left, the latest kept: %v", len(left), left[fmt.Sprint(3*maxLeft-1)])
		}
	})
}
