package alert

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/notify"
)

// localFire is what this peer knows of a fire it runs items of: its items here, the ends not yet written to
// the ledger, and which once-per-fire duties it already did.
type localFire struct {
	f       dispatch.Fire
	left    map[int]time.Time // items whose request left, and when
	ended   map[int]bool      // items ended here
	running int               // items started here and not ended
	pending []ItemResult      // ends not yet in the ledger
	queued  bool              // a flush is queued
	// mine are the records this peer wrote to the fire's ledger: when they are all its records, the peer that
	// closes the fire reads none
	mineStarts []startRecord
	mineEnds   []endRecord
	mineNames  []cluster.FireRecord // their nodes
	mineItems  int                  // items this peer's start records hold

	firstFailure time.Time
	doneHere     time.Time // every item here ended and was written: waiting for the rest of the cluster
	checkedAt    time.Time
	offlineSince time.Time // first seen waiting only on vanished peers
	partial      bool      // the partial notification was looked after
	long         bool      // RUNNING_LONG was looked after
	late         bool      // LATE was looked after
}

func fireID(job, key string) string { return job + "/" + key }

// FireStarted records that this peer starts items of a fire (dispatch.Follower): in the ledger before the
// items leave, so that every start is known before any end. A fire's trigger claim (f.Claim) is consumed in
// the same transaction: cluster.ErrTriggerTaken, nothing recorded, when it was handed on meanwhile (the items
// must then not run here). Any other error is logged and the items run without their start record.
func (s *Service) FireStarted(f dispatch.Fire, items []int) error {
	start := startRecord{Instance: s.reg.Me().InstanceID, Items: items, ScheduledAt: f.ScheduledAt, Source: string(f.Source)}
	rec, _ := json.Marshal(start)
	p, snap := s.policy(f.Job)
	name, err := s.reg.RecordFireStart(f.Job, f.Key, s.peer, f.Expected, items, rec, snap != nil && !snap.Config.Hooks.IsZero(), f.Claim)
	if errors.Is(err, cluster.ErrTriggerTaken) {
		return err
	}
	if err != nil {
		s.log.Warn("could not record a fire's start in its ledger", "job", f.Job, "fire", f.Key, "err", err)
	}
	s.mu.Lock()
	lf := s.local(f)
	lf.running += len(items)
	if err == nil {
		lf.mineStarts = append(lf.mineStarts, start)
		lf.mineNames = append(lf.mineNames, cluster.FireRecord{Name: name, Start: true, N: len(items), Peer: s.peer})
		lf.mineItems += len(items)
	}
	s.mu.Unlock()
	if snap != nil && snap.Config.Hooks.BeforeFire != "" {
		s.enqueue(func() { s.maybeBegan(f, p) })
	}
	return nil
}

// local returns the fire's local state, made if new; s.mu is held.
func (s *Service) local(f dispatch.Fire) *localFire {
	id := fireID(f.Job, f.Key)
	lf := s.fires[id]
	if lf == nil {
		lf = &localFire{f: f, left: map[int]time.Time{}, ended: map[int]bool{}}
		s.fires[id] = lf
	}
	return lf
}

// ItemLeft notes when an item's request left, for LATE and RUNNING_LONG (dispatch.Follower).
func (s *Service) ItemLeft(f dispatch.Fire, item int, _ string, at time.Time) {
	s.mu.Lock()
	lf := s.local(f)
	lf.left[item] = at
	tellLate := false
	if !lf.late && f.Source == ejserver.SourceNormal {
		lf.late = true
		tellLate = true
	}
	s.mu.Unlock()
	if !tellLate {
		return
	}
	p, snap := s.policy(f.Job)
	if snap == nil || !p.IsLate(f.ScheduledAt, at) {
		return
	}
	detail := fmt.Sprintf("the first item here left %s after the scheduled time (lateAfterMs %d)",
		at.Sub(f.ScheduledAt).Round(time.Millisecond), p.LateAfter.Milliseconds())
	s.enqueue(func() {
		s.single(f.Job, f.Key, Event{Kind: notify.KindLate, ScheduledAt: f.ScheduledAt, Detail: detail})
	})
}

// ItemEnded notes an item's end; the ends of a fire are written to its ledger together (dispatch.Follower).
func (s *Service) ItemEnded(f dispatch.Fire, end dispatch.ItemEnd) {
	r := ItemResult{Item: end.Item, Outcome: end.Outcome, Status: end.Status, Error: end.Error,
		ExecutionID: end.ExecutionID, Instance: end.Instance, Source: string(end.Source), StartedAt: end.Started,
		DurationMs: end.Duration.Milliseconds(), Output: end.Output}
	s.mu.Lock()
	lf := s.local(f)
	if !lf.ended[end.Item] {
		lf.ended[end.Item] = true
		lf.running--
	}
	s.mu.Unlock()
	s.itemEnded(f.Job, f.Key, r)
	var kind notify.Kind
	switch end.Outcome {
	case dispatch.OutcomeMisfire:
		kind = notify.KindMisfire
	case dispatch.OutcomeSkipped:
		kind = notify.KindFireSkipped
	default:
		return
	}
	s.enqueue(func() {
		s.single(f.Job, f.Key, Event{Kind: kind, ScheduledAt: f.ScheduledAt, Items: []notify.Sample{r.sample()},
			Detail: "an item was still running from an earlier fire"})
	})
}

// itemEnded queues an end for the fire's ledger; the worker writes every end queued by then in one record.
func (s *Service) itemEnded(job, key string, r ItemResult) {
	if key == "" {
		return
	}
	s.mu.Lock()
	id := fireID(job, key)
	lf := s.fires[id]
	if lf == nil { // an accepted item's end heard on a peer that did not run the fire
		lf = &localFire{f: dispatch.Fire{Job: job, Key: key}, left: map[int]time.Time{}, ended: map[int]bool{}}
		s.fires[id] = lf
	}
	if _, ranHere := lf.left[r.Item]; ranHere && !lf.ended[r.Item] { // an accepted item's end, heard here
		lf.ended[r.Item] = true
		lf.running--
	}
	lf.pending = append(lf.pending, r)
	if ran(r.Outcome) && r.Outcome != dispatch.OutcomeSucceeded && lf.firstFailure.IsZero() {
		lf.firstFailure = s.clk.Now()
	}
	queue := !lf.queued
	lf.queued = true
	s.mu.Unlock()
	if queue {
		s.enqueue(func() { s.flush(id) })
	}
}

// FireSkipped tells a skipped fire as FIRE_SKIPPED, or NO_INSTANCE when the job has no live instance at all.
func (s *Service) FireSkipped(f dispatch.Fire, reason string, noInstance bool) {
	kind := notify.KindFireSkipped
	if noInstance {
		kind = notify.KindNoInstance
	}
	s.enqueue(func() { s.single(f.Job, f.Key, Event{Kind: kind, ScheduledAt: f.ScheduledAt, Detail: reason}) })
}

// FailedOver tells that this peer re-runs an item of a vanished peer.
func (s *Service) FailedOver(f dispatch.Fire, item int, executionID, from string) {
	if f.Joined { // a run of its own was counted by FireStarted
		s.mu.Lock()
		s.local(f).running++
		s.mu.Unlock()
	}
	s.enqueue(func() {
		s.single(f.Job, f.Key, Event{Kind: notify.KindFailover, ScheduledAt: f.ScheduledAt,
			Items:  []notify.Sample{{Item: item, ExecutionID: executionID, Instance: from, Outcome: "FAILOVER"}},
			Detail: fmt.Sprintf("item %d of instance %s re-run here", item, from)})
	})
}

// flush writes the ends queued for a fire in one ledger record, then sees whether the fire is complete.
func (s *Service) flush(id string) {
	s.mu.Lock()
	lf := s.fires[id]
	if lf == nil {
		s.mu.Unlock()
		return
	}
	batch := lf.pending
	lf.pending, lf.queued = nil, false
	f := lf.f
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	items := make([]int, len(batch))
	for i, r := range batch {
		items[i] = r.Item
	}
	data, _ := json.Marshal(endRecord{Items: batch})
	snap := s.reg.Job(f.Job)
	name, err := s.reg.RecordFireEnd(f.Job, f.Key, s.peer, items, data, snap != nil && !snap.Config.Hooks.IsZero())
	if errors.Is(err, cluster.ErrFireGone) {
		s.log.Debug("item ends of a fire already closed", "job", f.Job, "fire", f.Key)
		s.forget(id, false)
		return
	}
	if err != nil {
		s.log.Warn("could not record item ends in the fire's ledger", "job", f.Job, "fire", f.Key, "err", err)
		return
	}
	s.mu.Lock()
	lf.mineEnds = append(lf.mineEnds, endRecord{Items: batch})
	lf.mineNames = append(lf.mineNames, cluster.FireRecord{Name: name, N: len(items), Peer: s.peer})
	done := lf.running <= 0 && len(lf.pending) == 0
	if done && lf.doneHere.IsZero() {
		lf.doneHere = s.clk.Now()
	}
	// this peer started every item of the fire and every one ended: it closes the fire without reading the
	// ledger (a record of another peer would fail the close, which then reads it)
	var alone *cluster.FireTally
	if done && f.Expected > 0 && lf.mineItems >= f.Expected {
		t := cluster.FireTally{Exists: true, Expected: f.Expected, Records: slices.Clone(lf.mineNames)}
		for _, r := range t.Records {
			if r.Start {
				t.Started += r.N
			} else {
				t.Ended += r.N
			}
		}
		if t.Ended >= t.Started {
			alone = &t
		}
	}
	s.mu.Unlock()
	if alone != nil {
		s.closeFire(id, f, *alone, false)
		return
	}
	s.check(id, false)
}

// check looks at a fire's tally: complete (or waiting only on vanished peers, when sweeping), it closes it.
func (s *Service) check(id string, sweeping bool) {
	s.mu.Lock()
	lf := s.fires[id]
	if lf == nil {
		s.mu.Unlock()
		return
	}
	f := lf.f
	lf.checkedAt = s.clk.Now()
	s.mu.Unlock()
	t, err := s.reg.TallyFire(f.Job, f.Key)
	if err != nil {
		s.log.Warn("could not read a fire's ledger", "job", f.Job, "fire", f.Key, "err", err)
		return
	}
	if !t.Exists {
		s.forget(id, false) // the fire is over cluster-wide: nothing here matters any more
		return
	}
	if complete(t) {
		s.closeFire(id, f, t, false)
		return
	}
	if !sweeping {
		return
	}
	s.lostCheck(id, f, t)
}

// lostCheck closes a fire that waits only on items of vanished peers (their sessions are gone; with
// failover on, after LostGrace for a survivor to re-run them) or on items nobody started (after LostGrace).
func (s *Service) lostCheck(id string, f dispatch.Fire, t cluster.FireTally) {
	starts, ends, err := s.records(id, f, t)
	if err != nil {
		return
	}
	snap := s.reg.Job(f.Job)
	if snap == nil {
		s.forget(id, false)
		return
	}
	endedItems := map[int]bool{}
	for _, e := range ends {
		for _, r := range e.Items {
			endedItems[r.Item] = true
		}
	}
	waitingLive := false
	for _, st := range starts {
		for _, i := range st.Items {
			if !endedItems[i] && snap.Online(st.Instance) {
				waitingLive = true
			}
		}
	}
	now := s.clk.Now()
	s.mu.Lock()
	lf := s.fires[id]
	if lf == nil || waitingLive || lf.running > 0 {
		if lf != nil {
			lf.offlineSince = time.Time{}
		}
		s.mu.Unlock()
		return
	}
	if lf.offlineSince.IsZero() {
		lf.offlineSince = now
	}
	waited := now.Sub(lf.offlineSince)
	s.mu.Unlock()
	missing := t.Started < t.Expected
	if (snap.Config.Failover || missing) && waited < s.cfg.LostGrace {
		return
	}
	s.closeFire(id, f, t, true)
}

// complete reports whether every expected item of a fire started and ended.
func complete(t cluster.FireTally) bool {
	return t.Expected > 0 && t.Started >= t.Expected && t.Ended >= t.Started
}

// records returns a fire's start and end records: from this peer's memory when it wrote every one of them,
// else read from the ledger.
func (s *Service) records(id string, f dispatch.Fire, t cluster.FireTally) ([]startRecord, []endRecord, error) {
	s.mu.Lock()
	if lf := s.fires[id]; lf != nil && len(lf.mineStarts)+len(lf.mineEnds) == len(t.Records) &&
		!slices.ContainsFunc(t.Records, func(r cluster.FireRecord) bool { return r.Peer != s.peer }) {
		starts, ends := slices.Clone(lf.mineStarts), slices.Clone(lf.mineEnds)
		s.mu.Unlock()
		return starts, ends, nil
	}
	s.mu.Unlock()
	names := make([]string, len(t.Records))
	for i, r := range t.Records {
		names[i] = r.Name
	}
	raw, err := s.reg.FireRecordData(f.Job, f.Key, names)
	if err != nil {
		if !errors.Is(err, cluster.ErrFireGone) {
			s.log.Warn("could not read a fire's ledger", "job", f.Job, "fire", f.Key, "err", err)
		}
		return nil, nil, err
	}
	var starts []startRecord
	var ends []endRecord
	for i, b := range raw {
		if t.Records[i].Start {
			var r startRecord
			if json.Unmarshal(b, &r) == nil {
				starts = append(starts, r)
			}
			continue
		}
		var r endRecord
		if json.Unmarshal(b, &r) == nil {
			ends = append(ends, r)
		}
	}
	return starts, ends, nil
}

// closeFire closes a complete fire (or one waiting only on lost items): the peer whose multi deletes the
// fire's ledger (cluster.CloseFire) sends beforeFire if nobody did, the fire's notifications and afterFire,
// and clears ElasticJob's guarantee nodes.
func (s *Service) closeFire(id string, f dispatch.Fire, t cluster.FireTally, lost bool) {
	for range 3 {
		starts, ends, err := s.records(id, f, t)
		if errors.Is(err, cluster.ErrFireGone) {
			s.forget(id, false)
			return
		}
		if err != nil {
			return
		}
		sum := summarize(t.Expected, starts, ends)
		err = s.reg.CloseFire(f.Job, f.Key, t, workflowReport(f, sum))
		switch {
		case err == nil:
			s.closed(f, t, sum)
			s.forget(id, false)
			return
		case errors.Is(err, cluster.ErrFireGone):
			s.forget(id, false) // another peer closed it
			return
		case errors.Is(err, cluster.ErrFireChanged):
			// a record or fence came meanwhile (a failover run joined, another peer's items): look again
			if t, err = s.reg.TallyFire(f.Job, f.Key); err != nil || !t.Exists {
				return
			}
			if !lost && !complete(t) {
				return // its last end will close it
			}
		default:
			s.log.Warn("could not close a fire's ledger", "job", f.Job, "fire", f.Key, "err", err)
			return
		}
	}
}

// closed does what the peer that closed a fire does.
func (s *Service) closed(f dispatch.Fire, t cluster.FireTally, sum Summary) {
	sum.Event, sum.Namespace, sum.JobName, sum.Fire = "afterFire", s.cfg.Namespace, f.Job, f.Key
	if sum.ScheduledAt.IsZero() {
		sum.ScheduledAt, sum.Source = f.ScheduledAt, string(f.Source)
	}
	p, snap := s.policy(f.Job)
	if snap == nil {
		return
	}
	hooks := snap.Config.Hooks
	if hooks.BeforeFire != "" && !t.Has("began") {
		s.postBefore(snap, f, sum.ScheduledAt, sum.Source, t.Expected)
	}
	if p.Wants(notify.KindFireFailed) {
		e := sum.event()
		s.apply(p, func(st State, now time.Time) (State, []Outgoing) { return Decide(p, st, e, now) })
	}
	if hooks.AfterFire != "" && s.cfg.Hooks != nil {
		body, _ := json.Marshal(sum)
		s.cfg.Hooks.Post(HookRequest{URL: hooks.AfterFire, Webhook: snap.Config.Webhook, Job: f.Job,
			ID: hookID(f.Job, f.Key, "after"), Body: body})
	}
	if !hooks.IsZero() { // ElasticJob's clearAllCompletedInfo (and clearAllStartedInfo, if no beforeFire did)
		for _, which := range []string{cluster.GuaranteeStarted, cluster.GuaranteeCompleted} {
			if which == cluster.GuaranteeStarted && t.Has("began") {
				continue
			}
			if err := s.reg.ClearGuarantee(f.Job, which); err != nil {
				s.log.Debug("could not clear guarantee nodes", "job", f.Job, "err", err)
			}
		}
	}
	s.dropOldFences(f.Job)
}

// maybeBegan sends beforeFire from the one peer that fences "began" once every item of the fire started.
func (s *Service) maybeBegan(f dispatch.Fire, _ Policy) {
	t, err := s.reg.TallyFire(f.Job, f.Key)
	if err != nil || t.Expected == 0 || t.Started < t.Expected || t.Has("began") {
		return
	}
	won, err := s.reg.FenceFire(f.Job, f.Key, "began")
	if err != nil || !won {
		return
	}
	if snap := s.reg.Job(f.Job); snap != nil && snap.Config.Hooks.BeforeFire != "" {
		s.postBefore(snap, f, f.ScheduledAt, string(f.Source), t.Expected)
	}
	_ = s.reg.ClearGuarantee(f.Job, cluster.GuaranteeStarted) // ElasticJob's clearAllStartedInfo
}

func (s *Service) postBefore(snap *cluster.JobSnapshot, f dispatch.Fire, at time.Time, source string, items int) {
	if s.cfg.Hooks == nil {
		return
	}
	body, _ := json.Marshal(map[string]any{"event": "beforeFire", "namespace": s.cfg.Namespace, "jobName": f.Job,
		"fire": f.Key, "scheduledAt": at.UTC(), "source": source, "items": items})
	s.cfg.Hooks.Post(HookRequest{URL: snap.Config.Hooks.BeforeFire, Webhook: snap.Config.Webhook, Job: f.Job,
		ID: hookID(f.Job, f.Key, "before"), Body: body})
}

// forget drops a fire's local state (once its ledger needs nothing more from this peer).
func (s *Service) forget(id string, onlyIfDone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lf := s.fires[id]; lf != nil && (!onlyIfDone || (lf.running <= 0 && len(lf.pending) == 0)) {
		delete(s.fires, id)
	}
}

// fenceAge bounds how long an event fence is kept: past it, the same (job, fire, kind) cannot come again.
const fenceAge = time.Hour

// dropOldFences deletes the job's event fences of fires older than fenceAge (at most every ten minutes
// per job on a peer: listing them is a read).
func (s *Service) dropOldFences(job string) {
	now := s.clk.Now()
	s.mu.Lock()
	if last, ok := s.fencesSwept[job]; ok && now.Sub(last) < 10*time.Minute {
		s.mu.Unlock()
		return
	}
	s.fencesSwept[job] = now
	s.mu.Unlock()
	keys, err := s.reg.EventFences(job)
	if err != nil {
		return
	}
	cutoff := s.clk.Now().Add(-fenceAge).UnixMilli()
	for _, k := range keys {
		msText, _, _ := strings.Cut(k, "-")
		if ms, err := strconv.ParseInt(msText, 10, 64); err == nil && ms < cutoff {
			_ = s.reg.DropEventFence(job, k)
		}
	}
}

// sweep looks after the fires followed here: partial notifications, RUNNING_LONG, and fires whose items
// here have all ended but not the whole fire's.
func (s *Service) sweep(now time.Time) {
	type todo struct {
		id   string
		f    dispatch.Fire
		long []notify.Sample
	}
	var partial, long, check []todo
	s.mu.Lock()
	for id, lf := range s.fires {
		p, snap := s.policy(lf.f.Job)
		if snap == nil {
			delete(s.fires, id)
			continue
		}
		if !lf.partial && !lf.firstFailure.IsZero() && !now.Before(PartialDue(lf.firstFailure)) {
			lf.partial = true
			if p.Wants(notify.KindFireFailed) {
				partial = append(partial, todo{id: id, f: lf.f})
			}
		}
		if !lf.long && p.RunningLonger > 0 {
			var items []notify.Sample
			for item, at := range lf.left {
				if !lf.ended[item] && now.Sub(at) >= p.RunningLonger {
					items = append(items, notify.Sample{Item: item, Outcome: "RUNNING"})
				}
			}
			if len(items) > 0 {
				lf.long = true
				slices.SortFunc(items, func(a, b notify.Sample) int { return a.Item - b.Item })
				long = append(long, todo{id: id, f: lf.f, long: items})
			}
		}
		every := s.cfg.SweepEvery
		if lf.doneHere.IsZero() {
			every *= 10 // items still run here, or accepted ones may have ended on another peer
		}
		if lf.checkedAt.IsZero() {
			lf.checkedAt = now
		}
		if now.Sub(lf.checkedAt) >= every {
			lf.checkedAt = now
			check = append(check, todo{id: id, f: lf.f})
		}
	}
	s.mu.Unlock()
	for _, t := range partial {
		s.sendPartial(t.f)
	}
	for _, t := range long {
		p, _ := s.policy(t.f.Job)
		s.single(t.f.Job, t.f.Key, Event{Kind: notify.KindRunningLong, ScheduledAt: t.f.ScheduledAt, Items: t.long,
			Detail: fmt.Sprintf("still running after %s; the work is left running", p.RunningLonger)})
	}
	for _, t := range check {
		s.check(t.id, true)
	}
}

// sendPartial tells a fire's failures so far, from the one peer that fences "partial", if other items
// still run.
func (s *Service) sendPartial(f dispatch.Fire) {
	t, err := s.reg.TallyFire(f.Job, f.Key)
	if err != nil || !t.Exists || t.Ended >= t.Expected {
		return
	}
	won, err := s.reg.FenceFire(f.Job, f.Key, "partial")
	if err != nil || !won {
		return
	}
	starts, ends, err := s.records(fireID(f.Job, f.Key), f, t)
	if err != nil {
		return
	}
	sum := summarize(0, starts, ends)
	e := Event{Type: FirePartial, Fire: f.Key, ScheduledAt: f.ScheduledAt}
	var c notify.Counts
	c.Items = t.Expected
	for _, r := range sum.Items {
		switch {
		case r.Outcome == OutcomeLost:
			c.Running++ // started, not ended yet
		case r.Outcome == dispatch.OutcomeSucceeded:
			c.Succeeded++
		case ran(r.Outcome):
			c.Failed++
			e.Items = append(e.Items, r.sample())
		}
	}
	c.Running += max(0, t.Expected-len(sum.Items))
	e.Counts = c
	p, _ := s.policy(f.Job)
	s.apply(p, func(st State, now time.Time) (State, []Outgoing) { return Decide(p, st, e, now) })
}
