package backfill

import "time"

// Pacing bounds what a backfill takes from its peer, so that it never starves the job's own schedule or
// other jobs: at most MaxInFlight of its requests are out at once, fires start at most Rate per second, and
// no request leaves while the peer is busy sending scheduled fires (the executor's Activity says for how
// long).
type Pacing struct {
	MaxInFlight int     // requests of this backfill in flight at once (default 4)
	Rate        float64 // fires started per second (default 50; <0: no bound)
}

// Defaults fills the zero fields.
func (p Pacing) Defaults() Pacing {
	if p.MaxInFlight <= 0 {
		p.MaxInFlight = 4
	}
	if p.Rate == 0 {
		p.Rate = 50
	}
	return p
}

// Wait returns how long the next request must wait: 0 to go now, or how long until the reason to wait may
// have passed. inFlight is this backfill's requests out now; lastStart when its last fire started (zero:
// none yet); busy how long the peer expects to stay busy with scheduled fires; fireStart whether the
// request is the first of a fire (the rate bounds fires, not items).
func (p Pacing) Wait(now, lastStart time.Time, inFlight int, busy time.Duration, fireStart bool) (wait time.Duration, slotFull bool) {
	p = p.Defaults()
	if inFlight >= p.MaxInFlight {
		return 0, true
	}
	if busy > 0 {
		wait = busy
	}
	if fireStart && p.Rate > 0 && !lastStart.IsZero() {
		gap := time.Duration(float64(time.Second) / p.Rate)
		if until := lastStart.Add(gap).Sub(now); until > wait {
			wait = until
		}
	}
	return wait, false
}
