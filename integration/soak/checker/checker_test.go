package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// clean is a run of one job every 5 s with 2 items over 30 s, every item delivered once by its owner,
// answered 200 at once and recorded as a success.
func clean() Run {
	run := Run{From: t0, To: at(30), Grace: 10 * time.Second,
		Jobs: []Job{{Name: "j", Cron: "*/5 * * * * ?", Misfire: true, Totals: []Total{{At: t0.Add(-time.Minute), Total: 2}}}}}
	for s := 0; s < 30; s += 5 {
		for item := range 2 {
			id := fmt.Sprintf("e-%d-%d", s, item)
			inst := fmt.Sprintf("peer%d", item+1)
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: item, ExecutionID: id, Source: "NORMAL_TRIGGER",
				ScheduledAt: at(float64(s)), Instance: inst, Attempt: 1, Arrived: at(float64(s) + 0.01),
				Answered: at(float64(s) + 0.02), Ended: at(float64(s) + 0.02), Status: 200})
			run.History = append(run.History, Record{ExecutionID: id, Job: "j", Item: item, Source: "NORMAL_TRIGGER",
				ScheduledAt: at(float64(s)), Instance: inst, Ended: true, Success: true, StatusCode: 200})
		}
	}
	return run
}

func kinds(r Report) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Kind)
	}
	return out
}

func TestCheckerCleanRunHasNoViolations(t *testing.T) {
	r := Check(clean())
	if len(r.Violations) > 0 {
		t.Fatalf("violations in a clean run:\n%s", r.Text())
	}
	if r.FiresExpected != 12 || r.FiresDelivered != 12 {
		t.Fatalf("expected %d delivered %d, want 12 and 12", r.FiresExpected, r.FiresDelivered)
	}
}

// remove drops the deliveries and history rows of execution id.
func remove(run *Run, id string) {
	var ds []Delivery
	for _, d := range run.Deliveries {
		if d.ExecutionID != id {
			ds = append(ds, d)
		}
	}
	var hs []Record
	for _, h := range run.History {
		if h.ExecutionID != id {
			hs = append(hs, h)
		}
	}
	run.Deliveries, run.History = ds, hs
}

// inFlight drops item 1's fire at 10 s (peer2's), makes the largest lateness outside faults 0.5 s (item 1's
// fire at 5 s) and freezes peer from at(from) to 12 s.
func inFlight(run *Run, peer string, from float64) {
	remove(run, "e-10-1")
	d := &run.Deliveries[3]
	d.Arrived, d.Answered, d.Ended = at(5.5), at(5.51), at(5.51)
	run.Faults = []Fault{{Kind: "freeze-peer", Instances: []string{peer}, From: at(from), To: at(12), Excuses: true}}
}

// twice adds a second run of item 0's fire at 10 s by peer2, 1.3 s later (as the item's new owner after a
// resharding would run it).
func twice(run *Run) {
	run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "again", Source: "NORMAL_TRIGGER",
		ScheduledAt: at(10), Instance: "peer2", Attempt: 1, Arrived: at(11.3), Answered: at(11.31), Ended: at(11.31), Status: 200})
	run.History = append(run.History, Record{ExecutionID: "again", Job: "j", Item: 0, Source: "NORMAL_TRIGGER",
		ScheduledAt: at(10), Instance: "peer2", Ended: true, Success: true, StatusCode: 200})
}

func TestCheckerReportsEachViolation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(run *Run)
		want   []string // violation kinds, in time order
	}{
		{"a lost fire", func(run *Run) { remove(run, "e-10-1") }, []string{"lost-fire"}},
		{"a lost fire inside a fault window is excused", func(run *Run) {
			remove(run, "e-10-1")
			run.Faults = []Fault{{Kind: "kill-peer", Instances: []string{"peer2"}, From: at(8), To: at(9), Excuses: true}}
		}, nil},
		{"a fire unsent when its owner froze just after its time is excused", func(run *Run) {
			inFlight(run, "peer2", 10.3)
		}, nil},
		{"a fire its owner had longer than the largest lateness before it froze is lost", func(run *Run) {
			inFlight(run, "peer2", 10.6)
		}, []string{"lost-fire"}},
		{"a fire is not excused by another peer's freeze just after its time", func(run *Run) {
			inFlight(run, "peer1", 10.3)
		}, []string{"lost-fire"}},
		{"a receiver's fault does not excuse a lost fire", func(run *Run) {
			remove(run, "e-10-1")
			run.Faults = []Fault{{Kind: "receiver-5xx", From: at(8), To: at(9)}}
		}, []string{"lost-fire"}},
		{"a fire skipped while the job was disabled is excused", func(run *Run) {
			remove(run, "e-10-0")
			remove(run, "e-10-1")
			run.Jobs[0].Disabled = []Window{{at(9), at(11)}}
		}, nil},
		{"a double delivery with two ids", func(run *Run) {
			d := run.Deliveries[4] // item 0 of the fire at 10 s
			d.ExecutionID, d.Instance, d.Arrived, d.Answered, d.Ended = "other", "peer2", at(12), at(12.1), at(12.1)
			run.Deliveries = append(run.Deliveries, d)
			run.History = append(run.History, Record{ExecutionID: "other", Job: "j", Item: 0, Source: "NORMAL_TRIGGER",
				ScheduledAt: at(10), Instance: "peer2", Ended: true, Success: true})
		}, []string{"double-delivery"}},
		{"an overlap: one item run by two peers at once", func(run *Run) {
			run.Deliveries[4].Answered, run.Deliveries[4].Ended = at(13), at(13) // item 0 by peer1 from 10 s to 13 s
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "manual", Source: "MANUAL",
				ScheduledAt: at(11), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
			run.History = append(run.History, Record{ExecutionID: "manual", Job: "j", Item: 0, Source: "MANUAL",
				ScheduledAt: at(11), Instance: "peer2", Ended: true, Success: true})
		}, []string{"overlap"}},
		{"an overlap by a frozen peer is excused", func(run *Run) {
			run.Deliveries[4].Answered, run.Deliveries[4].Ended = at(13), at(13)
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "manual", Source: "MANUAL",
				ScheduledAt: at(11), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
			run.History = append(run.History, Record{ExecutionID: "manual", Job: "j", Item: 0, Source: "MANUAL",
				ScheduledAt: at(11), Instance: "peer2", Ended: true, Success: true})
			run.Faults = []Fault{{Kind: "freeze-peer", Instances: []string{"peer1"}, From: at(10.5), To: at(12), Excuses: true}}
		}, nil},
		{"a workflow node's fire beside the scheduled one is no double delivery", func(run *Run) {
			// a workflow node fires the job's item 0 at 10 s too (source WORKFLOW, its own execution id)
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "wf", Source: "WORKFLOW",
				ScheduledAt: at(10), Instance: "peer2", Attempt: 1, Arrived: at(14), Answered: at(14.1), Ended: at(14.1), Status: 200})
			run.History = append(run.History, Record{ExecutionID: "wf", Job: "j", Item: 0, Source: "WORKFLOW",
				ScheduledAt: at(10), Instance: "peer2", Ended: true, Success: true})
		}, nil},
		{"a workflow node's fire missing from the history", func(run *Run) {
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "wf", Source: "WORKFLOW",
				ScheduledAt: at(10), Instance: "peer2", Attempt: 1, Arrived: at(14), Answered: at(14.1), Ended: at(14.1), Status: 200})
		}, []string{"missing-history"}},
		{"a backfill's fires, past ones and one beside the schedule's own run, are neither doubles nor overlaps", func(run *Run) {
			run.Deliveries[4].Answered, run.Deliveries[4].Ended = at(13), at(13) // item 0's own run at 10 s lasts until 13 s
			for i, when := range []float64{-600, -300, 10} {
				id := fmt.Sprintf("bf-%d", i)
				run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: id, Source: "BACKFILL",
					ScheduledAt: at(when), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
				run.History = append(run.History, Record{ExecutionID: id, Job: "j", Item: 0, Source: "BACKFILL",
					ScheduledAt: at(when), Instance: "peer2", Ended: true, Success: true})
			}
		}, nil},
		{"a backfill's delivery does not stand for the schedule's lost fire", func(run *Run) {
			remove(run, "e-10-1")
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 1, ExecutionID: "bf", Source: "BACKFILL",
				ScheduledAt: at(10), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
			run.History = append(run.History, Record{ExecutionID: "bf", Job: "j", Item: 1, Source: "BACKFILL",
				ScheduledAt: at(10), Instance: "peer2", Ended: true, Success: true})
		}, []string{"lost-fire"}},
		{"a backfill's fire delivered under two webhook-ids", func(run *Run) {
			for _, id := range []string{"bf-a", "bf-b"} {
				run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: id, Source: "BACKFILL",
					ScheduledAt: at(-600), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
				run.History = append(run.History, Record{ExecutionID: id, Job: "j", Item: 0, Source: "BACKFILL",
					ScheduledAt: at(-600), Instance: "peer2", Ended: true, Success: true})
			}
		}, []string{"double-delivery"}},
		{"a backfill's past fire missing from the history", func(run *Run) {
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "bf", Source: "BACKFILL",
				ScheduledAt: at(-600), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
		}, []string{"missing-history"}},
		{"history disagrees: a failure the receiver answered 200", func(run *Run) {
			run.History[5].Success, run.History[5].Cause = false, "timeout"
		}, []string{"history-disagrees"}},
		{"history disagrees: a success the receiver never gave", func(run *Run) {
			run.Deliveries[5].Status = 503
		}, []string{"history-disagrees"}},
		{"a delivered execution missing from the history", func(run *Run) {
			run.History = run.History[1:]
		}, []string{"missing-history"}},
		{"an execution left RUNNING", func(run *Run) {
			run.History[3].Ended, run.History[3].Success = false, false
		}, []string{"left-running"}},
		{"an accepted item completed by callback agrees", func(run *Run) {
			run.Deliveries[2].Status, run.Deliveries[2].Completed, run.Deliveries[2].Ended = 202, "SUCCEEDED", at(7)
		}, nil},
		{"a streaming run stopped after a 2xx asking for more may be a success or, cancelled, a failure", func(run *Run) {
			run.Deliveries[2].More = true
			run.Deliveries[3].More = true
			run.History[3].Success, run.History[3].Cause = false, "cancelled: the job was disabled"
		}, nil},
		{"a streaming run's iterations carry their own webhook-ids, one executionId", func(run *Run) {
			d := run.Deliveries[2]
			d.WebhookID, d.Iteration = d.ExecutionID+".2", 2
			run.Deliveries[2].WebhookID, run.Deliveries[2].Iteration, run.Deliveries[2].More = d.ExecutionID, 1, true
			run.Deliveries = append(run.Deliveries, d)
		}, nil},
		{"an unmonitored execution missing with its killed peer is outside the guarantee", func(run *Run) {
			run.Jobs[0].Unmonitored = true
			run.History = append(run.History[:3], run.History[4:]...) // e-5-1, by peer2 at 5.01 s
			run.Faults = []Fault{{Kind: "kill-peer", Instances: []string{"peer2"}, From: at(5.5), To: at(6), Excuses: true, Kills: true}}
		}, nil},
		{"an unmonitored execution left RUNNING by its killed peer is outside the guarantee", func(run *Run) {
			run.Jobs[0].Unmonitored = true
			run.History[3].Ended, run.History[3].Success = false, false
			run.Faults = []Fault{{Kind: "kill-peer", Instances: []string{"peer2"}, From: at(5.5), To: at(6), Excuses: true, Kills: true}}
		}, nil},
		{"an unmonitored execution missing without a kill is a violation", func(run *Run) {
			run.Jobs[0].Unmonitored = true
			run.History = append(run.History[:3], run.History[4:]...)
			run.Faults = []Fault{{Kind: "freeze-peer", Instances: []string{"peer2"}, From: at(5.5), To: at(6), Excuses: true}}
		}, []string{"missing-history"}},
		{"a monitored execution missing with its killed peer is a violation", func(run *Run) {
			run.History = append(run.History[:3], run.History[4:]...)
			run.Faults = []Fault{{Kind: "kill-peer", Instances: []string{"peer2"}, From: at(5.5), To: at(6), Excuses: true, Kills: true}}
		}, []string{"missing-history"}},
		{"an unmonitored job's item may run on two peers at once", func(run *Run) {
			run.Jobs[0].Unmonitored = true
			run.Deliveries[4].Answered, run.Deliveries[4].Ended = at(13), at(13)
			run.Deliveries = append(run.Deliveries, Delivery{Job: "j", Item: 0, ExecutionID: "manual", Source: "MANUAL",
				ScheduledAt: at(11), Instance: "peer2", Attempt: 1, Arrived: at(11), Answered: at(11.1), Ended: at(11.1), Status: 200})
			run.History = append(run.History, Record{ExecutionID: "manual", Job: "j", Item: 0, Source: "MANUAL",
				ScheduledAt: at(11), Instance: "peer2", Ended: true, Success: true})
		}, nil},
		{"an unmonitored job's fire run by its old and new owner across a fault's resharding", func(run *Run) {
			run.Jobs[0].Unmonitored = true
			twice(run)
			run.Faults = []Fault{{Kind: "kill-peer", Instances: []string{"peer1"}, From: at(9), To: at(10.5), Excuses: true, Kills: true}}
		}, nil},
		{"an unmonitored job's fire run twice outside every fault window is a violation", func(run *Run) {
			run.Jobs[0].Unmonitored = true
			twice(run)
		}, []string{"double-delivery"}},
		{"a monitored job's fire run by two owners in a fault's window is a violation", func(run *Run) {
			twice(run)
			run.Faults = []Fault{{Kind: "kill-peer", Instances: []string{"peer1"}, From: at(9), To: at(10.5), Excuses: true, Kills: true}}
		}, []string{"double-delivery"}},
		{"an accepted item whose completion was sent but its answer lost, recorded as a success, agrees", func(run *Run) {
			run.Deliveries[2].Status, run.Deliveries[2].CompletionSent = 202, true
		}, nil},
		{"an accepted item never completed but recorded as a success", func(run *Run) {
			run.Deliveries[2].Status = 202
		}, []string{"history-disagrees"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := clean()
			tt.mutate(&run)
			r := Check(run)
			if got := kinds(r); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("violations %v, want %v\n%s", got, tt.want, r.Text())
			}
			for _, v := range r.Violations {
				if len(v.Around) == 0 {
					t.Fatalf("violation without the events around it: %s", v)
				}
			}
		})
	}
}

func TestCheckerRecoveryAndLateness(t *testing.T) {
	run := clean()
	remove(&run, "e-10-1")
	remove(&run, "e-15-1")
	run.Faults = []Fault{{Kind: "kill-peer", Instances: []string{"peer2"}, From: at(9), To: at(9.5), Excuses: true}}
	r := Check(run)
	if len(r.Violations) > 0 {
		t.Fatal(r.Text())
	}
	// the fires at 10 and 15 s were incomplete: whole again from 20 s, 11 s after the fault began
	if q := r.RecoveryByKind["kill-peer"]; q.N != 1 || q.Max != 11*time.Second {
		t.Fatalf("recovery %+v, want 11s", q)
	}
	if r.LatenessCalm.N != 8 || r.LatenessFault.N != 2 || r.LatenessCalm.Max != 10*time.Millisecond {
		t.Fatalf("lateness calm %v faulted %v", r.LatenessCalm, r.LatenessFault)
	}
	if !strings.Contains(r.Text(), "kill-peer") {
		t.Fatal(r.Text())
	}
}

func FuzzCheckerNeverPanics(f *testing.F) {
	f.Add(int64(3), int64(7), 2)
	f.Fuzz(func(t *testing.T, a, b int64, n int) {
		run := clean()
		if n >= 0 && n < len(run.Deliveries) {
			run.Deliveries[n].Arrived = at(float64(a % 60))
			run.Deliveries[n].Answered = at(float64(b % 60))
		}
		_ = Check(run).Text()
	})
}

// TestCheckerKnowsPauseAndSteering: fires a pause or the job's calendars/endAt/remainingFires leave out are
// excused when missing and a violation when delivered.
func TestCheckerKnowsPauseAndSteering(t *testing.T) {
	run := clean()
	run.Jobs[0].Paused = []Window{{From: at(8), To: at(17)}} // the fires at 10 and 15
	run.Jobs[0].Skips = func(ts time.Time) string {          // the fire at 25: "calendar"
		if ts.Equal(at(25)) {
			return "calendar: test"
		}
		return ""
	}
	for _, id := range []string{"e-10-0", "e-10-1", "e-15-0", "e-15-1", "e-25-0"} {
		remove(&run, id)
	}
	r := Check(run)
	got := kinds(r)
	if len(got) != 1 || got[0] != "fire-not-skipped" || !r.Violations[0].At.Equal(at(25)) || r.Violations[0].Item != 1 {
		t.Fatalf("violations %v, want one fire-not-skipped (item 1 at 25 s):\n%s", got, r.Text())
	}
	if r.Excused["job paused"] != 4 || r.Excused["calendar: test"] != 1 {
		t.Fatalf("excused %v", r.Excused)
	}
}
