package checker

import (
	"strings"
	"testing"
	"time"
)

// overlapOf makes item 0 of the fire at 10 s (peer1) last until 13 s and adds a run of the item by peer2
// arriving at 11 s for the fire at 11 s.
func overlapOf(run *Run, status int) {
	run.Deliveries[4].Answered, run.Deliveries[4].Ended, run.Deliveries[4].Status = at(13), at(13), status
	if status == 0 {
		run.History[4].Success, run.History[4].Cause = false, "cancelled: a later fire of the job runs instead"
	}
	run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "beside", Source: "NORMAL_TRIGGER",
		ScheduledAt: at(10), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
	run.History = append(run.History, Record{ExecutionID: "beside", Job: "j", Item: 0, Source: "NORMAL_TRIGGER",
		ScheduledAt: at(10), Instance: "peer2", Ended: true, Success: true})
}

// slowItem makes item 1's run of the fire at 10 s last until 17 s and drops its fire at 15 s.
func slowItem(run *Run) {
	run.Deliveries[5].Answered, run.Deliveries[5].Ended = at(17), at(17)
	remove(run, "e-15-1")
}

func TestCheckerKnowsThePolicies(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(run *Run)
		want   []string
	}{
		{"ALLOW: a run beside another peer's is no overlap", func(run *Run) {
			run.Jobs[0].Overlap = "ALLOW"
			overlapOf(run, 200)
			run.Deliveries[len(run.Deliveries)-1].ScheduledAt = at(11) // its own fire, not a double
			run.History[len(run.History)-1].ScheduledAt = at(11)
		}, nil},
		{"ALLOW: a fire missing while the item ran is lost, not excused", func(run *Run) {
			run.Jobs[0].Overlap = "ALLOW"
			slowItem(run)
		}, []string{"lost-fire"}},
		{"BUFFER_ONE (misfire): the same fire is excused", func(run *Run) { slowItem(run) }, nil},
		{"SKIP: the same fire is excused", func(run *Run) { run.Jobs[0].Overlap, run.Jobs[0].Misfire = "SKIP", false; slowItem(run) }, nil},
		{"CANCEL_PREVIOUS: a fire missing while the item ran is lost", func(run *Run) {
			run.Jobs[0].Overlap = "CANCEL_PREVIOUS"
			slowItem(run)
		}, []string{"lost-fire"}},
		{"CANCEL_PREVIOUS: the abandoned attempt may overlap its replacement", func(run *Run) {
			run.Jobs[0].Overlap = "CANCEL_PREVIOUS"
			overlapOf(run, 0)
			run.Deliveries[len(run.Deliveries)-1].ScheduledAt = at(11)
			run.History[len(run.History)-1].ScheduledAt = at(11)
		}, nil},
		{"CANCEL_PREVIOUS: an attempt that was answered is a real overlap", func(run *Run) {
			run.Jobs[0].Overlap = "CANCEL_PREVIOUS"
			overlapOf(run, 200)
			run.Deliveries[len(run.Deliveries)-1].ScheduledAt = at(11)
			run.History[len(run.History)-1].ScheduledAt = at(11)
		}, []string{"overlap"}},
		{"catchUp all: a fault excuses no fire", func(run *Run) {
			run.Jobs[0].CatchUp = "all"
			remove(run, "e-10-1")
			run.Faults = []Fault{{Kind: "kill-all", From: at(8), To: at(11), Excuses: true}}
		}, []string{"lost-fire"}},
		{"catchUp all: the MISFIRE catch-up with the fire's scheduledAt delivers it", func(run *Run) {
			run.Jobs[0].CatchUp = "all"
			run.Faults = []Fault{{Kind: "kill-all", From: at(8), To: at(11), Excuses: true}}
			for i := range run.Deliveries {
				if run.Deliveries[i].ExecutionID == "e-10-1" {
					run.Deliveries[i].Source, run.Deliveries[i].Arrived = "MISFIRE", at(11.5)
					run.Deliveries[i].Answered, run.Deliveries[i].Ended = at(11.6), at(11.6)
				}
			}
		}, nil},
		{"catchUp all: a fire older than the window is excused", func(run *Run) {
			run.Jobs[0].CatchUp, run.Jobs[0].CatchUpWindow = "all", 2*time.Second
			remove(run, "e-10-1")
			run.Faults = []Fault{{Kind: "kill-all", From: at(8), To: at(14), Excuses: true}}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := clean()
			tt.mutate(&run)
			r := Check(run)
			if got := kinds(r); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("violations %v, want %v\n%s", got, tt.want, r.Text())
			}
		})
	}
}

// Lateness is measured from dueAt (scheduledAt + jitter) when the body has one.
func TestCheckerLatenessFromDueAt(t *testing.T) {
	run := clean()
	for i := range run.Deliveries {
		d := &run.Deliveries[i]
		d.DueAt = d.ScheduledAt.Add(500 * time.Millisecond)
		d.Arrived = d.DueAt.Add(10 * time.Millisecond)
	}
	r := Check(run)
	if r.LatenessCalm.P99 != 10*time.Millisecond {
		t.Fatalf("lateness p99 %v, want 10ms from dueAt", r.LatenessCalm.P99)
	}
}
