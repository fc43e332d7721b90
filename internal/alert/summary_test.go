package alert

import (
	"testing"

	"github.com/ejserver/ejserver/internal/dispatch"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                            string
		expected                        int
		starts                          []startRecord
		ends                            []endRecord
		succeeded, failed, lost, notRun int
	}{
		{"all ended", 3, []startRecord{{Instance: "a", Items: []int{0, 1}}, {Instance: "b", Items: []int{2}}},
			[]endRecord{{Items: []ItemResult{{Item: 0, Outcome: "SUCCEEDED"}, {Item: 1, Outcome: "FAILED"}}}, {Items: []ItemResult{{Item: 2, Outcome: "SUCCEEDED"}}}},
			2, 1, 0, 0},
		{"a started item without an end is lost", 2, []startRecord{{Instance: "a", Items: []int{0}}, {Instance: "b", Items: []int{1}}},
			[]endRecord{{Items: []ItemResult{{Item: 0, Outcome: "SUCCEEDED"}}}}, 1, 0, 1, 0},
		{"an item nobody started is lost", 3, []startRecord{{Instance: "a", Items: []int{0, 1}}},
			[]endRecord{{Items: []ItemResult{{Item: 0, Outcome: "SUCCEEDED"}, {Item: 1, Outcome: "SUCCEEDED"}}}}, 2, 0, 1, 0},
		{"a failover run beats the not-run record", 1, []startRecord{{Instance: "a", Items: []int{0}}},
			[]endRecord{{Items: []ItemResult{{Item: 0, Outcome: dispatch.OutcomeSucceeded, Source: "FAILOVER"}}}, {Items: []ItemResult{{Item: 0, Outcome: dispatch.OutcomeNotRun}}}},
			1, 0, 0, 0},
		{"misfired items are neither", 2, []startRecord{{Instance: "a", Items: []int{0, 1}}},
			[]endRecord{{Items: []ItemResult{{Item: 0, Outcome: dispatch.OutcomeMisfire}, {Item: 1, Outcome: "SUCCEEDED"}}}}, 1, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := summarize(tt.expected, tt.starts, tt.ends)
			c := s.Counts
			if c.Succeeded != tt.succeeded || c.Failed != tt.failed || c.Lost != tt.lost || c.NotRun != tt.notRun || c.Items != tt.expected {
				t.Fatalf("counts %+v", c)
			}
			e := s.event()
			if e.Counts.Failed+e.Counts.Lost != len(e.Items) {
				t.Fatalf("event %+v lists %d items", e.Counts, len(e.Items))
			}
		})
	}
}
