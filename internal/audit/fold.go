package audit

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Denial is one request the API refused for its credential (401) or its role (403).
type Denial struct {
	Time      time.Time
	Source    string
	UserAgent string
	// Actor is the token or certificate name when one was recognised (403), "" for 401.
	Actor  string
	Status int
	Method string
	Path   string
}

// OtherSources is the source of the bucket that folds the sources beyond a Folder's bound in one minute.
const OtherSources = "(other sources)"

type foldKey struct {
	minute int64 // Unix minute
	source string
}

type bucket struct {
	first  Denial
	folded int // denials after the first
	status map[int]int
}

// Folder folds denials per source per minute: the first denial of a source in a minute is recorded at once,
// the rest of that minute are counted and recorded as one entry when the minute is over (Flush). At most
// maxSources sources get buckets of their own in a minute; the others share OtherSources. A Folder is not
// safe for concurrent use.
type Folder struct {
	maxSources int
	buckets    map[foldKey]*bucket
	perMinute  map[int64]int
}

// NewFolder returns a Folder that keeps at most maxSources buckets per minute (at least 1).
func NewFolder(maxSources int) *Folder {
	return &Folder{maxSources: max(maxSources, 1), buckets: map[foldKey]*bucket{}, perMinute: map[int64]int{}}
}

// Observe takes one denial: it returns the entry to record now (the first of its source's minute) and
// true, or false when the denial is folded into its bucket.
func (f *Folder) Observe(d Denial) (Entry, bool) {
	k := foldKey{minute: d.Time.Unix() / 60, source: d.Source}
	b := f.buckets[k]
	if b == nil {
		if f.perMinute[k.minute] >= f.maxSources {
			k.source = OtherSources
			b = f.buckets[k]
		}
	}
	if b != nil {
		b.folded++
		b.status[d.Status]++
		return Entry{}, false
	}
	f.buckets[k] = &bucket{first: d, status: map[int]int{}}
	if k.source != OtherSources {
		f.perMinute[k.minute]++
	}
	e := denialEntry(d, 1)
	if k.source == OtherSources {
		e.Source = OtherSources
		e.Detail += "; sources beyond the per-minute bound are folded together"
	}
	return e, true
}

// Flush returns one entry per bucket of a minute that ended at or before now and folded denials, and
// forgets those minutes.
func (f *Folder) Flush(now time.Time) []Entry {
	cur := now.Unix() / 60
	keys := slices.SortedFunc(maps.Keys(f.buckets), func(a, b foldKey) int {
		if a.minute != b.minute {
			return int(a.minute - b.minute)
		}
		if a.source < b.source {
			return -1
		}
		if a.source > b.source {
			return 1
		}
		return 0
	})
	var out []Entry
	for _, k := range keys {
		if k.minute >= cur {
			continue
		}
		b := f.buckets[k]
		delete(f.buckets, k)
		delete(f.perMinute, k.minute)
		if b.folded == 0 {
			continue
		}
		e := denialEntry(b.first, b.folded)
		e.Time = time.Unix((k.minute+1)*60, 0).UTC()
		e.Source = k.source
		e.Status = 0
		codes := slices.Sorted(maps.Keys(b.status))
		e.Detail = fmt.Sprintf("%d more refused requests from %s in the minute from %s (", b.folded, k.source,
			time.Unix(k.minute*60, 0).UTC().Format("15:04"))
		for i, c := range codes {
			if i > 0 {
				e.Detail += ", "
			}
			e.Detail += fmt.Sprintf("%d × %d", b.status[c], c)
		}
		e.Detail += "); the first was recorded on its own"
		out = append(out, e)
	}
	return out
}

// Pending returns the number of buckets held.
func (f *Folder) Pending() int { return len(f.buckets) }

func denialEntry(d Denial, count int) Entry {
	kind := ActorUnknown
	if d.Actor != "" {
		kind = ActorToken
	}
	return Entry{Time: d.Time, Actor: d.Actor, ActorKind: kind, Source: d.Source, UserAgent: d.UserAgent,
		Action: AuthDenied, Outcome: OutcomeFailed, Status: d.Status, Count: count,
		Detail: d.Method + " " + d.Path}
}
