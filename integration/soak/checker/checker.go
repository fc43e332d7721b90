// Package checker judges a soak run from values alone: the jobs' schedules, the faults' windows, what the
// receivers saw and what the history store holds. It is the nemesis soak's oracle (integration/cmd/soak) and
// knows ElasticJob's rules, so that a fire nobody could have run is not called lost:
//
//   - every (job, scheduled fire, item) that should have run was delivered: fires inside a fault window (or
//     its recovery grace), while the job or the item was disabled, or while the item was still running
//     (misfire rules) are excused and counted as such;
//   - no item of one fire was delivered under two different webhook-ids (two executionIds: a streaming job's
//     iterations carry {executionId}.{n}, one run's ids by design);
//   - no item was run by two peers at once (a peer frozen, cut off or killed while its request was out is
//     not fenced from a request already sent, so its overlaps are excused);
//   - a job's overlapPolicy and catchUp (issue 24) change the rules: ALLOW overlaps are allowed and a fire that
//     found the item running is not excused (it runs beside it); CANCEL_PREVIOUS's fires are not excused
//     either, and the attempt it cancels (its request abandoned) may overlap the one that replaced it; with
//     catchUp all a fault excuses no fire within catchUpWindowSeconds (a MISFIRE catch-up with the fire's
//     scheduledAt delivers it); lateness is measured from the payload's dueAt (scheduledAt + jitter);
//   - after the run settled, no execution is left RUNNING in the history, and the history agrees with the
//     receivers: every delivered execution is recorded, a success is recorded only if the receiver gave
//     one, and a success the receiver gave (to a peer that was not faulted) is not recorded as a failure.
//
// The guarantee it checks is docs/reliability.md's.
package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ejserver/ejserver/internal/cronexpr"
)

// Run is everything the checker looks at.
type Run struct {
	// Fires scheduled in [From, To) are checked.
	From, To time.Time
	Jobs     []Job
	Faults   []Fault
	// Grace is how long after a fault ends its effects are excused (a session timeout, a resharding and a
	// fire period: the time the cluster needs to notice and re-balance).
	Grace      time.Duration
	Deliveries []Delivery
	History    []Record
}

// Job is one job's schedule and the changes made to it during the run.
type Job struct {
	Name     string
	Cron     string // Quartz or Unix, UTC; "" = manual triggers only
	Misfire  bool
	Failover bool
	Async    bool // its receiver answers 202 and completes by callback
	// Unmonitored: monitorExecution is false, so its items have no running node (docs/reliability.md): an
	// execution whose peer was killed mid-request may be missing from the history or left RUNNING there, and
	// a resharding does not wait for its items, so two peers may run one item at once after it.
	Unmonitored bool
	// Overlap is the job's overlapPolicy ("" follows Misfire); CatchUp its catchUp ("" none) and
	// CatchUpWindow its catchUpWindowSeconds as a duration (0: no bound).
	Overlap       string
	CatchUp       string
	CatchUpWindow time.Duration
	// Totals is shardingTotalCount over time, ascending: the first entry's At is at or before From.
	Totals []Total
	// Disabled are the windows the job was disabled; ItemDisabled per item.
	Disabled     []Window
	ItemDisabled map[int][]Window
	// Paused are the windows the job was paused (issue 24). Skips, if set, says why the job's calendars,
	// endAt or remainingFires leave the scheduled fire at t out ("" when it runs), as the executor decides
	// (internal/calendar). Both excuse a missing fire; a fire Skips leaves out, or one scheduled inside a
	// pause (a second's grace at either end), that was delivered is a violation: "fire-not-skipped".
	Paused []Window
	Skips  func(t time.Time) string
}

// Total is a shardingTotalCount in force from At.
type Total struct {
	At    time.Time
	Total int
}

// Window is a time range [From, To].
type Window struct{ From, To time.Time }

func (w Window) has(t time.Time) bool { return !t.Before(w.From) && !t.After(w.To) }

// Fault is one injected fault. Instances are the peers' instance ids it hit (none: cluster-wide or a
// receiver's). Excuses says whether fires in its window may be missed (a receiver's fault does not lose
// fires; a peer's or ZooKeeper's may).
type Fault struct {
	Kind      string
	Target    string
	Instances []string
	From, To  time.Time
	Excuses   bool
	Kills     bool // the peer was killed (kill -9): what it held in memory is gone
}

// Delivery is one request a receiver got.
type Delivery struct {
	Job         string
	Item        int
	ExecutionID string // the payload's executionId: the run's id, the webhook-id's base
	WebhookID   string // the webhook-id header: the executionId, with ".{n}" for a streaming job's n-th iteration
	Source      string
	ScheduledAt time.Time
	DueAt       time.Time // the payload's dueAt (a job with jitterMs): lateness is measured from it
	Instance    string
	Attempt     int
	Iteration   int
	Arrived     time.Time
	Answered    time.Time // when the receiver answered (or the client went away)
	Status      int       // the receiver's answer; 0: the client went away first
	More        bool      // a streaming job's receiver asked for another iteration: not the run's end
	// Ended is when the item's run ended as the receiver saw it: Answered, or for an accepted (202) item the
	// time of its completion callback (zero if none was sent).
	Ended time.Time
	// Completed is the outcome the receiver reported by callback (accepted items) and heard acknowledged:
	// "SUCCEEDED", "FAILED".
	Completed string
	// CompletionSent: the receiver sent a success completion, whether or not it heard the answer (a peer may
	// apply it after the receiver's client gave up, and the history then rightly says SUCCEEDED).
	CompletionSent bool
}

// Record is one execution in the history store.
type Record struct {
	ExecutionID string
	Job         string
	Item        int
	Source      string
	ScheduledAt time.Time
	Instance    string
	Ended       bool
	Success     bool
	StatusCode  int
	Cause       string
}

// Violation is one broken rule, with the events around it.
type Violation struct {
	Kind   string // lost-fire, double-delivery, overlap, left-running, missing-history, history-disagrees
	Job    string
	Item   int
	At     time.Time
	Detail string
	Around []string
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: job %s item %d at %s: %s", v.Kind, v.Job, v.Item, v.At.UTC().Format("15:04:05.000"), v.Detail)
	for _, a := range v.Around {
		b.WriteString("\n    " + a)
	}
	return b.String()
}

// Report is the checker's verdict.
type Report struct {
	FiresExpected  int // (job, fire, item) triples scheduled in the window
	FiresDelivered int
	Excused        map[string]int // by reason
	Deliveries     int
	Executions     int
	HistoryRows    int
	// OutsideGuarantee counts the executions of unmonitored jobs missing from the history or left RUNNING
	// there because their peer was killed mid-request (docs/reliability.md: outside the guarantee).
	OutsideGuarantee int
	FaultsByKind     map[string]int
	// RecoveryByKind: per fault kind, the time from each fault's start until the fast jobs' fires were whole
	// again (p50, max).
	RecoveryByKind map[string]Quantiles
	// Lateness of first attempts of scheduled fires, outside and during faults.
	LatenessCalm, LatenessFault Quantiles
	Violations                  []Violation
}

// Quantiles summarise durations.
type Quantiles struct {
	N             int
	P50, P99, Max time.Duration
}

func quantiles(ds []time.Duration) Quantiles {
	if len(ds) == 0 {
		return Quantiles{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return Quantiles{N: len(ds), P50: at(0.5), P99: at(0.99), Max: ds[len(ds)-1]}
}

func (q Quantiles) String() string {
	if q.N == 0 {
		return "n=0"
	}
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("n=%d p50=%s p99=%s max=%s", q.N, r(q.P50), r(q.P99), r(q.Max))
}

// around is how far either side of a violation its events are listed.
const around = 10 * time.Second

// Check judges a run.
func Check(run Run) Report {
	c := &check{run: run, rep: Report{Excused: map[string]int{}, FaultsByKind: map[string]int{},
		RecoveryByKind: map[string]Quantiles{}, Deliveries: len(run.Deliveries), HistoryRows: len(run.History)}}
	c.index()
	c.lateness()
	c.inFlight = min(c.rep.LatenessCalm.Max, maxInFlight)
	c.fires()
	c.doubles()
	c.overlaps()
	c.history()
	c.recovery()
	sort.SliceStable(c.rep.Violations, func(i, j int) bool { return c.rep.Violations[i].At.Before(c.rep.Violations[j].At) })
	return c.rep
}

type itemKey struct {
	job  string
	item int
}

type check struct {
	run    Run
	rep    Report
	byItem map[itemKey][]Delivery // sorted by arrival
	byExec map[string][]Delivery
	// incomplete: per fast job, the fire times with an item neither delivered nor excused by disabling
	incomplete map[string][]time.Time
	period     map[string]time.Duration
	// inFlight: how long a fire may stay unsent on a working peer, the largest lateness seen outside faults
	// (at most maxInFlight): a peer stopped that long after a fire's time may take it unsent (stoppedBefore)
	inFlight time.Duration
}

// stoppedOwner reports whether the fire at t of item k was unsent when its owner stopped (stoppedBefore),
// and the job's rules excuse a fire that fault took.
func (c *check) stoppedOwner(j Job, k itemKey, t time.Time) bool {
	f, ok := c.stoppedBefore(k, t)
	return ok && j.faultExcuses(f, t)
}

// maxInFlight bounds the span before a peer's stop in which a fire it owned may have been still unsent.
const maxInFlight = 2 * time.Second

// stopsPeer reports whether a fault kind stops a peer without letting it finish what it holds.
func stopsPeer(kind string) bool {
	return kind == "kill-peer" || kind == "freeze-peer" || kind == "cut-peer"
}

// stoppedBefore returns the fault that stopped the item's owner within c.inFlight after t, before the
// fire at t was sent: its owner is the instance that delivered the item's fire before (ElasticJob's rule:
// an item that was not running when its instance went has no running node, so nothing fails it over; the
// next fire after the resharding runs it).
func (c *check) stoppedBefore(k itemKey, t time.Time) (Fault, bool) {
	owner, last := "", time.Time{}
	for _, d := range c.byItem[k] {
		if d.ScheduledAt.Before(t) && !d.ScheduledAt.Before(last) && !offSchedule(d.Source) {
			owner, last = d.Instance, d.ScheduledAt
		}
	}
	if owner == "" {
		return Fault{}, false
	}
	for _, f := range c.run.Faults {
		if f.Excuses && stopsPeer(f.Kind) && !f.From.Before(t) && f.From.Sub(t) <= c.inFlight && slices.Contains(f.Instances, owner) {
			return f, true
		}
	}
	return Fault{}, false
}

func (c *check) index() {
	c.byItem, c.byExec = map[itemKey][]Delivery{}, map[string][]Delivery{}
	for _, d := range c.run.Deliveries {
		k := itemKey{d.Job, d.Item}
		c.byItem[k] = append(c.byItem[k], d)
		c.byExec[d.ExecutionID] = append(c.byExec[d.ExecutionID], d)
	}
	byArrival := func(a, b Delivery) int { return a.Arrived.Compare(b.Arrived) }
	for k := range c.byItem {
		slices.SortFunc(c.byItem[k], byArrival)
	}
	for k := range c.byExec {
		slices.SortFunc(c.byExec[k], byArrival)
	}
	c.rep.Executions = len(c.byExec)
	for _, f := range c.run.Faults {
		c.rep.FaultsByKind[f.Kind]++
	}
}

// totalAt is the job's shardingTotalCount at t, and whether it changed within grace before t.
func (c *check) totalAt(j Job, t time.Time) (int, bool) {
	total, changed := 0, false
	for _, tc := range j.Totals {
		if tc.At.After(t) {
			break
		}
		total = tc.Total
		changed = t.Sub(tc.At) <= c.run.Grace && tc.At.After(c.run.From.Add(-c.run.Grace))
	}
	return total, changed
}

// faultAt returns the first excusing fault whose window (plus grace) holds t.
func (c *check) faultAt(t time.Time) (Fault, bool) {
	for _, f := range c.run.Faults {
		if f.Excuses && (Window{f.From, f.To.Add(c.run.Grace)}).has(t) {
			return f, true
		}
	}
	return Fault{}, false
}

func inAny(ws []Window, t time.Time, grace time.Duration) bool {
	for _, w := range ws {
		if (Window{w.From, w.To.Add(grace)}).has(t) {
			return true
		}
	}
	return false
}

// inside reports whether t is in a window shrunk by grace at both ends (surely paused, not at its edges).
func inside(ws []Window, t time.Time, grace time.Duration) bool {
	for _, w := range ws {
		if (Window{w.From.Add(grace), w.To.Add(-grace)}).has(t) {
			return true
		}
	}
	return false
}

// busyAt reports whether a run of the item was in flight at t (a fire then is a misfire or skipped).
func (c *check) busyAt(k itemKey, t time.Time) bool {
	for _, d := range c.byItem[k] {
		if d.Arrived.After(t) {
			return false
		}
		end := d.Ended
		if end.IsZero() {
			end = d.Answered
		}
		// the peer records the end a moment after the receiver answered
		if !end.Add(time.Second).Before(t) {
			return true
		}
	}
	return false
}

func (c *check) fires() {
	c.incomplete, c.period = map[string][]time.Time{}, map[string]time.Duration{}
	for _, j := range c.run.Jobs {
		if j.Cron == "" {
			continue
		}
		sched, err := cronexpr.Parse(j.Cron, time.UTC)
		if err != nil {
			c.violate(Violation{Kind: "bad-schedule", Job: j.Name, Detail: err.Error()})
			continue
		}
		first := sched.Next(c.run.From.Add(-time.Nanosecond))
		c.period[j.Name] = sched.Next(first).Sub(first)
		delivered := map[itemKey]map[time.Time]bool{}
		for _, d := range c.run.Deliveries {
			if d.Job == j.Name && !offSchedule(d.Source) {
				k := itemKey{d.Job, d.Item}
				if delivered[k] == nil {
					delivered[k] = map[time.Time]bool{}
				}
				delivered[k][d.ScheduledAt.UTC()] = true
			}
		}
		for t := first; !t.IsZero() && t.Before(c.run.To); t = sched.Next(t) {
			total, resharded := c.totalAt(j, t)
			whole := true
			for item := range total {
				c.rep.FiresExpected++
				k := itemKey{j.Name, item}
				skip := ""
				if j.Skips != nil {
					skip = j.Skips(t)
				}
				if delivered[k][t.UTC()] {
					c.rep.FiresDelivered++
					if skip != "" || inside(j.Paused, t, time.Second) {
						c.violate(Violation{Kind: "fire-not-skipped", Job: j.Name, Item: item, At: t,
							Detail: fmt.Sprintf("the fire at %s ran though the job's pause or steering left it out (%s)", t.UTC().Format(time.RFC3339), skip)})
					}
					continue
				}
				reason := ""
				f, faulted := c.faultAt(t)
				switch {
				case skip != "":
					reason = skip
				case inAny(j.Paused, t, time.Second):
					reason = "job paused"
				case inAny(j.Disabled, t, time.Second):
					reason = "job disabled"
				case inAny(j.ItemDisabled[item], t, time.Second):
					reason = "item disabled"
				case j.busyExcuses() && c.busyAt(k, t):
					reason = "item still running (misfire rules)"
				case faulted && j.faultExcuses(f, t):
					reason = "fault: " + f.Kind
					whole = false
				case c.stoppedOwner(j, k, t):
					reason = "fire unsent when its peer stopped"
					whole = false
				case resharded:
					reason = "shardingTotalCount changed"
					whole = false
				}
				if reason != "" {
					c.rep.Excused[reason]++
					continue
				}
				whole = false
				c.violate(Violation{Kind: "lost-fire", Job: j.Name, Item: item, At: t,
					Detail: fmt.Sprintf("the fire at %s was never delivered, outside every fault window", t.UTC().Format(time.RFC3339))})
			}
			if !whole {
				c.incomplete[j.Name] = append(c.incomplete[j.Name], t)
			}
		}
	}
}

// offSchedule reports whether deliveries of source are not the schedule's own fires: fires on request
// (MANUAL, WORKFLOW: scheduled "now") or a backfill's (BACKFILL, scheduled at a past fire's time, which the
// schedule ran or missed on its own). They neither deliver a scheduled fire nor are excused as before the run.
func offSchedule(source string) bool { return onRequest(source) || source == "BACKFILL" }

func (c *check) doubles() {
	type fireKey struct {
		job      string
		item     int
		at       time.Time
		backfill bool // a backfill's fire is counted apart from the schedule's own fire at that time
	}
	ids := map[fireKey][]string{}
	peers := map[fireKey][]string{}
	for _, d := range c.run.Deliveries {
		if onRequest(d.Source) {
			continue
		}
		k := fireKey{d.Job, d.Item, d.ScheduledAt.UTC(), d.Source == "BACKFILL"}
		if !slices.Contains(ids[k], d.ExecutionID) {
			ids[k] = append(ids[k], d.ExecutionID)
		}
		if !slices.Contains(peers[k], d.Instance) {
			peers[k] = append(peers[k], d.Instance)
		}
	}
	for k, v := range ids {
		if len(v) > 1 && len(peers[k]) > 1 && c.unmonitored(k.job) {
			// no running node and no completed node: a peer that fired before it saw a resharding flagged and
			// the item's new owner after it may both run the fire (docs/reliability.md), in a fault's window
			if _, ok := c.faultAt(k.at); ok {
				c.rep.Excused["unmonitored: one fire run by its old and its new owner across a resharding"]++
				continue
			}
		}
		if len(v) > 1 {
			c.violate(Violation{Kind: "double-delivery", Job: k.job, Item: k.item, At: k.at,
				Detail: fmt.Sprintf("one fire delivered under %d webhook-ids: %s", len(v), strings.Join(v, ", "))})
		}
	}
}

// faultedInstance reports whether a fault hit instance during [from, to].
func (c *check) faultedInstance(instance string, from, to time.Time) bool {
	for _, f := range c.run.Faults {
		if slices.Contains(f.Instances, instance) && !f.From.After(to) && !f.To.Add(c.run.Grace).Before(from) {
			return true
		}
	}
	return false
}

// killedAround reports whether instance was killed during [from, to]: an unmonitored job's records are
// queued, not committed, before its request, so a kill then loses them (docs/reliability.md).
func (c *check) killedAround(instance string, from, to time.Time) bool {
	for _, f := range c.run.Faults {
		if f.Kills && slices.Contains(f.Instances, instance) && !f.From.Before(from) && !f.From.After(to) {
			return true
		}
	}
	return false
}

// unmonitored reports whether job's items have no running node.
func (c *check) unmonitored(job string) bool {
	for _, j := range c.run.Jobs {
		if j.Name == job {
			return j.Unmonitored
		}
	}
	return false
}

func (c *check) overlaps() {
	for k, ds := range c.byItem {
		if c.unmonitored(k.job) {
			continue // no running node: nothing makes a new owner wait for the old one's request
		}
		for i, a := range ds {
			aEnd := a.Ended
			if aEnd.IsZero() {
				aEnd = a.Answered
			}
			for _, b := range ds[i+1:] {
				if !b.Arrived.Before(aEnd) {
					break
				}
				if b.ExecutionID == a.ExecutionID || b.Instance == a.Instance {
					continue // a retry or an iteration of the same run; one peer never overlaps itself
				}
				if why := c.policyAllowsOverlap(k.job, a); why != "" {
					c.rep.Excused[why]++
					continue
				}
				if a.Source == "BACKFILL" || b.Source == "BACKFILL" {
					continue // a backfill's requests hold no running node: they may run beside the schedule's
				}
				if c.faultedInstance(a.Instance, a.Arrived, aEnd) || c.faultedInstance(b.Instance, b.Arrived, aEnd) {
					continue // a frozen, cut or killed peer can't recall a request it sent
				}
				c.violate(Violation{Kind: "overlap", Job: k.job, Item: k.item, At: b.Arrived,
					Detail: fmt.Sprintf("run %s by %s (from %s) still in flight when %s by %s arrived",
						a.ExecutionID, a.Instance, a.Arrived.UTC().Format("15:04:05.000"), b.ExecutionID, b.Instance)})
			}
		}
	}
}

// lostCommitWait is how long after its answer an execution's end may wait for its history commit (the
// executor's commit wait, 5 s, and a second of slack).
const lostCommitWait = 6 * time.Second

func (c *check) history() {
	recs := map[string]Record{}
	for _, r := range c.run.History {
		recs[r.ExecutionID] = r
	}
	for id, ds := range c.byExec {
		d := ds[0]
		if d.ScheduledAt.Before(c.run.From.Add(-time.Minute)) && !offSchedule(d.Source) {
			continue
		}
		r, ok := recs[id]
		last := ds[len(ds)-1]
		// an unmonitored execution's records die with a peer killed between its start and its end's commit
		lostWithPeer := c.unmonitored(d.Job) && c.killedAround(d.Instance, d.Arrived.Add(-time.Second), last.Answered.Add(lostCommitWait))
		if (!ok || !r.Ended) && lostWithPeer {
			c.rep.OutsideGuarantee++
			continue
		}
		if !ok {
			c.violate(Violation{Kind: "missing-history", Job: d.Job, Item: d.Item, At: d.Arrived,
				Detail: fmt.Sprintf("execution %s (by %s) reached its receiver but is not in the history", id, d.Instance)})
			continue
		}
		gave := false // the receiver reported a success
		for _, x := range ds {
			// a streaming run stopped at its next fire after a 2xx asking for more ended well all the same
			if x.Completed == "SUCCEEDED" || x.CompletionSent || (x.Completed == "" && x.Status >= 200 && x.Status < 300 && x.Status != 202) {
				gave = true
			}
		}
		lastOK := !last.More && (last.Completed == "SUCCEEDED" || (last.Completed == "" && last.Status >= 200 && last.Status < 300 && last.Status != 202))
		switch {
		case !r.Ended:
			c.violate(Violation{Kind: "left-running", Job: d.Job, Item: d.Item, At: d.Arrived,
				Detail: fmt.Sprintf("execution %s is still RUNNING in the history after the run settled", id)})
		case r.Success && !gave:
			c.violate(Violation{Kind: "history-disagrees", Job: d.Job, Item: d.Item, At: last.Arrived,
				Detail: fmt.Sprintf("execution %s recorded as a success, but its receiver never reported one (last answer %d %s)", id, last.Status, last.Completed)})
		case !r.Success && lastOK && !c.faultedInstance(r.Instance, d.Arrived, last.Answered.Add(time.Second)):
			c.violate(Violation{Kind: "history-disagrees", Job: d.Job, Item: d.Item, At: last.Arrived,
				Detail: fmt.Sprintf("execution %s recorded as a failure (%q), but its receiver answered success", id, r.Cause)})
		}
	}
	for _, r := range c.run.History {
		if _, seen := c.byExec[r.ExecutionID]; seen || r.ScheduledAt.Before(c.run.From) {
			continue
		}
		if !r.Ended && c.unmonitored(r.Job) && c.killedAround(r.Instance, r.ScheduledAt.Add(-time.Second), r.ScheduledAt.Add(lostCommitWait)) {
			c.rep.OutsideGuarantee++
		} else if !r.Ended {
			c.violate(Violation{Kind: "left-running", Job: r.Job, Item: r.Item, At: r.ScheduledAt,
				Detail: fmt.Sprintf("execution %s (never delivered) is still RUNNING in the history after the run settled", r.ExecutionID)})
		} else if r.Success {
			c.violate(Violation{Kind: "history-disagrees", Job: r.Job, Item: r.Item, At: r.ScheduledAt,
				Detail: fmt.Sprintf("execution %s recorded as a success, but no receiver saw it", r.ExecutionID)})
		}
	}
}

func (c *check) lateness() {
	var calm, faulted []time.Duration
	for _, d := range c.run.Deliveries {
		if d.Source != "NORMAL_TRIGGER" || d.Attempt > 1 || d.Iteration > 1 || d.ScheduledAt.Before(c.run.From) || !d.ScheduledAt.Before(c.run.To) {
			continue
		}
		due := d.ScheduledAt
		if !d.DueAt.IsZero() {
			due = d.DueAt
		}
		late := d.Arrived.Sub(due)
		if _, ok := c.faultAt(d.ScheduledAt); ok {
			faulted = append(faulted, late)
		} else {
			calm = append(calm, late)
		}
	}
	c.rep.LatenessCalm, c.rep.LatenessFault = quantiles(calm), quantiles(faulted)
}

// recovery: for each fault, from its start to the end of the last incomplete fire of the fast jobs (period
// 10 s or less) before the next calm fire; 0 if no fire was incomplete.
func (c *check) recovery() {
	by := map[string][]time.Duration{}
	for _, f := range c.run.Faults {
		if !f.Excuses {
			continue // a receiver's fault or a disabling loses no fire: nothing to recover
		}
		var worst time.Duration
		for job, ts := range c.incomplete {
			p := c.period[job]
			if p > 10*time.Second {
				continue
			}
			for _, t := range ts {
				if t.Before(f.From) || t.After(f.To.Add(c.run.Grace)) {
					continue
				}
				worst = max(worst, t.Add(p).Sub(f.From))
			}
		}
		by[f.Kind] = append(by[f.Kind], worst)
	}
	for k, ds := range by {
		c.rep.RecoveryByKind[k] = quantiles(ds)
	}
}

// violate records a violation with the deliveries of its item and the faults within `around` of it.
func (c *check) violate(v Violation) {
	for _, d := range c.byItem[itemKey{v.Job, v.Item}] {
		if d.Arrived.Sub(v.At).Abs() <= around || d.ScheduledAt.Sub(v.At).Abs() <= around {
			v.Around = append(v.Around, fmt.Sprintf("delivery %s %s sched=%s arrived=%s answered=%s status=%d by %s attempt=%d",
				d.WebhookID, d.Source, d.ScheduledAt.UTC().Format("15:04:05.000"), d.Arrived.UTC().Format("15:04:05.000"),
				d.Answered.UTC().Format("15:04:05.000"), d.Status, d.Instance, d.Attempt))
		}
	}
	for _, f := range c.run.Faults {
		if !f.From.After(v.At.Add(around)) && !f.To.Before(v.At.Add(-around)) {
			v.Around = append(v.Around, fmt.Sprintf("fault %s %s %s..%s", f.Kind, f.Target,
				f.From.UTC().Format("15:04:05.000"), f.To.UTC().Format("15:04:05.000")))
		}
	}
	c.rep.Violations = append(c.rep.Violations, v)
}

// Text renders the report for people.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fires expected (job x fire x item): %d, delivered: %d, excused: %d\n", r.FiresExpected, r.FiresDelivered, sumOf(r.Excused))
	for _, k := range sortedKeys(r.Excused) {
		fmt.Fprintf(&b, "  excused, %s: %d\n", k, r.Excused[k])
	}
	fmt.Fprintf(&b, "deliveries: %d, executions: %d, history rows: %d\n", r.Deliveries, r.Executions, r.HistoryRows)
	if r.OutsideGuarantee > 0 {
		fmt.Fprintf(&b, "  unmonitored executions lost with their killed peer (outside the guarantee): %d\n", r.OutsideGuarantee)
	}
	b.WriteString("faults by kind (recovery: fault start until the fast jobs' fires are whole again):\n")
	for _, k := range sortedKeys(r.FaultsByKind) {
		q := r.RecoveryByKind[k]
		if q.N == 0 {
			fmt.Fprintf(&b, "  %-22s %3d  (loses no fire)\n", k, r.FaultsByKind[k])
			continue
		}
		fmt.Fprintf(&b, "  %-22s %3d  recovery p50=%s max=%s\n", k, r.FaultsByKind[k], q.P50.Round(100*time.Millisecond), q.Max.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "lateness outside faults: %s\nlateness during faults:  %s\n", r.LatenessCalm, r.LatenessFault)
	fmt.Fprintf(&b, "violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// effectiveOverlap is the job's overlapPolicy, or what its misfire means (ElasticJob's).
func (j Job) effectiveOverlap() string {
	switch {
	case j.Overlap != "":
		return j.Overlap
	case j.Misfire:
		return "BUFFER_ONE"
	}
	return "SKIP"
}

// busyExcuses reports whether a fire that found the item running may be missing: under BUFFER_ONE it became
// the one catch-up (of the latest such fire), under SKIP it was skipped; ALLOW and CANCEL_PREVIOUS run it.
func (j Job) busyExcuses() bool {
	p := j.effectiveOverlap()
	return p == "BUFFER_ONE" || p == "SKIP"
}

// faultExcuses reports whether fault f excuses a missing fire at t: always, except for a job with catchUp
// all, whose fires missed in a fault are caught up once the cluster is back, within its window.
func (j Job) faultExcuses(f Fault, t time.Time) bool {
	if j.CatchUp != "all" {
		return true
	}
	return j.CatchUpWindow > 0 && f.To.Sub(t) > j.CatchUpWindow
}

// policyAllowsOverlap says why a run that a later one overlapped is allowed to have been in flight ("" if
// it is not): the job allows overlaps, or the later run cancelled it (the request was abandoned).
func (c *check) policyAllowsOverlap(job string, a Delivery) string {
	for _, j := range c.run.Jobs {
		if j.Name != job {
			continue
		}
		switch j.effectiveOverlap() {
		case "ALLOW":
			return "overlap allowed (overlapPolicy ALLOW)"
		case "CANCEL_PREVIOUS":
			if a.Status == 0 || a.Completed == "CANCELLED" {
				return "overlap with a cancelled run (overlapPolicy CANCEL_PREVIOUS)"
			}
		}
	}
	return ""
}

// onRequest reports whether a delivery's source is a fire asked for rather than scheduled: an operator's
// trigger (MANUAL) or a workflow node's fire (WORKFLOW). Such fires belong to no scheduled time: they are
// left out of the missed-fire and double-delivery checks, and always checked against the history.
func onRequest(source string) bool { return source == "MANUAL" || source == "WORKFLOW" }
