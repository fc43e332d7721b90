package sharding

import (
	"slices"
	"testing"
	"time"
)

// byDue: the jobs whose fires need their sharding first go first, the jobs with no due time last, by name
// among equals; without Due, by name.
func TestJobsGoByDue(t *testing.T) {
	base := time.Unix(1000, 0)
	due := map[string]time.Time{"a": base.Add(40 * time.Second), "b": base.Add(5 * time.Second),
		"c": {}, "d": base.Add(5 * time.Second), "e": base}
	jobs := []string{"c", "a", "d", "e", "b"}
	c := &Coordinator{cfg: CoordinatorConfig{Due: func(job string) time.Time { return due[job] }}}
	c.byDue(jobs)
	if want := []string{"e", "b", "d", "a", "c"}; !slices.Equal(jobs, want) {
		t.Fatalf("by due %v, want %v", jobs, want)
	}
	c.cfg.Due = nil
	c.byDue(jobs)
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(jobs, want) {
		t.Fatalf("without Due %v, want %v", jobs, want)
	}
}
