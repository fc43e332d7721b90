package alert

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/notify"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func policy(rules ...Rule) Policy {
	return Policy{Namespace: "ns", Job: "settle", Rules: rules, FailedFiresInARow: 3}
}

func rule(name string, quiet time.Duration, on ...notify.Kind) Rule {
	return Rule{Name: name, On: on, Channels: []string{"ops"}, Quiet: quiet}
}

func failed(fire string, n, of int) Event {
	e := Event{Type: FireEnded, Fire: fire, ScheduledAt: t0, Counts: notify.Counts{Items: of, Succeeded: of - n, Failed: n}}
	for i := range n {
		e.Items = append(e.Items, notify.Sample{Item: i, Outcome: "FAILED", Status: 500})
	}
	return e
}

func succeeded(fire string, of int) Event {
	return Event{Type: FireEnded, Fire: fire, ScheduledAt: t0, Counts: notify.Counts{Items: of, Succeeded: of}}
}

func kinds(out []Outgoing) []string {
	var ks []string
	for _, o := range out {
		ks = append(ks, fmt.Sprintf("%s:%s", o.Notification.Rule, o.Notification.Kind))
	}
	return ks
}

func TestDecide(t *testing.T) {
	t.Parallel()
	type step struct {
		e    Event
		at   time.Duration
		want []string
	}
	tests := []struct {
		name  string
		p     Policy
		steps []step
	}{
		{"one message for a 2,000-item failing fire", policy(rule("r", 0, notify.KindItemFailed)), []step{
			{failed("f1", 2000, 2000), 0, []string{"r:ITEM_FAILED"}},
		}},
		{"the most severe kind only, per rule", policy(rule("r", 0, notify.KindItemFailed, notify.KindFireFailed)), []step{
			{failed("f1", 1, 4), 0, []string{"r:FIRE_FAILED"}},
		}},
		{"each rule speaks for itself", policy(rule("a", 0, notify.KindItemFailed), rule("b", 0, notify.KindFireFailed)), []step{
			{failed("f1", 1, 4), 0, []string{"a:ITEM_FAILED", "b:FIRE_FAILED"}},
		}},
		{"success with no incident says nothing", policy(rule("r", 0, notify.KindFireFailed, notify.KindRecovered)), []step{
			{succeeded("f1", 4), 0, nil},
		}},
		{"recovery once after a failure", policy(rule("r", 0, notify.KindFireFailed, notify.KindRecovered)), []step{
			{failed("f1", 1, 4), 0, []string{"r:FIRE_FAILED"}},
			{failed("f2", 1, 4), time.Minute, []string{"r:FIRE_FAILED"}},
			{succeeded("f3", 4), 2 * time.Minute, []string{"r:RECOVERED"}},
			{succeeded("f4", 4), 3 * time.Minute, nil},
		}},
		{"no recovery for a rule not on it", policy(rule("r", 0, notify.KindFireFailed)), []step{
			{failed("f1", 1, 4), 0, []string{"r:FIRE_FAILED"}},
			{succeeded("f2", 4), time.Minute, nil},
		}},
		{"failed fires in a row told at the threshold", policy(rule("r", 0, notify.KindFailedFiresInARow)), []step{
			{failed("f1", 1, 4), 0, nil},
			{failed("f2", 1, 4), time.Minute, nil},
			{failed("f3", 1, 4), 2 * time.Minute, []string{"r:FAILED_FIRES_IN_A_ROW"}},
			{failed("f4", 1, 4), 3 * time.Minute, nil},
		}},
		{"a success resets the row", policy(rule("r", 0, notify.KindFailedFiresInARow)), []step{
			{failed("f1", 1, 4), 0, nil},
			{failed("f2", 1, 4), time.Minute, nil},
			{succeeded("f3", 4), 2 * time.Minute, nil},
			{failed("f4", 1, 4), 3 * time.Minute, nil},
			{failed("f5", 1, 4), 4 * time.Minute, nil},
		}},
		{"the quiet period folds repeats", policy(rule("r", 10*time.Minute, notify.KindFireFailed)), []step{
			{failed("f1", 1, 4), 0, []string{"r:FIRE_FAILED"}},
			{failed("f2", 1, 4), time.Minute, nil},
			{failed("f3", 1, 4), 2 * time.Minute, nil},
		}},
		{"single events", policy(rule("r", 0, notify.KindMisfire, notify.KindLeaseExpired)), []step{
			{Event{Type: Single, Kind: notify.KindMisfire}, 0, []string{"r:MISFIRE"}},
			{Event{Type: Single, Kind: notify.KindFailover}, 0, nil},
			{Event{Type: Single, Kind: notify.KindLeaseExpired, Items: []notify.Sample{{Item: 3, Outcome: "EXPIRED"}}}, 0, []string{"r:LEASE_EXPIRED"}},
		}},
		{"a partial, then the rest at the end", policy(rule("r", 0, notify.KindItemFailed)), []step{
			{Event{Type: FirePartial, Fire: "f1", Counts: notify.Counts{Items: 4, Failed: 1, Running: 3},
				Items: []notify.Sample{{Item: 0, Outcome: "FAILED"}}}, 0, []string{"r:ITEM_FAILED"}},
			{Event{Type: FireEnded, Fire: "f1", Counts: notify.Counts{Items: 4, Failed: 1, Succeeded: 3},
				Items: []notify.Sample{{Item: 0, Outcome: "FAILED"}}}, time.Minute, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s State
			for i, st := range tt.steps {
				var out []Outgoing
				s, out = Decide(tt.p, s, st.e, t0.Add(st.at))
				if got := kinds(out); fmt.Sprint(got) != fmt.Sprint(st.want) {
					t.Fatalf("step %d: sent %v, want %v", i, got, st.want)
				}
			}
		})
	}
}

func TestOneMessageCountsAndSamples(t *testing.T) {
	t.Parallel()
	_, out := Decide(policy(rule("r", 0, notify.KindFireFailed)), State{}, failed("f1", 50, 50), t0)
	if len(out) != 1 {
		t.Fatalf("%d notifications, want 1", len(out))
	}
	n := out[0].Notification
	if n.Counts == nil || n.Counts.Failed != 50 || n.Counts.Items != 50 {
		t.Fatalf("counts %+v", n.Counts)
	}
	if len(n.Samples) != notify.MaxSamples || n.Samples[0].Item != 0 {
		t.Fatalf("samples %+v", n.Samples)
	}
	if n.DedupKey != "ns/settle/r" || n.Severity != notify.SeverityError || n.Job != "settle" {
		t.Fatalf("notification %+v", n)
	}
}

func TestQuietPeriodDigest(t *testing.T) {
	t.Parallel()
	p := policy(rule("r", 10*time.Minute, notify.KindFireFailed, notify.KindRecovered))
	s, out := Decide(p, State{}, failed("f1", 1, 4), t0)
	if len(out) != 1 {
		t.Fatal(kinds(out))
	}
	for i := range 3 {
		s, out = Decide(p, s, failed(fmt.Sprint("f", i+2), 1, 4), t0.Add(time.Duration(i+1)*time.Minute))
		if len(out) != 0 {
			t.Fatalf("repeat %d sent %v", i, kinds(out))
		}
	}
	if next := NextFlush(s); !next.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("next flush %v", next)
	}
	if _, out := Flush(p, s, t0.Add(9*time.Minute)); len(out) != 0 {
		t.Fatalf("flushed early: %v", kinds(out))
	}
	s, out = Flush(p, s, t0.Add(10*time.Minute))
	if len(out) != 1 || out[0].Notification.Folded != 2 {
		t.Fatalf("digest %+v", out)
	}
	// the digest started a new quiet period: a repeat folds again, and the recovery carries it
	s, out = Decide(p, s, failed("f9", 1, 4), t0.Add(11*time.Minute))
	if len(out) != 0 {
		t.Fatal(kinds(out))
	}
	s, out = Decide(p, s, succeeded("f10", 4), t0.Add(12*time.Minute))
	if len(out) != 1 || !out[0].Notification.Resolve || out[0].Notification.Folded != 1 {
		t.Fatalf("recovery %+v", out)
	}
	if len(s.Quiet) != 0 || len(s.Open) != 0 {
		t.Fatalf("state after recovery %+v", s)
	}
	// after a recovery the next failure is news: sent at once
	if _, out = Decide(p, s, failed("f11", 1, 4), t0.Add(13*time.Minute)); len(out) != 1 {
		t.Fatal(kinds(out))
	}
}

func TestDecideDoesNotModifyItsInput(t *testing.T) {
	t.Parallel()
	p := policy(rule("r", time.Hour, notify.KindFireFailed))
	s, _ := Decide(p, State{}, failed("f1", 1, 4), t0)
	before := fmt.Sprintf("%+v", s)
	Decide(p, s, failed("f2", 1, 4), t0.Add(time.Minute))
	Decide(p, s, Event{Type: FirePartial, Fire: "f3", Items: []notify.Sample{{Item: 1}}}, t0.Add(time.Minute))
	if after := fmt.Sprintf("%+v", s); after != before {
		t.Fatalf("state changed:\n%s\n%s", before, after)
	}
}

func TestPolicyFor(t *testing.T) {
	t.Parallel()
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName = "settle"
	defaults := ejserver.Alerts{LateAfterMs: 500, Rules: []ejserver.AlertRule{{On: []string{ejserver.EventFireFailed}, Channels: []string{"ops"}}}}
	dc := func(kind string) (string, bool) { return map[string]string{"email": "mail"}[kind], kind == "email" }

	p := PolicyFor("ns", cfg, defaults, dc)
	if len(p.Rules) != 1 || p.Rules[0].Name != "default/0" || p.LateAfter != 500*time.Millisecond {
		t.Fatalf("defaults not applied: %+v", p)
	}
	cfg.Alerts = ejserver.Alerts{LateAfterMs: 100, Rules: []ejserver.AlertRule{{On: []string{ejserver.EventMisfire}, Channels: []string{"x"}, QuietPeriodSeconds: 60}}}
	p = PolicyFor("ns", cfg, defaults, dc)
	if len(p.Rules) != 1 || p.Rules[0].Name != "job/0" || p.Rules[0].Quiet != time.Minute || p.LateAfter != 100*time.Millisecond {
		t.Fatalf("job rules not preferred: %+v", p)
	}
	cfg.JobErrorHandlerType = "EMAIL"
	p = PolicyFor("ns", cfg, defaults, dc)
	if last := p.Rules[len(p.Rules)-1]; last.Name != "handler/email" || fmt.Sprint(last.Channels) != "[mail]" || len(p.Undeliverable) != 0 {
		t.Fatalf("EMAIL handler: %+v", p)
	}
	cfg.JobErrorHandlerType = "DINGTALK"
	p = PolicyFor("ns", cfg, defaults, dc)
	_, out := Decide(p, State{}, failed("f1", 1, 2), t0)
	if len(out) != 1 || !out[0].Undeliverable {
		t.Fatalf("DINGTALK without a default channel: %+v", out)
	}
	cfg.Alerts, cfg.JobErrorHandlerType = ejserver.Alerts{}, "LOG"
	if p := PolicyFor("ns", cfg, ejserver.Alerts{}, dc); p.Active() {
		t.Fatalf("a job without alerts has a policy: %+v", p)
	}
}

// The domain package lists the events rules may name; notify names them for channels: the same list.
func TestEventListsAgree(t *testing.T) {
	t.Parallel()
	if len(ejserver.AlertEvents) != len(notify.Kinds) {
		t.Fatalf("%v vs %v", ejserver.AlertEvents, notify.Kinds)
	}
	for i, k := range notify.Kinds {
		if ejserver.AlertEvents[i] != string(k) {
			t.Fatalf("event %d: %q vs %q", i, ejserver.AlertEvents[i], k)
		}
	}
}

// A job without rules, hooks, default rules or an alerting error handler is not followed: it costs nothing.
func TestFollowsOnlyJobsThatAlert(t *testing.T) {
	t.Parallel()
	s := &Service{} // Follows reads only the default rules
	s.defaults.Store(&ejserver.Alerts{})
	cfg := ejserver.DefaultJobConfig()
	if s.Follows(&cfg) {
		t.Fatal("a plain job is followed")
	}
	for name, mod := range map[string]func(*ejserver.JobConfig){
		"rules": func(c *ejserver.JobConfig) {
			c.Alerts.Rules = []ejserver.AlertRule{{On: []string{"MISFIRE"}, Channels: []string{"x"}}}
		},
		"hooks":   func(c *ejserver.JobConfig) { c.Hooks.AfterFire = "http://127.0.0.1:1/a" },
		"handler": func(c *ejserver.JobConfig) { c.JobErrorHandlerType = "EMAIL" },
	} {
		c := ejserver.DefaultJobConfig()
		mod(&c)
		if !s.Follows(&c) {
			t.Errorf("%s: not followed", name)
		}
	}
	s.defaults.Store(&ejserver.Alerts{Rules: []ejserver.AlertRule{{On: []string{"FIRE_FAILED"}, Channels: []string{"x"}}}})
	if !s.Follows(&cfg) {
		t.Fatal("default rules do not follow every job")
	}
}
