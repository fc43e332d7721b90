package calendar

import (
	"strings"
	"time"
)

// MaxScan bounds how many cron fires Next looks at to find effective ones: a calendar that includes one day
// a year under a per-second cron ends the preview early instead of scanning for ever.
const MaxScan = 200_000

// Rules are what a job's effective schedule applies to its cron fires: the calendars it excludes, the
// calendars it is restricted to (any of them), its endAt and whether an operator paused it.
type Rules struct {
	Exclude []*Compiled
	Include []*Compiled
	// EndAt: no fire after it (a fire exactly at EndAt still runs); zero means none.
	EndAt  time.Time
	Paused bool
}

// Why a scheduled fire does not run. The executor records them as the fire's skip reason; they begin with
// the prefixes the metrics' reason label maps (calendar, paused, ended).
const (
	ReasonPaused   = "job paused"
	ReasonEnded    = "schedule ended"
	ReasonCalendar = "calendar"
)

// Verdict is the decision about one scheduled fire.
type Verdict struct {
	Run bool
	// Reason says why it does not run ("" when it runs).
	Reason string
}

// Fires reports whether a job whose schedule has a fire at t runs it, by its calendars and endAt (not its
// pause or remainingFires, which depend on when it is asked): the question backfill enumeration asks.
func (r Rules) Fires(t time.Time) bool { return r.decide(t, false).Run }

// Decide is the verdict on a scheduled fire at t: pause first, then endAt, then the calendars.
func (r Rules) Decide(t time.Time) Verdict { return r.decide(t, true) }

func (r Rules) decide(t time.Time, pause bool) Verdict {
	if pause && r.Paused {
		return Verdict{Reason: ReasonPaused}
	}
	if !r.EndAt.IsZero() && t.After(r.EndAt) {
		return Verdict{Reason: ReasonEnded + ": endAt " + r.EndAt.UTC().Format(time.RFC3339) + " has passed"}
	}
	for _, c := range r.Exclude {
		if c.Contains(t) {
			return Verdict{Reason: ReasonCalendar + ": " + c.Name + " excludes the day"}
		}
	}
	if len(r.Include) == 0 {
		return Verdict{Run: true}
	}
	names := make([]string, len(r.Include))
	for i, c := range r.Include {
		if c.Contains(t) {
			return Verdict{Run: true}
		}
		names[i] = c.Name
	}
	return Verdict{Reason: ReasonCalendar + ": the day is in none of " + strings.Join(names, ", ")}
}

// Next lists up to count effective fires after from: the cron's fires (next returns the first fire after a
// time, zero when there is none) that the rules let run, at most remaining of them when remaining >= 0. A
// paused job lists none. It stops early after MaxScan cron fires or at a fire after EndAt.
func Next(next func(time.Time) time.Time, r Rules, from time.Time, count, remaining int) []time.Time {
	if r.Paused || count <= 0 || remaining == 0 {
		return nil
	}
	if remaining > 0 && remaining < count {
		count = remaining
	}
	var out []time.Time
	t := from
	for scanned := 0; len(out) < count && scanned < MaxScan; scanned++ {
		t = next(t)
		if t.IsZero() || (!r.EndAt.IsZero() && t.After(r.EndAt)) {
			break
		}
		if r.Fires(t) {
			out = append(out, t)
		}
	}
	return out
}

// Counter is a job's remainingFires counter as the cluster keeps it: the limit it counts down from (a new
// limit in the config starts it again), the fires left and the scheduled time of the last fire it counted.
type Counter struct {
	Limit int       `json:"limit"`
	Left  int       `json:"left"`
	Last  time.Time `json:"last"`
}

// Count decides a scheduled fire at t of a job with remainingFires = limit against the stored counter cur
// (nil: none yet). Every peer that fires its items of the fire asks; the first to write next (a conditional
// write) counts the fire, the others find Last == t and run their items of it too. run says whether the fire
// runs; write whether next must be stored (conditionally on the version cur was read at).
func Count(cur *Counter, limit int, t time.Time) (next Counter, write, run bool) {
	base := Counter{Limit: limit, Left: limit}
	if cur != nil && cur.Limit == limit {
		base = *cur
	}
	switch {
	case !base.Last.IsZero() && t.Equal(base.Last):
		return base, false, true // counted by another peer (or by us before a retry)
	case !base.Last.IsZero() && t.Before(base.Last):
		return base, false, false // older than a fire already counted: its turn has passed
	case base.Left <= 0:
		return base, false, false
	}
	return Counter{Limit: limit, Left: base.Left - 1, Last: t}, true, true
}
