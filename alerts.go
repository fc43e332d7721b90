package ejserver

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The events an alert rule may be on (internal/notify's Kinds; a test keeps the two lists equal).
const (
	EventItemFailed        = "ITEM_FAILED"
	EventFireFailed        = "FIRE_FAILED"
	EventFailedFiresInARow = "FAILED_FIRES_IN_A_ROW"
	EventMisfire           = "MISFIRE"
	EventFailover          = "FAILOVER"
	EventLate              = "LATE"
	EventFireSkipped       = "FIRE_SKIPPED"
	EventLeaseExpired      = "LEASE_EXPIRED"
	EventRunningLong       = "RUNNING_LONG"
	EventNoInstance        = "NO_INSTANCE"
	EventRecovered         = "RECOVERED"
	// EventWorkflowFailed: a workflow run ended FAILED (a workflow's rules only).
	EventWorkflowFailed = "WORKFLOW_FAILED"
)

// AlertEvents lists the events in documentation order.
var AlertEvents = []string{EventItemFailed, EventFireFailed, EventFailedFiresInARow, EventMisfire, EventFailover,
	EventLate, EventFireSkipped, EventLeaseExpired, EventRunningLong, EventNoInstance, EventRecovered}

// WorkflowAlertEvents lists the events a workflow's alert rules may be on: a run that failed, a run still
// going after runningLongerThanSeconds (told once per run attempt), and the next succeeded run after a failure.
var WorkflowAlertEvents = []string{EventWorkflowFailed, EventRunningLong, EventRecovered}

// Bounds of a job's alerts and hooks, documented in the README.
const (
	MaxAlertRules          = 16
	MaxRuleChannels        = 8
	MaxQuietPeriodSeconds  = 7 * 24 * 60 * 60
	MaxLateAfterMs         = 24 * 60 * 60 * 1000
	MaxFailedFiresInARow   = 1000
	MaxRunningLongerSecond = MaxDurationSecs
)

// The jobErrorHandlerType values: LOG, THROW and IGNORE keep ElasticJob's meaning (ejserver logs every failed
// item whatever the value); EMAIL, DINGTALK and WECHAT add a rule on ITEM_FAILED to the cluster's default
// channel of kind email, dingtalk or wecom (ErrorHandlerChannelKind).
var errorHandlerTypes = []string{"LOG", "THROW", "IGNORE", "EMAIL", "DINGTALK", "WECHAT"}

// ErrorHandlerChannelKind returns the channel kind an ElasticJob jobErrorHandlerType sends ITEM_FAILED to
// ("" for LOG, THROW and IGNORE).
func ErrorHandlerChannelKind(handler string) string {
	switch strings.ToUpper(handler) {
	case "EMAIL":
		return "email"
	case "DINGTALK":
		return "dingtalk"
	case "WECHAT":
		return "wecom"
	}
	return ""
}

// Alerts says when and whom a job's trouble is told: rules pick events and channels; the thresholds define the
// events LATE, RUNNING_LONG and FAILED_FIRES_IN_A_ROW.
type Alerts struct {
	Rules []AlertRule `json:"rules,omitempty"`
	// LateAfterMs: a fire whose first item leaves later than this after its scheduled time is LATE (0: never).
	LateAfterMs int `json:"lateAfterMs,omitempty"`
	// RunningLongerThanSeconds: an item still running this long is RUNNING_LONG, told once (0: never).
	RunningLongerThanSeconds int `json:"runningLongerThanSeconds,omitempty"`
	// FailedFiresInARow: this many fires in a row that did not all succeed are FAILED_FIRES_IN_A_ROW (0: never).
	FailedFiresInARow int `json:"failedFiresInARow,omitempty"`
}

// AlertRule sends the events it is on to its channels, folding repeats within its quiet period into one digest.
type AlertRule struct {
	On       []string `json:"on"`
	Channels []string `json:"channels"`
	// QuietPeriodSeconds: after a notification, more of the same rule within this period are folded into
	// one digest sent when it ends (0: every notification goes out).
	QuietPeriodSeconds int `json:"quietPeriodSeconds,omitempty"`
}

// Hooks are URLs POSTed once per fire for the whole cluster, signed like the job's item webhooks.
type Hooks struct {
	BeforeFire string `json:"beforeFire,omitempty"` // when every item of the fire has started
	AfterFire  string `json:"afterFire,omitempty"`  // when every item of the fire has ended, with a summary
}

// IsZero reports whether the job has no alerts of its own.
func (a Alerts) IsZero() bool {
	return len(a.Rules) == 0 && a.LateAfterMs == 0 && a.RunningLongerThanSeconds == 0 && a.FailedFiresInARow == 0
}

// IsZero reports whether the job has no hooks.
func (h Hooks) IsZero() bool { return h.BeforeFire == "" && h.AfterFire == "" }

// Clone returns a deep copy.
func (a Alerts) Clone() Alerts {
	a.Rules = slices.Clone(a.Rules)
	for i := range a.Rules {
		a.Rules[i].On = slices.Clone(a.Rules[i].On)
		a.Rules[i].Channels = slices.Clone(a.Rules[i].Channels)
	}
	return a
}

// UnmarshalJSON decodes strictly, naming a bad field as alerts.<field>.
func (a *Alerts) UnmarshalJSON(b []byte) error {
	type plain Alerts
	v := plain(*a)
	if err := decodeStrict(b, &v); err != nil {
		return nestedError("alerts", err)
	}
	*a = Alerts(v)
	return nil
}

// UnmarshalJSON decodes strictly, naming a bad field as hooks.<field>.
func (h *Hooks) UnmarshalJSON(b []byte) error {
	type plain Hooks
	v := plain(*h)
	if err := decodeStrict(b, &v); err != nil {
		return nestedError("hooks", err)
	}
	*h = Hooks(v)
	return nil
}

var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidChannelName checks a channel's name: 1-64 letters, digits, '_', '.', '-', starting with a letter or digit.
func ValidChannelName(name string) error {
	if !channelName.MatchString(name) {
		return fmt.Errorf("%q is not a channel name (1-64 letters, digits, '_', '.', '-', starting with a letter or digit)", name)
	}
	return nil
}

// Validate checks a set of alert rules and thresholds; prefix names the fields ("alerts" for a job's,
// "" for the cluster's defaults).
func (a Alerts) Validate() error {
	var v validator
	a.validate(&v, "")
	return v.err()
}

func (a Alerts) validate(v *validator, prefix string) { a.validateOn(v, prefix, AlertEvents) }

// ValidateWorkflow checks a workflow's alert rules, in the same model as a job's (the same type, bounds and
// messages, prefix "alerts"): the rules may be on WorkflowAlertEvents, and only the runningLongerThanSeconds
// threshold applies (a run, not an item, running long).
func (a Alerts) ValidateWorkflow() error {
	var v validator
	a.validateOn(&v, "alerts", WorkflowAlertEvents)
	if a.LateAfterMs != 0 {
		v.add("alerts.lateAfterMs", "does not apply to a workflow (its runs are not late: their nodes' jobs are)")
	}
	if a.FailedFiresInARow != 0 {
		v.add("alerts.failedFiresInARow", "does not apply to a workflow: WORKFLOW_FAILED tells each failed run")
	}
	return v.err()
}

func (a Alerts) validateOn(v *validator, prefix string, events []string) {
	field := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	if len(a.Rules) > MaxAlertRules {
		v.add(field("rules"), "has %d rules; the limit is %d", len(a.Rules), MaxAlertRules)
	}
	v.between(field("lateAfterMs"), a.LateAfterMs, 0, MaxLateAfterMs)
	v.between(field("runningLongerThanSeconds"), a.RunningLongerThanSeconds, 0, MaxRunningLongerSecond)
	v.between(field("failedFiresInARow"), a.FailedFiresInARow, 0, MaxFailedFiresInARow)
	for i, r := range a.Rules {
		rf := fmt.Sprintf("%s[%d]", field("rules"), i)
		if len(r.On) == 0 {
			v.add(rf+".on", "names no event; use some of %s", strings.Join(events, ", "))
		}
		for j, k := range r.On {
			switch {
			case !slices.Contains(events, k):
				v.add(fmt.Sprintf("%s.on[%d]", rf, j), "%q is not an event; use one of %s", k, strings.Join(events, ", "))
			case k == EventLate && a.LateAfterMs == 0:
				v.add(fmt.Sprintf("%s.on[%d]", rf, j), "LATE needs %s (how late is late)", field("lateAfterMs"))
			case k == EventRunningLong && a.RunningLongerThanSeconds == 0:
				v.add(fmt.Sprintf("%s.on[%d]", rf, j), "RUNNING_LONG needs %s", field("runningLongerThanSeconds"))
			case k == EventFailedFiresInARow && a.FailedFiresInARow == 0:
				v.add(fmt.Sprintf("%s.on[%d]", rf, j), "FAILED_FIRES_IN_A_ROW needs %s", field("failedFiresInARow"))
			}
		}
		switch {
		case len(r.Channels) == 0:
			v.add(rf+".channels", "names no channel")
		case len(r.Channels) > MaxRuleChannels:
			v.add(rf+".channels", "has %d channels; the limit is %d", len(r.Channels), MaxRuleChannels)
		}
		for j, c := range r.Channels {
			if err := ValidChannelName(c); err != nil {
				v.add(fmt.Sprintf("%s.channels[%d]", rf, j), "%v", err)
			}
		}
		v.between(rf+".quietPeriodSeconds", r.QuietPeriodSeconds, 0, MaxQuietPeriodSeconds)
	}
}

func (h Hooks) validate(v *validator) {
	if h.BeforeFire != "" {
		v.url("hooks.beforeFire", h.BeforeFire)
	}
	if h.AfterFire != "" {
		v.url("hooks.afterFire", h.AfterFire)
	}
}

// marshalAlertProps stores alerts and hooks in props (JSON for the rules: ElasticJob's props are strings).
func marshalAlertProps(cfg JobConfig, props map[string]string) error {
	if !cfg.Alerts.IsZero() {
		b, err := json.Marshal(cfg.Alerts)
		if err != nil {
			return err
		}
		props[PropAlerts] = string(b)
	}
	if cfg.Hooks.BeforeFire != "" {
		props[PropHookBefore] = cfg.Hooks.BeforeFire
	}
	if cfg.Hooks.AfterFire != "" {
		props[PropHookAfter] = cfg.Hooks.AfterFire
	}
	return nil
}

// parseAlertProps reads what marshalAlertProps stored, taking the keys out of props.
func parseAlertProps(cfg *JobConfig, take func(string) (string, bool)) error {
	var err error
	if v, ok := take(PropAlerts); ok && v != "" {
		if e := json.Unmarshal([]byte(v), &cfg.Alerts); e != nil {
			err = fmt.Errorf("props %s: %w", PropAlerts, e)
		}
	}
	cfg.Hooks.BeforeFire, _ = take(PropHookBefore)
	cfg.Hooks.AfterFire, _ = take(PropHookAfter)
	return err
}
