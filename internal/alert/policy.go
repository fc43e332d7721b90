package alert

import (
	"fmt"
	"slices"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/notify"
)

// Rule is one alert rule resolved for a job: a stable name (the DedupKey's last part), the kinds it is on,
// the channels it sends to and its quiet period.
type Rule struct {
	Name     string
	On       []notify.Kind
	Channels []string
	Quiet    time.Duration
}

// Policy is everything Decide needs to know of a job's configuration.
type Policy struct {
	Namespace string
	Job       string
	// Workflow, instead of Job, makes the policy a workflow's (WorkflowPolicy): its notifications name the
	// workflow and the run the event carries.
	Workflow          string
	Rules             []Rule
	FailedFiresInARow int
	LateAfter         time.Duration
	RunningLonger     time.Duration
	// Undeliverable names rules whose channels could not be resolved (an error handler without a default
	// channel of its kind): the edge logs and counts their notifications instead of sending them.
	Undeliverable []string
}

// Active reports whether the policy can say anything at all (a job without it costs nothing).
func (p Policy) Active() bool { return len(p.Rules) > 0 }

// DefaultChannel returns the name of the cluster's default channel of a kind (email, dingtalk, wecom...).
type DefaultChannel func(kind string) (string, bool)

// PolicyFor resolves a job's policy: its own rules, or the cluster's defaults when it has none, plus the rule
// its jobErrorHandlerType implies (EMAIL, DINGTALK, WECHAT: ITEM_FAILED to the default channel of that kind).
// The job's thresholds win over the defaults' where set.
func PolicyFor(namespace string, cfg ejserver.JobConfig, defaults ejserver.Alerts, dc DefaultChannel) Policy {
	p := Policy{Namespace: namespace, Job: cfg.JobName}
	own := cfg.Alerts
	rules, prefix := own.Rules, "job"
	if len(rules) == 0 {
		rules, prefix = defaults.Rules, "default"
	}
	for i, r := range rules {
		on := make([]notify.Kind, len(r.On))
		for j, k := range r.On {
			on[j] = notify.Kind(k)
		}
		p.Rules = append(p.Rules, Rule{Name: fmt.Sprintf("%s/%d", prefix, i), On: on,
			Channels: slices.Clone(r.Channels), Quiet: time.Duration(r.QuietPeriodSeconds) * time.Second})
	}
	pick := func(job, def int) int {
		if job != 0 {
			return job
		}
		return def
	}
	p.FailedFiresInARow = pick(own.FailedFiresInARow, defaults.FailedFiresInARow)
	p.LateAfter = time.Duration(pick(own.LateAfterMs, defaults.LateAfterMs)) * time.Millisecond
	p.RunningLonger = time.Duration(pick(own.RunningLongerThanSeconds, defaults.RunningLongerThanSeconds)) * time.Second
	if kind := ejserver.ErrorHandlerChannelKind(cfg.JobErrorHandlerType); kind != "" {
		r := Rule{Name: "handler/" + kind, On: []notify.Kind{notify.KindItemFailed}}
		if dc != nil {
			if name, ok := dc(kind); ok {
				r.Channels = []string{name}
			}
		}
		if len(r.Channels) == 0 {
			// no such channel: the Deliverer counts and records it as going to an unknown channel
			r.Channels = []string{"default:" + kind}
			p.Undeliverable = append(p.Undeliverable, r.Name)
		}
		p.Rules = append(p.Rules, r)
	}
	return p
}

// WorkflowPolicy resolves a workflow's alert rules (workflow/0, workflow/1, ...): the same model as a job's
// rules, on the events of ejserver.WorkflowAlertEvents; RunningLonger is a run's threshold. The cluster's
// default rules, which are on a job's events, do not apply.
func WorkflowPolicy(namespace, workflow string, a ejserver.Alerts) Policy {
	p := Policy{Namespace: namespace, Workflow: workflow,
		RunningLonger: time.Duration(a.RunningLongerThanSeconds) * time.Second}
	for i, r := range a.Rules {
		on := make([]notify.Kind, len(r.On))
		for j, k := range r.On {
			on[j] = notify.Kind(k)
		}
		p.Rules = append(p.Rules, Rule{Name: fmt.Sprintf("workflow/%d", i), On: on,
			Channels: slices.Clone(r.Channels), Quiet: time.Duration(r.QuietPeriodSeconds) * time.Second})
	}
	return p
}

// Wants reports whether some rule is on kind (the edges skip the work of events nobody listens to).
func (p Policy) Wants(kind notify.Kind) bool {
	for _, r := range p.Rules {
		if slices.Contains(r.On, kind) {
			return true
		}
		// a fire's end feeds ITEM_FAILED, FIRE_FAILED, FAILED_FIRES_IN_A_ROW and RECOVERED alike
		if kind == notify.KindFireFailed && slices.ContainsFunc(r.On, fireKind) {
			return true
		}
	}
	return false
}

func fireKind(k notify.Kind) bool {
	switch k {
	case notify.KindItemFailed, notify.KindFireFailed, notify.KindFailedFiresInARow, notify.KindRecovered:
		return true
	}
	return false
}

// IsLate reports whether a fire whose first item left at started is LATE under the policy.
func (p Policy) IsLate(scheduledAt, started time.Time) bool {
	return p.LateAfter > 0 && started.Sub(scheduledAt) > p.LateAfter
}

// PartialAfter is how long after a fire's first failure its failures so far are told, when other items of
// the fire still run.
const PartialAfter = time.Minute

// PartialDue returns when a fire whose first failure was at first tells its failures so far.
func PartialDue(first time.Time) time.Time { return first.Add(PartialAfter) }
