// Package loadahead computes the schedule's load ahead: how many shard items fall on each second of the next
// hour (or any horizon), from the jobs' cron schedules. It is a pure function of the schedules and a start
// time, so a herd on "0 * * * * ?" shows before it fires.
//
// The work is bounded: jobs with the same expression and time zone are one schedule (their items add up);
// each schedule is parsed once and walked with cronexpr's Next at most once per second of the horizon; and
// the walk stops at a budget of Next calls, heaviest schedules first, counting what it left out (Skipped) so
// a reader knows the figure is partial instead of waiting for it.
package loadahead

import (
	"slices"
	"time"

	"github.com/ejserver/ejserver/internal/cronexpr"
)

// Job is one job's schedule.
type Job struct {
	Cron     string
	TimeZone string
	// Items is how many shard items each fire POSTs (the sharding total count).
	Items int
}

// Config bounds a computation.
type Config struct {
	// Horizon is how far ahead, in whole seconds (default one hour, at most MaxHorizon).
	Horizon time.Duration
	// Budget bounds the Next calls (default DefaultBudget).
	Budget int
}

// Bounds.
const (
	MaxHorizon    = 24 * time.Hour
	DefaultBudget = 4_000_000
)

// Load is the items that fall on each second of [From, From+Horizon).
type Load struct {
	From time.Time `json:"from"`
	// Items[i] is the items of the fires at From+i seconds.
	Items []int64 `json:"items"`
	// Jobs and Schedules are the jobs counted and the distinct (expression, time zone) pairs they share.
	Jobs      int `json:"jobs"`
	Schedules int `json:"schedules"`
	// Invalid counts jobs whose expression or time zone does not parse (not counted).
	Invalid int `json:"invalid"`
	// Skipped counts jobs the budget left out (not counted); Partial says their schedules ran out of
	// budget part way.
	Skipped int  `json:"skipped"`
	Partial bool `json:"partial"`
	// Peak is the largest Items value and PeakAt its second.
	Peak   int64     `json:"peak"`
	PeakAt time.Time `json:"peakAt,omitzero"`
}

type group struct {
	cron, tz    string
	jobs, items int
}

// Compute returns the load of jobs over [from, from+cfg.Horizon), from truncated to the second.
func Compute(jobs []Job, from time.Time, cfg Config) Load {
	if cfg.Horizon <= 0 || cfg.Horizon > MaxHorizon {
		cfg.Horizon = time.Hour
	}
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	from = from.Truncate(time.Second)
	n := int(cfg.Horizon / time.Second)
	out := Load{From: from.UTC(), Items: make([]int64, n)}
	end := from.Add(time.Duration(n) * time.Second)

	// one group per (expression, time zone), in a slice indexed by a map: no allocation per job or group
	byKey := make(map[[2]string]int, len(jobs))
	groups := make([]group, 0, len(jobs))
	for _, j := range jobs {
		k := [2]string{j.Cron, j.TimeZone}
		i, ok := byKey[k]
		if !ok {
			i = len(groups)
			byKey[k] = i
			groups = append(groups, group{cron: j.Cron, tz: j.TimeZone})
		}
		groups[i].jobs++
		groups[i].items += max(j.Items, 0)
	}
	clear(byKey)
	// heaviest first, then by expression: the same input gives the same output
	slices.SortFunc(groups, func(a, b group) int {
		if a.items != b.items {
			return b.items - a.items
		}
		if a.cron != b.cron {
			if a.cron < b.cron {
				return -1
			}
			return 1
		}
		if a.tz < b.tz {
			return -1
		}
		if a.tz > b.tz {
			return 1
		}
		return 0
	})
	out.Schedules = len(groups)
	locs := map[string]*time.Location{}
	budget := cfg.Budget
	for _, g := range groups {
		if budget <= 0 {
			out.Skipped += g.jobs
			continue
		}
		loc, ok := locs[g.tz]
		if !ok {
			l, err := cronexpr.LoadLocation(g.tz)
			if err != nil {
				l = nil
			}
			locs[g.tz], loc = l, l
		}
		if loc == nil {
			out.Invalid += g.jobs
			continue
		}
		s, err := cronexpr.Parse(g.cron, loc)
		if err != nil {
			out.Invalid += g.jobs
			continue
		}
		out.Jobs += g.jobs
		// Next is strictly after t: start one second early so a fire at from counts.
		t := from.Add(-time.Second)
		for {
			if budget <= 0 {
				out.Partial = true
				break
			}
			budget--
			t = s.Next(t)
			if t.IsZero() || !t.Before(end) {
				break
			}
			out.Items[int(t.Sub(from)/time.Second)] += int64(g.items)
		}
	}
	for i, v := range out.Items {
		if v > out.Peak {
			out.Peak, out.PeakAt = v, from.Add(time.Duration(i)*time.Second).UTC()
		}
	}
	return out
}
