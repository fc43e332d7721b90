package alert

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/ejserver/ejserver/internal/notify"
)

// EventType tells fire-level events from single events.
type EventType string

// The event types.
const (
	// FireEnded: every item of a fire has ended (Items: the ones that did not succeed; Counts: all).
	FireEnded EventType = "FIRE_ENDED"
	// FirePartial: PartialAfter has passed since a fire's first failure and other items still run.
	FirePartial EventType = "FIRE_PARTIAL"
	// Single: one event of Kind (MISFIRE, FAILOVER, LATE, FIRE_SKIPPED, LEASE_EXPIRED, RUNNING_LONG,
	// NO_INSTANCE), seen once thanks to the edge's fence.
	Single EventType = "SINGLE"
)

// Event is something that happened to a job, as the edges saw it.
type Event struct {
	Type EventType
	Kind notify.Kind // Single only
	// Fire identifies the fire ("" when the event is not tied to one).
	Fire        string
	ScheduledAt time.Time
	Counts      notify.Counts
	// Items are the items concerned: for a fire, those that did not succeed (any number: Decide samples them).
	Items  []notify.Sample
	Detail string
	// Workflow is the run a workflow's event is about (its policy's Workflow is set); ConsoleURL links to it.
	Workflow   *notify.WorkflowRun
	ConsoleURL string
}

// State is what Decide remembers of a job between events; the edge stores it (JSON) with a version check.
type State struct {
	FailedInARow int `json:"failedInARow,omitempty"`
	// Open incidents by rule name: the kind that opened it (a RECOVERED closes it).
	Open map[string]notify.Kind `json:"open,omitempty"`
	// Quiet holds each rule's quiet period and the digest it folds.
	Quiet map[string]Quiet `json:"quiet,omitempty"`
	// Told holds, per fire still running, the items a partial notification already told.
	Told map[string][]int `json:"told,omitempty"`
}

// Quiet is one rule's quiet period: until Until, notifications fold into Pending (the latest) and Folded.
type Quiet struct {
	Until   time.Time            `json:"until"`
	Pending *notify.Notification `json:"pending,omitempty"`
	Folded  int                  `json:"folded,omitempty"`
}

// Outgoing is one notification and the channels it goes to.
type Outgoing struct {
	Notification notify.Notification
	Channels     []string
	// Undeliverable: the rule's channels could not be resolved (logged and counted by the edge).
	Undeliverable bool
}

// Decide applies one event to a job's state: the next state and the notifications to send now. It is a pure
// function: the same inputs give the same outputs, the input state is not modified.
func Decide(p Policy, s State, e Event, now time.Time) (State, []Outgoing) {
	s = s.clone()
	var out []Outgoing
	kinds := s.kindsOf(p, e)
	for _, r := range p.Rules {
		k, ok := pick(r, kinds)
		if !ok {
			continue
		}
		n := p.notification(r, k, e, s, now)
		if k == notify.KindRecovered {
			if _, open := s.Open[r.Name]; !open {
				continue
			}
			delete(s.Open, r.Name)
			q := s.Quiet[r.Name]
			n.Folded = q.Folded // the folded failures end with the incident
			delete(s.Quiet, r.Name)
			out = append(out, p.outgoing(r, n))
			continue
		}
		_, open := s.Open[r.Name]
		opens := Opens(k) && !open // news: a new incident is never folded
		if opens {
			if s.Open == nil {
				s.Open = map[string]notify.Kind{}
			}
			s.Open[r.Name] = k
		}
		q := s.Quiet[r.Name]
		if r.Quiet > 0 && now.Before(q.Until) && !opens {
			q.Pending, q.Folded = &n, q.Folded+1
			s.setQuiet(r.Name, q)
			continue
		}
		if r.Quiet > 0 {
			s.setQuiet(r.Name, Quiet{Until: now.Add(r.Quiet)})
		}
		out = append(out, p.outgoing(r, n))
	}
	s.afterFire(e)
	return s, out
}

// Flush sends the digests whose quiet period has ended at now.
func Flush(p Policy, s State, now time.Time) (State, []Outgoing) {
	s = s.clone()
	var out []Outgoing
	for _, r := range p.Rules {
		q, ok := s.Quiet[r.Name]
		if !ok || now.Before(q.Until) {
			continue
		}
		if q.Pending == nil {
			delete(s.Quiet, r.Name) // the period ended with nothing folded
			continue
		}
		n := *q.Pending
		n.Folded = q.Folded - 1 // the pending one is the message itself; the others are folded into it
		n.ID = notificationID(n.DedupKey, string(n.Kind), "digest", now.UTC().Format(time.RFC3339Nano))
		n.At = now
		n.Title = fmt.Sprintf("%s (and %d more in the quiet period)", n.Title, n.Folded)
		s.setQuiet(r.Name, Quiet{Until: now.Add(r.Quiet)})
		out = append(out, p.outgoing(r, n))
	}
	return s, out
}

// NextFlush returns when Flush has something to do (zero: nothing pending).
func NextFlush(s State) time.Time {
	var next time.Time
	for _, q := range s.Quiet {
		if q.Pending != nil && (next.IsZero() || q.Until.Before(next)) {
			next = q.Until
		}
	}
	return next
}

// kindsOf lists the kinds an event raises, most severe first.
func (s *State) kindsOf(p Policy, e Event) []notify.Kind {
	switch e.Type {
	case Single:
		return []notify.Kind{e.Kind}
	case FirePartial:
		if len(s.untold(e)) == 0 {
			return nil
		}
		return []notify.Kind{notify.KindFireFailed, notify.KindItemFailed}
	case FireEnded:
		if e.Counts.Failed+e.Counts.Lost == 0 && e.Counts.Succeeded > 0 {
			s.FailedInARow = 0
			return []notify.Kind{notify.KindRecovered}
		}
		if e.Counts.Failed+e.Counts.Lost == 0 {
			return nil // nothing ran: neither a failure nor a recovery
		}
		s.FailedInARow++
		var kinds []notify.Kind
		if p.FailedFiresInARow > 0 && s.FailedInARow == p.FailedFiresInARow {
			kinds = append(kinds, notify.KindFailedFiresInARow)
		}
		kinds = append(kinds, notify.KindFireFailed)
		if len(s.untold(e)) > 0 {
			kinds = append(kinds, notify.KindItemFailed)
		}
		return kinds
	}
	return nil
}

// Opens reports whether a kind opens an incident that a RECOVERED closes: the failures. MISFIRE, FAILOVER,
// LATE and RUNNING_LONG are told, but a later success is no news after them.
func Opens(k notify.Kind) bool {
	switch k {
	case notify.KindItemFailed, notify.KindFireFailed, notify.KindFailedFiresInARow, notify.KindLeaseExpired,
		notify.KindNoInstance, notify.KindFireSkipped, notify.KindWorkflowFailed:
		return true
	}
	return false
}

// pick returns the most severe of kinds the rule is on: one notification per rule per event.
func pick(r Rule, kinds []notify.Kind) (notify.Kind, bool) {
	for _, k := range kinds {
		if slices.Contains(r.On, k) {
			return k, true
		}
	}
	return "", false
}

// untold returns the event's items that no partial notification of its fire told yet.
func (s *State) untold(e Event) []notify.Sample {
	told := s.Told[e.Fire]
	if len(told) == 0 {
		return e.Items
	}
	var out []notify.Sample
	for _, it := range e.Items {
		if !slices.Contains(told, it.Item) {
			out = append(out, it)
		}
	}
	return out
}

// afterFire keeps Told for a fire still running, and forgets it at the fire's end.
func (s *State) afterFire(e Event) {
	switch e.Type {
	case FirePartial:
		if s.Told == nil {
			s.Told = map[string][]int{}
		}
		for _, it := range e.Items {
			if !slices.Contains(s.Told[e.Fire], it.Item) {
				s.Told[e.Fire] = append(s.Told[e.Fire], it.Item)
			}
		}
	case FireEnded:
		delete(s.Told, e.Fire)
		if len(s.Told) == 0 {
			s.Told = nil
		}
	}
}

func (s *State) setQuiet(rule string, q Quiet) {
	if s.Quiet == nil {
		s.Quiet = map[string]Quiet{}
	}
	s.Quiet[rule] = q
}

func (s State) clone() State {
	out := State{FailedInARow: s.FailedInARow}
	if s.Open != nil {
		out.Open = make(map[string]notify.Kind, len(s.Open))
		for k, v := range s.Open {
			out.Open[k] = v
		}
	}
	if s.Quiet != nil {
		out.Quiet = make(map[string]Quiet, len(s.Quiet))
		for k, v := range s.Quiet {
			if v.Pending != nil {
				n := *v.Pending
				v.Pending = &n
			}
			out.Quiet[k] = v
		}
	}
	if s.Told != nil {
		out.Told = make(map[string][]int, len(s.Told))
		for k, v := range s.Told {
			out.Told[k] = slices.Clone(v)
		}
	}
	return out
}

func (p Policy) outgoing(r Rule, n notify.Notification) Outgoing {
	return Outgoing{Notification: n, Channels: slices.Clone(r.Channels), Undeliverable: slices.Contains(p.Undeliverable, r.Name)}
}

// DedupKey is the same for a rule's trigger and its recovery: namespace, job (or workflow/{name}) and rule.
func (p Policy) DedupKey(rule string) string {
	if p.Workflow != "" {
		return p.Namespace + "/workflow/" + p.Workflow + "/" + rule
	}
	return p.Namespace + "/" + p.Job + "/" + rule
}

func notificationID(parts ...string) string {
	h := sha256.New()
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "ntf_" + hex.EncodeToString(h.Sum(nil)[:12])
}
