package backfill

import "time"

// Pacing bounds what a backfill takes from its peer, so that it never starves the job's own schedule or
// other jobs, and the backfill itself always progresses:
//
//   - a bounded share: at most MaxInFlight of its requests are out at once (of the peer's 256 request
//     slots), fires start at most Rate per second, and at most MaxPending fires sent wait for their history
//     records to commit before the oldest is recorded done;
//   - it yields around the schedule's moments: a request does not leave while the peer is busy with its
//     scheduled sends (the executor's Activity: a burst left within the last Guard, or prepared items are
//     due within the next Guard, the lead window of a scheduled fire; a wider Guard than the history
//     writer's leaves room for a request's own work, its response and history records, between bursts);
//   - minimum progress: one fire yields MaxHold in all, and then its remaining items go even though the
//     peer is still busy. A peer that is never quiet (thousands of jobs spread over every moment) still
//     lets a backfill start a fire every MaxHold.
type Pacing struct {
	MaxInFlight int           // requests of this backfill in flight at once (default 4)
	Rate        float64       // fires started per second (default 50; <0: no bound)
	MaxHold     time.Duration // the most one fire yields to a busy peer in all (default 1 s)
	MaxPending  int           // fires sent whose history commits are still awaited (default 8)
	Guard       time.Duration // how far around a scheduled burst the peer counts as busy (default 250 ms)
}

// The defaults of Pacing's fields.
const (
	DefaultMaxInFlight = 4
	DefaultRate        = 50
	DefaultMaxHold     = time.Second
	DefaultMaxPending  = 8
	DefaultGuard       = 250 * time.Millisecond
)

// Defaults fills the zero fields.
func (p Pacing) Defaults() Pacing {
	if p.MaxInFlight <= 0 {
		p.MaxInFlight = DefaultMaxInFlight
	}
	if p.Rate == 0 {
		p.Rate = DefaultRate
	}
	if p.MaxHold <= 0 {
		p.MaxHold = DefaultMaxHold
	}
	if p.MaxPending <= 0 {
		p.MaxPending = DefaultMaxPending
	}
	if p.Guard <= 0 {
		p.Guard = DefaultGuard
	}
	return p
}

// PaceState is what one pacing decision looks at: the backfill's own requests and the peer's activity.
type PaceState struct {
	// FireStart: the request is the first of a fire (the rate bounds fires, not items).
	FireStart bool
	// LastFire is when the backfill's latest fire started (zero: none yet).
	LastFire time.Time
	// Held is how long the current fire has yielded to the busy peer so far (the first request's waits
	// included).
	Held time.Duration
	// Busy is how long the peer expects to stay busy with its scheduled sends (0: quiet).
	Busy time.Duration
}

// Verdict is the kind of a pacing decision.
type Verdict int

// The pacing verdicts.
const (
	// Go: the request leaves now.
	Go Verdict = iota
	// RateWait: the fire may not start before the rate allows; wait the duration.
	RateWait
	// Yield: the peer is busy with its schedule; wait the duration (it counts into Held).
	Yield
)

func (v Verdict) String() string {
	switch v {
	case Go:
		return "go"
	case RateWait:
		return "rate"
	case Yield:
		return "yield"
	}
	return "unknown"
}

// Decide says whether the next request of a backfill may leave at now (the runner holds one of its
// MaxInFlight slots for it already): Go, or what to wait for and how long. The rate comes first (a fire's
// start only), then the peer: a request yields while the peer is busy, for as long as it stays busy but at
// most what is left of the fire's MaxHold; a fire that has yielded MaxHold in all goes on regardless.
func (p Pacing) Decide(now time.Time, s PaceState) (Verdict, time.Duration) {
	p = p.Defaults()
	if s.FireStart && p.Rate > 0 && !s.LastFire.IsZero() {
		gap := time.Duration(float64(time.Second) / p.Rate)
		if until := s.LastFire.Add(gap).Sub(now); until > 0 {
			return RateWait, until
		}
	}
	if s.Busy > 0 {
		if left := p.MaxHold - s.Held; left > 0 {
			return Yield, min(s.Busy, left)
		}
	}
	return Go, 0
}
