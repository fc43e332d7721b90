package schedule

import "fmt"

// Overlap is a job's overlapPolicy: what a fire does when the previous fire's item is still running.
type Overlap string

// The overlap policies. BUFFER_ONE and SKIP are ElasticJob's misfire true and false.
const (
	BufferOne      Overlap = "BUFFER_ONE"
	Skip           Overlap = "SKIP"
	Allow          Overlap = "ALLOW"
	CancelPrevious Overlap = "CANCEL_PREVIOUS"
)

// Overlaps lists the policies in the order the API documents them.
var Overlaps = []Overlap{BufferOne, Skip, Allow, CancelPrevious}

// Valid reports whether p is one of the policies (empty is not: it derives from misfire).
func (p Overlap) Valid() bool {
	switch p {
	case BufferOne, Skip, Allow, CancelPrevious:
		return true
	}
	return false
}

// EffectiveOverlap is the policy a job runs with: its overlapPolicy, or, empty, the one its misfire field
// means (ElasticJob's behaviour, so jobs that never set overlapPolicy run as before).
func EffectiveOverlap(policy string, misfire bool) Overlap {
	if policy != "" {
		return Overlap(policy)
	}
	if misfire {
		return BufferOne
	}
	return Skip
}

// MisfireOf is the misfire value a policy stores in ElasticJob's config, so an ElasticJob peer reading it
// behaves as close to the policy as it can: BUFFER_ONE is misfire true, every other policy false (none of
// them buffers a catch-up).
func MisfireOf(p Overlap) bool { return p == BufferOne }

// OverlapConflict returns why a job's overlapPolicy and misfire disagree ("" when they agree). misfireSet
// says whether the request set misfire itself; a misfire left at its default follows the policy.
func OverlapConflict(policy string, misfire, misfireSet bool) string {
	p := Overlap(policy)
	if policy == "" || !p.Valid() || !misfireSet || MisfireOf(p) == misfire {
		return ""
	}
	return fmt.Sprintf("overlapPolicy %s means misfire %t, but misfire is %t: set one of them, or both consistently", p, MisfireOf(p), misfire)
}

// Action is what a fire does with one item whose previous run is still in flight.
type Action int

// The actions of OnBusy.
const (
	// Queue: a manual trigger runs right after the running item (every policy).
	Queue Action = iota
	// Buffer: record a misfire; one catch-up (source MISFIRE) follows the running item's end.
	Buffer
	// SkipFire: record a skipped fire; nothing follows.
	SkipFire
	// RunAlongside: start a second execution beside the running one (its own execution id).
	RunAlongside
	// CancelThenRun: end the running attempt as cancelled, then run this fire.
	CancelThenRun
)

func (a Action) String() string {
	return [...]string{"queue", "buffer", "skip", "run-alongside", "cancel-then-run"}[a]
}

// OnBusy decides what a fire does for an item still running from an earlier fire. manual: the fire is an
// operator's trigger, queued behind the running item whatever the policy (as today). Catch-up and failover
// runs are not fires of their own: they never overlap (catchUp says whether they run at all).
func OnBusy(p Overlap, manual bool) Action {
	if manual {
		return Queue
	}
	switch p {
	case Skip:
		return SkipFire
	case Allow:
		return RunAlongside
	case CancelPrevious:
		return CancelThenRun
	}
	return Buffer
}
