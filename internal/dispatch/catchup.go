package dispatch

import (
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/schedule"
)

// The executor's two ways of running what a fire alone would miss: the fires nobody ran while the whole cluster
// was down (replayMissedFires), and a manual trigger's items owned by instances that registered after it.

// missedFires implements catchUp (replayMissedFires is catchUp last) for a scheduled fire about to run
// items here. It returns the items to run (with all, those whose fire a later fire here already queued as a
// catch-up are left out) and, per item, the missed times to run behind it.
//
// With last, on this peer's first scheduled fire of the job, each item whose last recorded run (from any
// peer) is older than the previous scheduled time missed fires nobody ran (the whole cluster was down): the
// latest of them runs once.
//
// With all, this peer keeps a mark per item, the latest scheduled fire it ran or queued. An item without
// one (gained from a peer that died or froze until its session ended, or this peer's first fire), or whose
// schedule had a fire between the mark and this one (skipped here for a fault: no sharding, the session in
// doubt), is looked up in the registry: every fire after the item's last known fire (its completed node,
// which a vanished instance's run ends as LOST; a run still in flight; the mark) and after the job's config
// last changed, up to this one, within catchUpWindowSeconds and allowed by the job's calendars, runs,
// oldest first (schedule.Look, Since, Missed).
func (e *Executor) missedFires(snap *cluster.JobSnapshot, req fireRequest, items []int) ([]int, map[int][]time.Time) {
	if req.source != ejserver.SourceNormal || e.cfg.ScheduleOf == nil {
		return items, nil
	}
	mode := snap.Config.CatchUpMode()
	if mode == schedule.CatchUpAll {
		return e.missedAll(snap, req, items)
	}
	e.mu.Lock()
	st := e.jobStatus(req.job) // read by the fire's decision already: in the cache, where a map of every job is not
	first := !st.replayed
	st.replayed = true
	delete(e.marks, req.job)
	e.mu.Unlock()
	if mode == schedule.CatchUpNone || !first {
		return items, nil
	}
	sched := e.cfg.ScheduleOf(req.job)
	if sched == nil {
		return items, nil
	}
	out := map[int][]time.Time{}
	for _, item := range items {
		last, ok, err := e.reg.LastCompleted(req.job, item)
		if err != nil || !ok {
			continue // never ran: nothing was missed
		}
		if plan := schedule.Missed(sched.Next, last.ScheduledAt, req.scheduledAt, mode, 0); len(plan.Fires) > 0 {
			out[item] = plan.Fires
			e.logCatchUp(req, item, mode, last.ScheduledAt, plan)
		}
	}
	return items, out
}

// missedAll is missedFires for catchUp all.
//
// An item's registry nodes are read before its mark is claimed (lookups): once claimed, another path of this
// peer may run a later fire of the item without looking (its mark says this fire looked), and that run's
// running node, written before this fire's read, said the later fire was in flight: its fires before were
// taken as run and never delivered (TestCatchUpAllAReadRacingALaterFireMissesNothing; the
// TestCatchUpAllWhenAPeerIsKilled flake, where a survivor's runGained of a fire read the running node of the
// next fire's prepared items).
func (e *Executor) missedAll(snap *cluster.JobSnapshot, req fireRequest, items []int) ([]int, map[int][]time.Time) {
	sched := e.cfg.ScheduleOf(req.job)
	if sched == nil {
		return items, nil
	}
	next := schedule.Allowed(sched.Next, e.allowed(snap))
	read, looks := e.lookups(req, items, next) // returns with e.mu held, looks[i] items[i]'s schedule.Look now
	run := make([]int, 0, len(items))
	var look []int
	marks := map[int]time.Time{}
	owed := map[int][]time.Time{}
	m := e.marks[req.job]
	if m == nil {
		m = map[int]time.Time{}
		e.marks[req.job] = m
	}
	for i, item := range items {
		drop, lookUp := looks[i].drop, looks[i].look
		if drop {
			continue
		}
		run = append(run, item)
		if o := e.takeOwed(req.job, item); len(o) > 0 {
			owed[item] = o
		}
		if lookUp {
			look = append(look, item)
			marks[item] = m[item]
		}
		m[item] = req.scheduledAt // claimed under the lock: an earlier fire of the job reaching here later drops it
	}
	for i := range snap.Config.ShardingTotalCount { // a disabled item's fires are not missed ones
		if it := snap.Item(i); it.Disabled && it.Owner == e.me.InstanceID && m[i].Before(req.scheduledAt) {
			m[i] = req.scheduledAt
		}
	}
	for k := range e.owed { // an item no longer here: its new owner reads the registry
		if k.job == req.job && !slices.Contains(items, k.item) {
			delete(e.owed, k)
		}
	}
	e.mu.Unlock()
	out := map[int][]time.Time{}
	for item, o := range owed {
		out[item] = slices.DeleteFunc(o, func(t time.Time) bool { return !t.Before(req.scheduledAt) })
	}
	if len(look) == 0 {
		return run, out
	}
	window := time.Duration(snap.Config.CatchUpWindowSeconds) * time.Second
	for _, item := range look {
		last, ok := read[item]
		if !ok { // its mark moved again while the others were read (lookupRounds): read it now
			last = e.readLastRun(req.job, item, req.scheduledAt)
		}
		if !last.read {
			continue
		}
		from, ok := schedule.Since(snap.ConfigChanged, marks[item], last.done, last.inFlight)
		if !ok {
			continue // never ran: nothing was missed
		}
		if plan := schedule.Missed(next, from, req.scheduledAt, schedule.CatchUpAll, window); len(plan.Fires) > 0 {
			fires := slices.Concat(out[item], plan.Fires)
			slices.SortFunc(fires, time.Time.Compare)
			out[item] = slices.CompactFunc(fires, time.Time.Equal)
			e.logCatchUp(req, item, schedule.CatchUpAll, from, plan)
		}
	}
	return run, out
}

// lookupRounds bounds how often lookups reads items whose marks moved while it read others.
const lookupRounds = 3

// lookups reads the registry's last runs of the items whose marks ask for a lookup at this fire
// (schedule.Look), until the marks, read again under e.mu, ask for no item it has not read. It returns with
// e.mu held, and each item's schedule.Look as the marks say then (looks[i] is items[i]'s): the claims that
// follow under that lock use them. With no lookup due (every fire of an item that runs here in turn) it reads
// nothing.
func (e *Executor) lookups(req fireRequest, items []int, next func(time.Time) time.Time) (map[int]lastRun, []lookAnswer) {
	var read map[int]lastRun
	looks := make([]lookAnswer, len(items))
	for round := 0; ; round++ {
		e.mu.Lock()
		var need []int
		for i, item := range items {
			l := &looks[i]
			l.drop, l.look = schedule.Look(next, e.marks[req.job][item], req.scheduledAt)
			if _, done := read[item]; l.look && !done {
				need = append(need, item)
			}
		}
		if len(need) == 0 || round == lookupRounds {
			return read, looks
		}
		e.mu.Unlock()
		if read == nil {
			read = make(map[int]lastRun, len(need))
		}
		for _, item := range need {
			read[item] = e.readLastRun(req.job, item, req.scheduledAt)
		}
	}
}

// lookAnswer is schedule.Look's answer for one item of a fire.
type lookAnswer struct{ drop, look bool }

// lastRun is what the registry says of an item's last scheduled fire, for a fire being decided: the latest
// fire its completed node names, and a fire still in flight (inFlightFire). read is false when the completed
// node could not be read.
type lastRun struct {
	done, inFlight time.Time
	read           bool
}

// readLastRun reads the item's completed and running nodes for its fire scheduled at.
func (e *Executor) readLastRun(job string, item int, at time.Time) lastRun {
	done, ok, err := e.reg.LastCompleted(job, item)
	if err != nil {
		return lastRun{}
	}
	last := lastRun{read: true}
	if ok {
		last.done = done.LastFire()
	}
	if r, _, ok, err := e.reg.ReadRunning(job, item); err == nil && ok {
		last.inFlight = inFlightFire(r, at)
	}
	return last
}

// inFlightFire is what an item's running node tells of its fires before the one scheduled at: a scheduled fire
// (or its catch-up or failover) started and not ended, whose peer may have died with a failover to take it, is
// not a missed one. A run on request says nothing of the schedule, and a run of at or a later fire nothing of
// the fires before at (zero for both).
func inFlightFire(r cluster.Running, at time.Time) time.Time {
	if r.Source.OnRequest() || !r.ScheduledAt.Before(at) {
		return time.Time{}
	}
	return r.ScheduledAt
}

// allowed returns the job's calendars and endAt as a filter of its fires (nil: none, or unknown).
func (e *Executor) allowed(snap *cluster.JobSnapshot) func(time.Time) bool {
	if e.cfg.Steering == nil {
		return nil
	}
	r, err := e.cfg.Steering.Rules(snap.Config)
	if err != nil {
		return nil
	}
	return r.Fires
}

// markSkipped records a scheduled fire of the job that was skipped on purpose (its server disabled, its
// pause, endAt, calendars or remainingFires) as run for catchUp all: a later fire does not replay it.
func (e *Executor) markSkipped(req fireRequest) {
	if req.source != ejserver.SourceNormal {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, at := range e.marks[req.job] {
		if at.Before(req.scheduledAt) {
			e.marks[req.job][i] = req.scheduledAt
		}
	}
}

// owe keeps a scheduled fire or catch-up of an item with catchUp all that was given up here for a fault before
// it ran (the session in doubt, its running node not written): the item's next fire here runs it as a
// catch-up. The completed node already names a later fire, so a lookup in the registry would not find it.
func (e *Executor) owe(snap *cluster.JobSnapshot, item int, reqs ...fireRequest) {
	if snap == nil || snap.Config.CatchUpMode() != schedule.CatchUpAll {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, req := range reqs {
		k := itemKey{req.job, item}
		if (req.source == ejserver.SourceNormal || req.source == ejserver.SourceMisfire) &&
			!slices.ContainsFunc(e.owed[k], req.scheduledAt.Equal) {
			e.owed[k] = append(e.owed[k], req.scheduledAt)
		}
	}
}

// takeOwed returns the item's fires owed here (owe), oldest first, and forgets them.
func (e *Executor) takeOwed(job string, item int) []time.Time {
	k := itemKey{job, item}
	out := e.owed[k]
	delete(e.owed, k)
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// unmark forgets an item's mark when a run of it (scheduled or a catch-up) was given up for a fault before it
// ran here (the item was resharded away meanwhile, the session was in doubt): the item's next fire here reads
// its last run from the registry again, so the fire given up is caught up rather than taken as run.
func (e *Executor) unmark(req fireRequest, item int) {
	if req.source != ejserver.SourceNormal && req.source != ejserver.SourceMisfire {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.marks[req.job], item)
}

// ended records the end of a run of a scheduled fire (or its catch-up or failover) and returns the latest
// such fire of the item ended here, for its completed node: a catch-up of an older fire ending after a later
// fire does not move the item's last fire back.
func (e *Executor) ended(req fireRequest, item int) time.Time {
	if req.source.OnRequest() {
		return time.Time{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := itemKey{req.job, item}
	if req.scheduledAt.After(e.latest[k]) {
		e.latest[k] = req.scheduledAt
	}
	return e.latest[k]
}

func (e *Executor) logCatchUp(req fireRequest, item int, mode schedule.CatchUp, from time.Time, plan schedule.Plan) {
	e.log.Info("fires were missed while nobody could run them: catch-up follows", "job", req.job, "item", item,
		"catch_up", string(mode), "last_run", from, "fires", len(plan.Fires), "dropped", plan.Dropped,
		"oldest", plan.Fires[0])
}

// queueCatchUp queues an item's missed fires behind its run of this fire: last as its one misfire catch-up,
// all as MISFIRE runs, oldest first, each with its own scheduled time, ahead of queued manual triggers.
func (e *Executor) queueCatchUp(snap *cluster.JobSnapshot, req fireRequest, item int, fires []time.Time) {
	if len(fires) == 0 {
		return
	}
	all := snap.Config.CatchUpMode() == schedule.CatchUpAll
	var catchUps []fireRequest
	for _, at := range fires {
		catchUps = append(catchUps, fireRequest{job: req.job, scheduledAt: at, source: ejserver.SourceMisfire,
			taskID: ejserver.TaskID(req.job, []int{item}, false, e.me.InstanceID)})
	}
	if !all {
		catchUps = catchUps[len(catchUps)-1:]
	}
	e.mu.Lock()
	r := e.running[itemKey{req.job, item}]
	switch {
	case r != nil && !all:
		if r.misfireAt.IsZero() {
			r.misfireAt = fires[len(fires)-1] // one MISFIRE catch-up follows this run
		}
		e.mu.Unlock()
	case r != nil:
		r.triggers = append(catchUps, r.triggers...)
		e.mu.Unlock()
	default:
		// this fire's run ended already (or did not start here): the catch-ups run now, one after another
		e.mu.Unlock()
		e.startFollowUp(snap, catchUps[0], item, catchUps[1:])
	}
}

// handOnTrigger gives a manual trigger to the online instances that own requested items but that the
// trigger did not reach: they registered after the request listed its instances, and a resharding (done for
// this trigger, or by the leader on its own a moment earlier) gave them items. Only the job's leader does
// it, once per trigger it runs, so no instance is triggered twice.
func (e *Executor) handOnTrigger(snap *cluster.JobSnapshot, t cluster.TriggerRequest) {
	if len(t.Instances) == 0 {
		return // an operator's trigger node: meant for one instance only
	}
	var missing []string
	available := snap.Available()
	for i := range snap.Config.ShardingTotalCount {
		it := snap.Item(i)
		if it.Owner == "" || it.Disabled || (t.Items != nil && !slices.Contains(t.Items, i)) ||
			!slices.Contains(available, it.Owner) {
			continue
		}
		if !slices.Contains(t.Instances, it.Owner) && !slices.Contains(missing, it.Owner) {
			missing = append(missing, it.Owner)
		}
	}
	if len(missing) == 0 {
		return
	}
	slices.Sort(missing)
	t.Instances = slices.Concat(t.Instances, missing)
	if err := e.reg.CreateTriggers(snap.Name, missing, t); err != nil {
		e.log.Warn("could not hand the manual trigger to instances that joined after it", "job", snap.Name,
			"trigger", t.ID, "instances", missing, "err", err)
		return
	}
	e.log.Info("manual trigger handed to instances the resharding gave items to", "job", snap.Name, "trigger", t.ID,
		"instances", missing)
}
