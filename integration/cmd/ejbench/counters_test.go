package main

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// A peer's counters over the window: one process's change, or, when it was restarted, the old process's
// change until its stop plus the new one's from zero (a new pid), never a negative difference across the two.
func TestProcessDeltaCountsARestartedPeersTwoProcesses(t *testing.T) {
	m := func(kv ...float64) map[string]float64 {
		out := map[string]float64{}
		for i := 0; i+1 < len(kv); i += 2 {
			out[[]string{"a", "b", "c"}[int(kv[i])]] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []counterSample
		want    map[string]float64
	}{
		{"none", nil, m()},
		{"one process", []counterSample{{1, m(0, 10, 1, 5)}, {1, m(0, 25, 1, 5, 2, 3)}}, m(0, 15, 2, 3)},
		{"restarted", []counterSample{{1, m(0, 100)}, {1, m(0, 130, 1, 4)}, {2, m(0, 7)}}, m(0, 37, 1, 4)},
		{"restarted twice", []counterSample{{1, m(0, 100)}, {1, m(0, 110)}, {2, m(0, 20)}, {3, m(0, 1)}}, m(0, 31)},
		{"stopped, sample taken twice", []counterSample{{1, m(0, 5)}, {1, m(0, 9)}, {1, m(0, 12)}}, m(0, 7)},
		{"gone at the end (no series)", []counterSample{{1, m(0, 5)}, {1, m(0, 9)}, {2, m()}}, m(0, 4)},
	} {
		if got := processDelta(tc.samples); !maps.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The highest RSS of each process within a span of the window: samples outside it do not count, a process
// with no sample in it reads 0.
func TestMaxRSSBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int, rss ...int64) rssSample {
		return rssSample{at: t0.Add(time.Duration(s) * time.Second), rss: rss}
	}
	mb := int64(1 << 20)
	samples := []rssSample{at(0, 10*mb, 20*mb), at(30, 15*mb, 5*mb), at(60, 99*mb, 99*mb), at(119, 40*mb, 30*mb), at(120, 50*mb, 60*mb)}
	for _, tc := range []struct {
		name     string
		from, to int
		want     []float64
	}{
		{"first minute", 0, 60, []float64{15, 20}},
		{"last minute", 60, 120, []float64{99, 99}},
		{"to is excluded", 61, 120, []float64{40, 30}},
		{"nothing in it", 200, 260, []float64{0, 0}},
	} {
		got := maxRSSBetween(samples, 2, t0.Add(time.Duration(tc.from)*time.Second), t0.Add(time.Duration(tc.to)*time.Second))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
