package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// AsyncResult is what the async workload checks: every item answered 202 Accepted gets exactly one
// completion answered 200 and ends SUCCEEDED once, whichever peer takes its callback.
type AsyncResult struct {
	LeaseSeconds int     `json:"leaseSeconds"`
	Heartbeats   bool    `json:"heartbeats"` // none are sent: the lease outlasts the longest delay
	Delay        string  `json:"completionDelay"`
	RepeatShare  float64 `json:"repeatShare"`
	Seed         uint64  `json:"seed"`
	// Accepted counts the deliveries answered 202: every fire from the first to the window's end. Those of
	// later fires are answered 200 (Declined), so that every accepted item's end can be awaited.
	Accepted    int `json:"accepted"`
	AcceptedIDs int `json:"acceptedExecutions"`
	Declined    int `json:"declined"`
	NoCallback  int `json:"noCallback,omitempty"`        // deliveries without callbackUrl or callbackToken
	IDMismatch  int `json:"webhookIdMismatch,omitempty"` // webhook-id header other than the body's executionId
	// Retried counts deliveries (of any answer) with attempt > 1; Reposted those of an execution id already
	// delivered with the same or a higher attempt.
	Retried     int           `json:"retried"`
	Reposted    int           `json:"reposted"`
	Completions callbackStats `json:"completions"`
	Repeats     callbackStats `json:"repeats"`
	// SendLag is a callback's start minus its due time: how well this program kept up.
	SendLag Latency `json:"sendLag"`
	// Pending counts callbacks not answered when the wait after the window ended.
	Pending int `json:"pending"`
	// Completed counts accepted executions whose completion was answered 200; CompletedTwice those answered
	// 200 more than once (repeats aside).
	Completed      int `json:"completed"`
	CompletedTwice int `json:"completedTwice"`
	// Lost: accepted executions without a completion answered 200, plus completions answered 200 that no peer
	// counted as SUCCEEDED. DoubleRecorded: Reposted, CompletedTwice, plus SUCCEEDED ends beyond Completed.
	Lost           int        `json:"lost"`
	DoubleRecorded int        `json:"doubleRecorded"`
	Peers          AsyncPeers `json:"peers"`
	// RunningAtEnd is the lease watcher's ejserver_async_items_running once every completion was answered,
	// and RunningZeroMs how long after that it read 0 (-1: not within the lease and 10 s).
	RunningAtEnd  float64 `json:"runningAtEnd"`
	RunningZeroMs float64 `json:"runningZeroMs"`
	// Problems are the first few non-200 answers to callbacks.
	Problems []string `json:"problems,omitempty"`
}

// AsyncPeers are the peers' async counters at the end (from their start, summed over the peers).
type AsyncPeers struct {
	Accepted      float64            `json:"accepted"`      // ejserver_async_accepted_total
	Ended         map[string]float64 `json:"ended"`         // ejserver_async_ended_total by state
	LeaseExpiries float64            `json:"leaseExpiries"` // ejserver_async_lease_expiries_total
	Callbacks     map[string]float64 `json:"callbacks"`     // ejserver_async_callbacks_total, "kind/outcome"
	Running       float64            `json:"running"`       // ejserver_async_items_running
}

// asyncPeers picks the async series out of the peers' counters.
func asyncPeers(counters map[string]float64) AsyncPeers {
	p := AsyncPeers{Ended: map[string]float64{}, Callbacks: map[string]float64{}}
	for k, v := range counters {
		name, labels, _ := strings.Cut(strings.TrimSuffix(k, "}"), "{")
		switch name {
		case "async_accepted_total":
			p.Accepted += v
		case "async_lease_expiries_total":
			p.LeaseExpiries += v
		case "async_items_running":
			p.Running += v
		case "async_ended_total":
			p.Ended[label(labels, "state")] += v
		case "async_callbacks_total":
			p.Callbacks[label(labels, "kind")+"/"+label(labels, "outcome")] += v
		}
	}
	return p
}

// label reads one label's value from a Prometheus series' labels (`a="x",b="y"`).
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// reposts counts, over every delivery, those with attempt > 1 and those of an execution id already delivered
// with the same or a higher attempt (in arrival order).
func reposts(recs []record) (retried, reposted int) {
	highest := make(map[string]int16, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.execID() == "" {
			continue
		}
		if r.attempt > 1 {
			retried++
		}
		if h, ok := highest[r.execID()]; ok && h >= r.attempt {
			reposted++
			continue
		}
		highest[r.execID()] = r.attempt
	}
	return retried, reposted
}

// runAsync runs the async workload: the receiver answers every delivery 202 and completes it by callback a
// random delay later (the completer). Fires after the window are answered 200; once every completion of the
// accepted items has been answered, the peers' async counters are read and checked against what the receiver
// accepted and completed.
func (e *env) runAsync(w workload, rec *recorder) (Result, error) {
	r := w.result("ejserver")
	// repeats follow their first completion by 1-5 s, or by the delays' own range if that is shorter
	cp := newCompleter(completerConfig{seed: e.o.seed, minDelay: e.o.callbackMin, maxDelay: e.o.callbackMax,
		repeatShare: e.o.repeatShare, repeatMin: min(e.o.callbackMin, time.Second), repeatMax: min(e.o.callbackMax, 5*time.Second),
		conc: 64})
	rec.async.Store(cp)
	defer func() {
		rec.async.Store(nil)
		cp.close()
	}()
	c, err := e.prepare(w, rec, &r) // gives the completer the peers' URLs before the first fire
	if err != nil {
		return r, err
	}
	defer c.stop()
	from, to := e.window(w, rec, &r)
	cp.acceptBefore(to)
	m := startMeasure(c)
	prof := c.profile(w.name, from.Add(e.o.profileAt), min(w.duration-e.o.profileAt, 30*time.Second))
	e.sleepUntil(to, rec, w.name)
	m.end(&r)
	c.heapProfiles(w.name)
	time.Sleep(e.o.grace)
	<-prof
	wait := e.o.callbackMax + 5*time.Second + time.Minute
	e.logf("waiting for the accepted items' completions (%s at most)", wait)
	t := time.Now()
	pending := cp.drain(wait)
	e.logf("completions answered %s after the window's grace; %d callbacks pending", time.Since(t).Round(time.Second), pending)
	recs := rec.records()
	a := analyze(recs, w.sched, from, to)
	r.fill(a, w.duration)

	ar := cp.result()
	ar.LeaseSeconds, ar.Delay, ar.RepeatShare, ar.Seed = w.leaseSeconds, fmt.Sprintf("%s-%s", e.o.callbackMin, e.o.callbackMax), e.o.repeatShare, e.o.seed
	ar.Retried, ar.Reposted = reposts(recs)
	ar.Peers = asyncPeers(c.counters())
	ar.RunningAtEnd = ar.Peers.Running
	if ar.Peers.Running > 0 {
		// the watcher re-reads a lease only when it is due: give its gauge that long to come down
		t, deadline := time.Now(), time.Now().Add(time.Duration(w.leaseSeconds)*time.Second+10*time.Second)
		for ar.Peers.Running > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Second)
			ar.Peers = asyncPeers(c.counters())
		}
		ar.RunningZeroMs = float64(time.Since(t).Milliseconds())
		if ar.Peers.Running > 0 {
			ar.RunningZeroMs = -1
		}
		e.logf("the lease watcher counted %.0f items running when every completion had been answered; %.0f %s later", ar.RunningAtEnd, ar.Peers.Running, time.Since(t).Round(time.Second))
	}
	succeeded := int(ar.Peers.Ended["SUCCEEDED"])
	ar.Lost = ar.AcceptedIDs - ar.Completed + max(0, ar.Completed-succeeded)
	ar.DoubleRecorded = ar.Reposted + ar.CompletedTwice + max(0, succeeded-ar.Completed)
	r.Async = &ar
	r.Notes = append(r.Notes, asyncNotes(ar)...)
	c.notes(&r)
	e.writeRecords(&r, rec)
	return r, nil
}

// asyncNotes names every figure that is not what it must be.
func asyncNotes(a AsyncResult) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, "ASYNC: "+fmt.Sprintf(format, args...)) }
	if a.Lost > 0 {
		bad("%d accepted items lost (%d accepted executions, %d completed, %d SUCCEEDED on the peers)", a.Lost, a.AcceptedIDs, a.Completed, int(a.Peers.Ended["SUCCEEDED"]))
	}
	if a.DoubleRecorded > 0 {
		bad("%d double-recorded (%d re-POSTed with the same attempt, %d completed twice, %d SUCCEEDED on the peers for %d completed)",
			a.DoubleRecorded, a.Reposted, a.CompletedTwice, int(a.Peers.Ended["SUCCEEDED"]), a.Completed)
	}
	if int(a.Peers.Accepted) != a.Accepted {
		bad("the receiver answered 202 %d times, the peers counted %.0f accepted", a.Accepted, a.Peers.Accepted)
	}
	if a.Peers.LeaseExpiries > 0 {
		bad("%.0f leases expired", a.Peers.LeaseExpiries)
	}
	for _, s := range slices.Sorted(maps.Keys(a.Peers.Ended)) {
		if s != "SUCCEEDED" && a.Peers.Ended[s] > 0 {
			bad("%.0f accepted items ended %s", a.Peers.Ended[s], s)
		}
	}
	if n := a.Completions.OK + a.Repeats.OK; int(a.Peers.Callbacks["complete/applied"]) != n {
		bad("%d completions answered 200, the peers counted %.0f applied", n, a.Peers.Callbacks["complete/applied"])
	}
	for _, k := range slices.Sorted(maps.Keys(a.Peers.Callbacks)) {
		if k != "complete/applied" && a.Peers.Callbacks[k] > 0 {
			bad("the peers counted %.0f callbacks %s", a.Peers.Callbacks[k], k)
		}
	}
	if a.Repeats.OK != a.Repeats.Sent {
		bad("%d of %d repeated completions answered 200: %v", a.Repeats.OK, a.Repeats.Sent, a.Repeats.ByStatus)
	}
	if len(a.Completions.ByStatus) > 0 {
		bad("completions answered other than 200: %v", a.Completions.ByStatus)
	}
	if a.Pending > 0 {
		bad("%d callbacks still pending when the wait ended", a.Pending)
	}
	if a.Peers.Running > 0 {
		bad("the lease watcher still counts %.0f items running %d s after every completion was answered", a.Peers.Running, a.LeaseSeconds+10)
	}
	if a.RunningAtEnd > 0 && a.RunningZeroMs >= 0 {
		out = append(out, fmt.Sprintf("async: the lease watcher counted %.0f items running (ejserver_async_items_running) when every completion had been answered, 0 after %.1f s: it re-reads a lease only when the lease is due",
			a.RunningAtEnd, a.RunningZeroMs/1000))
	}
	if a.Retried > 0 {
		bad("%d deliveries were retries (attempt > 1)", a.Retried)
	}
	if a.NoCallback > 0 || a.IDMismatch > 0 {
		bad("%d deliveries without callbackUrl or callbackToken, %d with a webhook-id other than the executionId", a.NoCallback, a.IDMismatch)
	}
	for _, p := range a.Problems {
		out = append(out, "ASYNC answer: "+p)
	}
	return out
}
