package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Latency summarises lateness (arrival at the receiver minus scheduledAt), in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

func latencyOf(ns []int64) Latency {
	if len(ns) == 0 {
		return Latency{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[max(0, min(i, len(s)-1))])
	}
	return Latency{N: len(s), P50: q(0.50), P99: q(0.99), Max: ms(s[len(s)-1])}
}

func ms(ns int64) float64 { return math.Round(float64(ns)/1e4) / 100 }

// Minute is one minute of a measured window.
type Minute struct {
	Minute   int     `json:"minute"`
	Expected int     `json:"expected"`
	Received int     `json:"received"`
	Lateness Latency `json:"lateness"`
}

// schedule is what a workload fires: job k ({prefix}-{k:05}) has `items` items and fires at the seconds s with
// s % period == spreadOffset(k, period) (spread), or s % period == 0 (not spread).
type schedule struct {
	prefix string
	jobs   int
	items  int
	period time.Duration
	spread bool
}

func (s schedule) periodS() int64 { return int64(s.period / time.Second) }

func (s schedule) jobName(k int) string { return fmt.Sprintf("%s-%05d", s.prefix, k) }

// cron is job k's Quartz expression. A period of a minute is a fixed second: Quartz steps stop at 59.
func (s schedule) cron(k int) string {
	p := s.periodS()
	if p == 1 {
		return "* * * * * ?"
	}
	off := s.offset(k)
	if p == 60 {
		return fmt.Sprintf("%d * * * * ?", off)
	}
	return fmt.Sprintf("%d/%d * * * * ?", off, p)
}

// firingAt is the number of jobs that fire at second t.
func (s schedule) firingAt(t int64) int {
	p := s.periodS()
	if !s.spread {
		if t%p == 0 {
			return s.jobs
		}
		return 0
	}
	// every block of p consecutive jobs fills each second once; the last, partial block's rem jobs are at
	// the rem seconds from its turn on
	full, rem := int64(s.jobs)/p, int64(s.jobs)%p
	n := int(full)
	if ((t%p-full)%p+p)%p < rem {
		n++
	}
	return n
}

// offset is the second within the period at which job k fires.
func (s schedule) offset(k int) int64 {
	if !s.spread {
		return 0
	}
	return spreadOffset(k, s.periodS())
}

// spreadOffset is the second within a period of p seconds at which job k of a spread schedule fires: its place
// in its block of p consecutive jobs, turned by the block's number, so that one second's jobs are a mix of k's
// residues. With plain k % p, one second's jobs of a minute's period shared k mod 3, and so, for names that
// differ only in their digits, their Java hashCode mod 3, which is ROUND_ROBIN's rotation on three peers: each
// second's jobs (1,667 in steady-100000) all went to one peer, where a real cluster's job names spread them
// over every peer (TestSpreadSecondsMixThePeers).
func spreadOffset(k int, p int64) int64 { return (int64(k) + int64(k)/p) % p }

// expected counts the item fires scheduled in [from, to).
func (s schedule) expected(from, to time.Time) int {
	n := 0
	for t := ceilSecond(from); t.Before(to); t = t.Add(time.Second) {
		n += s.firingAt(t.Unix()) * s.items
	}
	return n
}

func ceilSecond(t time.Time) time.Time {
	if t.Equal(t.Truncate(time.Second)) {
		return t
	}
	return t.Truncate(time.Second).Add(time.Second)
}

// analysis is what the records of one measured window say.
type analysis struct {
	Expected   int
	Received   int // distinct item fires delivered as NORMAL_TRIGGER
	Duplicates int // NORMAL_TRIGGER deliveries beyond the first of an item fire
	Missed     int
	Unexpected int // NORMAL_TRIGGER deliveries of item fires the schedule does not have
	Other      int // MISFIRE, FAILOVER and MANUAL deliveries of the window's fires
	Lateness   Latency
	Minutes    []Minute
	Arrivals   int // requests that arrived within the window (any source)
	FireSpan   Latency
	// MissedFires names some of the missed item fires ("job/item@time", at most 10), and OtherBySource
	// counts the deliveries of other sources by source.
	MissedFires   []string
	OtherBySource map[string]int
	first         map[fireKey]*record
}

// analyze reads the records of item fires scheduled in [from, to).
func analyze(recs []record, s schedule, from, to time.Time) analysis {
	a := analysis{Expected: s.expected(from, to), first: map[fireKey]*record{}}
	f, t := from.UnixNano(), to.UnixNano()
	for i := range recs {
		r := &recs[i]
		if r.arrived >= f && r.arrived < t {
			a.Arrivals++
		}
		if r.scheduled < f || r.scheduled >= t {
			continue
		}
		if r.src != srcNormal {
			a.Other++
			if a.OtherBySource == nil {
				a.OtherBySource = map[string]int{}
			}
			a.OtherBySource[sourceNames[r.src]]++
			continue
		}
		k := r.key()
		if prev, ok := a.first[k]; ok {
			a.Duplicates++
			if r.arrived < prev.arrived {
				a.first[k] = r
			}
			continue
		}
		if !s.valid(r) {
			a.Unexpected++
			continue
		}
		a.first[k] = r
	}
	a.Received = len(a.first)
	a.Missed = max(0, a.Expected-a.Received)
	if a.Missed > 0 {
		a.MissedFires = s.missing(a.first, from, to, 10)
	}

	var all []int64
	minutes := int((to.Sub(from) + time.Minute - 1) / time.Minute)
	perMin := make([][]int64, minutes)
	fires := map[int64][]int64{} // scheduledAt -> lateness of its items
	for _, r := range a.first {
		l := r.arrived - r.scheduled
		all = append(all, l)
		m := int((r.scheduled - f) / int64(time.Minute))
		perMin[m] = append(perMin[m], l)
		fires[r.scheduled] = append(fires[r.scheduled], l)
	}
	a.Lateness = latencyOf(all)
	for m := range minutes {
		mf := from.Add(time.Duration(m) * time.Minute)
		a.Minutes = append(a.Minutes, Minute{Minute: m + 1, Expected: s.expected(mf, minTime(mf.Add(time.Minute), to)),
			Received: len(perMin[m]), Lateness: latencyOf(perMin[m])})
	}
	// a fire's span: its last item's arrival minus its scheduled time (complete fires only)
	var spans []int64
	for at, ls := range fires {
		if len(ls) == s.firingAt(at/int64(time.Second))*s.items {
			spans = append(spans, slices.Max(ls))
		}
	}
	a.FireSpan = latencyOf(spans)
	return a
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// valid reports whether the schedule has the record's item fire.
func (s schedule) valid(r *record) bool {
	var k int
	if _, err := fmt.Sscanf(r.job(), s.prefix+"-%d", &k); err != nil || k < 0 || k >= s.jobs {
		return false
	}
	if r.item < 0 || int(r.item) >= s.items || r.scheduled%int64(time.Second) != 0 {
		return false
	}
	return r.scheduled/int64(time.Second)%s.periodS() == s.offset(k)
}

var sourceNames = [...]string{srcNormal: "NORMAL_TRIGGER", srcMisfire: "MISFIRE", srcFailover: "FAILOVER", srcManual: "MANUAL", srcBackfill: "BACKFILL", srcOther: "other"}

// missing lists up to n item fires of [from, to) that have no NORMAL_TRIGGER delivery.
func (s schedule) missing(got map[fireKey]*record, from, to time.Time, n int) []string {
	var out []string
	p := s.periodS()
	for t := ceilSecond(from); t.Before(to) && len(out) < n; t = t.Add(time.Second) {
		sec := t.Unix()
		for k := range s.jobs {
			if sec%p != s.offset(k) {
				continue
			}
			for i := range s.items {
				if _, ok := got[fireKey{s.jobName(k), int32(i), t.UnixNano()}]; !ok && len(out) < n {
					out = append(out, fmt.Sprintf("%s/%d@%s", s.jobName(k), i, t.UTC().Format("15:04:05")))
				}
			}
		}
	}
	return out
}
