package alert

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/notify"
)

// startRecord is the data of a fire's s- node: a peer started these items.
type startRecord struct {
	Instance    string    `json:"instance"`
	Items       []int     `json:"items"`
	ScheduledAt time.Time `json:"scheduledAt"`
	Source      string    `json:"source"`
}

// endRecord is the data of a fire's e- node: these items ended.
type endRecord struct {
	Items []ItemResult `json:"items"`
}

// ItemResult is one item's end as the ledger keeps it and the afterFire hook reports it.
type ItemResult struct {
	Item        int       `json:"item"`
	Outcome     string    `json:"outcome"` // SUCCEEDED, FAILED, EXPIRED, CANCELLED, NOT_RUN, MISFIRE, SKIPPED, LOST
	Status      int       `json:"status,omitempty"`
	Error       string    `json:"error,omitempty"`
	ExecutionID string    `json:"executionId,omitempty"`
	Instance    string    `json:"instance,omitempty"`
	Source      string    `json:"source,omitempty"`
	StartedAt   time.Time `json:"startedAt,omitzero"`
	DurationMs  int64     `json:"durationMs,omitempty"`
	// Output is a workflow node's item output (its response's `output`, or its async completion's).
	Output json.RawMessage `json:"output,omitempty"`
}

// OutcomeLost: an item that started on a peer that vanished without ending it (and no failover ended it),
// or that no peer started at all.
const OutcomeLost = "LOST"

// Summary is a whole fire once every item has ended: the afterFire hook's body and the FireEnded event.
type Summary struct {
	Event       string         `json:"event"` // "afterFire"
	Namespace   string         `json:"namespace"`
	JobName     string         `json:"jobName"`
	Fire        string         `json:"fire"`
	ScheduledAt time.Time      `json:"scheduledAt"`
	Source      string         `json:"source"`
	Counts      SummaryCounts  `json:"counts"`
	StartedAt   time.Time      `json:"startedAt,omitzero"` // the first item's start
	EndedAt     time.Time      `json:"endedAt,omitzero"`   // the last item's end
	DurationMs  int64          `json:"durationMs"`
	Sources     map[string]int `json:"sources,omitempty"` // items by the source of their last run
	Items       []ItemResult   `json:"items"`
}

// SummaryCounts are a fire's items by outcome.
type SummaryCounts struct {
	Items     int `json:"items"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Lost      int `json:"lost"`
	NotRun    int `json:"notRun"`
}

func ran(outcome string) bool {
	switch outcome {
	case dispatch.OutcomeSucceeded, dispatch.OutcomeFailed, dispatch.OutcomeExpired, dispatch.OutcomeCancelled:
		return true
	}
	return false
}

// summarize folds a fire's ledger records into its summary. An item's outcome is its last run's (a run
// beats a not-run record); a started item without an end, and an expected item nobody started, is LOST.
func summarize(expected int, starts []startRecord, ends []endRecord) Summary {
	var s Summary
	final := map[int]ItemResult{}
	for _, e := range ends {
		for _, r := range e.Items {
			old, seen := final[r.Item]
			if !seen || ran(r.Outcome) || !ran(old.Outcome) {
				final[r.Item] = r
			}
		}
	}
	started := map[int]bool{}
	for _, st := range starts {
		if s.ScheduledAt.IsZero() || st.Source == string(ejserver.SourceNormal) {
			s.ScheduledAt, s.Source = st.ScheduledAt, st.Source
		}
		for _, i := range st.Items {
			started[i] = true
			if _, ok := final[i]; !ok {
				final[i] = ItemResult{Item: i, Outcome: OutcomeLost, Instance: st.Instance,
					Error: "its peer vanished before the item ended"}
			}
		}
	}
	for i := 0; len(final) < expected; i++ {
		if _, ok := final[i]; !ok {
			final[i] = ItemResult{Item: i, Outcome: OutcomeLost, Error: "no peer started it"}
		}
	}
	s.Sources = map[string]int{}
	for _, r := range final {
		s.Items = append(s.Items, r)
		switch {
		case r.Outcome == dispatch.OutcomeSucceeded:
			s.Counts.Succeeded++
		case r.Outcome == OutcomeLost:
			s.Counts.Lost++
		case ran(r.Outcome):
			s.Counts.Failed++
		default:
			s.Counts.NotRun++
		}
		if r.Source != "" {
			s.Sources[r.Source]++
		}
		if !r.StartedAt.IsZero() {
			if s.StartedAt.IsZero() || r.StartedAt.Before(s.StartedAt) {
				s.StartedAt = r.StartedAt
			}
			if end := r.StartedAt.Add(time.Duration(r.DurationMs) * time.Millisecond); end.After(s.EndedAt) {
				s.EndedAt = end
			}
		}
	}
	slices.SortFunc(s.Items, func(a, b ItemResult) int { return a.Item - b.Item })
	s.Counts.Items = len(s.Items)
	if !s.StartedAt.IsZero() {
		s.DurationMs = s.EndedAt.Sub(s.StartedAt).Milliseconds()
	}
	return s
}

// event turns a summary into the alert core's FireEnded event.
func (s Summary) event() Event {
	e := Event{Type: FireEnded, Fire: s.Fire, ScheduledAt: s.ScheduledAt,
		Counts: notify.Counts{Items: s.Counts.Items, Succeeded: s.Counts.Succeeded, Failed: s.Counts.Failed, Lost: s.Counts.Lost}}
	for _, r := range s.Items {
		if r.Outcome == OutcomeLost || (ran(r.Outcome) && r.Outcome != dispatch.OutcomeSucceeded) {
			e.Items = append(e.Items, r.sample())
		}
	}
	return e
}

func (r ItemResult) sample() notify.Sample {
	return notify.Sample{Item: r.Item, ExecutionID: r.ExecutionID, Instance: r.Instance, Outcome: r.Outcome,
		Status: r.Status, Error: r.Error}
}
