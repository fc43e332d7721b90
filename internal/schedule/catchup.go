package schedule

import (
	"fmt"
	"time"
)

// CatchUp is a job's catchUp: how many of the fires missed while nobody could run them run afterwards.
type CatchUp string

// The catch-up modes. None is ElasticJob's (missed fires are not replayed); Last is replayMissedFires.
const (
	CatchUpNone CatchUp = "none"
	CatchUpLast CatchUp = "last"
	CatchUpAll  CatchUp = "all"
)

// MaxCatchUpFires bounds the fires one item replays after one outage; older ones beyond it are dropped (a
// 1-second job down for a day would otherwise owe 86,400 requests at once).
const MaxCatchUpFires = 1000

// MaxCatchUpWindowSeconds bounds catchUpWindowSeconds (7 days).
const MaxCatchUpWindowSeconds = 7 * 24 * 60 * 60

// Valid reports whether c is a mode (empty is not: it derives from replayMissedFires).
func (c CatchUp) Valid() bool { return c == CatchUpNone || c == CatchUpLast || c == CatchUpAll }

// EffectiveCatchUp is the mode a job runs with: its catchUp, or, empty, last when replayMissedFires is set
// and none otherwise.
func EffectiveCatchUp(mode string, replayMissedFires bool) CatchUp {
	switch {
	case mode != "":
		return CatchUp(mode)
	case replayMissedFires:
		return CatchUpLast
	}
	return CatchUpNone
}

// CatchUpConflict returns why catchUp, replayMissedFires and catchUpWindowSeconds disagree ("" when they
// agree): replayMissedFires is catchUp last, and a window only bounds all.
func CatchUpConflict(mode string, replayMissedFires bool, windowSeconds int) (field, msg string) {
	c := CatchUp(mode)
	if mode != "" && c.Valid() && replayMissedFires && c != CatchUpLast {
		return "catchUp", fmt.Sprintf("replayMissedFires true means catchUp last, but catchUp is %s: drop replayMissedFires", c)
	}
	if windowSeconds != 0 && EffectiveCatchUp(mode, replayMissedFires) != CatchUpAll {
		return "catchUpWindowSeconds", "only bounds catchUp all: set catchUp to all or drop the window"
	}
	return "", ""
}

// Plan is the missed fires one item runs after an outage, oldest first, and how many older ones were
// dropped (beyond the window or MaxCatchUpFires).
type Plan struct {
	Fires   []time.Time
	Dropped int
}

// Missed plans the catch-up of one item: next is the job's schedule (the first fire strictly after a time,
// zero when there is none), last the scheduled time of the item's last recorded run, now the scheduled time
// of the fire that found the gap (not itself missed). A missed fire is one strictly between last and now.
// none plans nothing; last the latest missed fire; all every missed fire no older than window before now
// (window 0: no bound but MaxCatchUpFires), oldest first.
func Missed(next func(time.Time) time.Time, last, now time.Time, mode CatchUp, window time.Duration) Plan {
	if mode != CatchUpLast && mode != CatchUpAll || !last.Before(now) {
		return Plan{}
	}
	from := last
	if mode == CatchUpAll && window > 0 && now.Add(-window).After(from) {
		from = now.Add(-window).Add(-time.Nanosecond) // a fire exactly window before now is in it
	}
	var p Plan
	if from.After(last) {
		p.Dropped = countBetween(next, last, from.Add(time.Nanosecond))
	}
	keep := MaxCatchUpFires
	if mode == CatchUpLast {
		keep = 1
	}
	// count first, then walk again keeping the newest: a day's outage of a 1-second job is 86,400 fires
	skip := max(countBetween(next, from, now)-keep, 0)
	p.Dropped += skip
	for t := next(from); !t.IsZero() && t.Before(now); t = next(t) {
		if skip > 0 {
			skip--
			continue
		}
		p.Fires = append(p.Fires, t)
	}
	return p
}

// countBetween counts the fires strictly after from and strictly before to, up to a bound (a count of
// dropped fires need not be exact beyond it).
func countBetween(next func(time.Time) time.Time, from, to time.Time) int {
	const bound = 1_000_000
	n := 0
	for t := next(from); !t.IsZero() && t.Before(to) && n < bound; t = next(t) {
		n++
	}
	return n
}

// Look decides what a peer does with one item at a scheduled fire at, from its mark: the latest scheduled
// fire of the item it ran or queued (zero: none since it gained the item). drop: a later fire here already
// ran or queued this one (as a catch-up; fires of one job are handed to goroutines and may reach this point
// out of order), so it must not run again. look: fires may have been missed since the mark (there is none,
// or the schedule had a fire strictly between it and at: a fire this peer skipped for a fault, an item it
// gained from a peer that died): the item's last run must be read from the registry.
func Look(next func(time.Time) time.Time, mark, at time.Time) (drop, look bool) {
	switch {
	case mark.IsZero():
		return false, true
	case !mark.Before(at):
		return true, false
	}
	n := next(mark)
	return false, !n.IsZero() && n.Before(at)
}

// Since is the time from which an item's missed fires count: the latest of what is known of its last fire
// (this peer's mark, its last recorded run, a run still recorded as in flight; zero ones are unknown), and
// no earlier than the job's config last changed (a job created, edited, disabled or paused since has
// missed nothing before that). ok is false when nothing is known: the item never ran, nothing was missed.
func Since(configChanged time.Time, known ...time.Time) (from time.Time, ok bool) {
	for _, t := range known {
		if t.After(from) {
			from = t
		}
	}
	if from.IsZero() {
		return from, false
	}
	if configChanged.After(from) {
		from = configChanged
	}
	return from, true
}

// maxScan bounds the cron fires Allowed skips looking for one its rules allow.
const maxScan = 1_000_000

// Allowed narrows a schedule to the fires allow lets run (a job's calendars and endAt): the first such
// fire after a time, zero when there is none within maxScan fires. A nil allow is the schedule itself.
func Allowed(next func(time.Time) time.Time, allow func(time.Time) bool) func(time.Time) time.Time {
	if allow == nil {
		return next
	}
	return func(t time.Time) time.Time {
		for range maxScan {
			t = next(t)
			if t.IsZero() || allow(t) {
				return t
			}
		}
		return time.Time{}
	}
}
