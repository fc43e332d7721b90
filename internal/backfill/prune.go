package backfill

import (
	"time"
)

// DefaultRetention is how long an ended backfill's node stays in ZooKeeper (its progress readable in the API
// and console) before it is pruned: as long as the execution history its fires are in.
const DefaultRetention = 7 * 24 * time.Hour

// Prune picks the backfills whose nodes go: every one of a job that no longer exists (gone says so; a
// running one's owner then stops at its next write), and those that ended more than retention before now.
// A running backfill of a live job is never picked.
func Prune(bs []Backfill, now time.Time, retention time.Duration, gone func(job string) bool) []Backfill {
	var out []Backfill
	for _, b := range bs {
		switch {
		case gone(b.Job):
			out = append(out, b)
		case b.State.Ended() && !b.EndedAt.IsZero() && now.Sub(b.EndedAt) > retention:
			out = append(out, b)
		}
	}
	return out
}
