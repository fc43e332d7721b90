package client

import (
	"context"
	"net/http"
)

// Alerts are alert rules and the thresholds some events need (README "Alerts"): a job's, or the cluster's
// defaults.
type Alerts struct {
	Rules []AlertRule `json:"rules,omitempty"`
	// LateAfterMs: a fire whose first item leaves later than this is LATE (0: never).
	LateAfterMs int `json:"lateAfterMs,omitempty"`
	// RunningLongerThanSeconds: an item still running this long is RUNNING_LONG, told once (0: never).
	RunningLongerThanSeconds int `json:"runningLongerThanSeconds,omitempty"`
	// FailedFiresInARow: this many failed fires in a row are FAILED_FIRES_IN_A_ROW (0: never).
	FailedFiresInARow int `json:"failedFiresInARow,omitempty"`
}

// AlertRule sends the events it is on (ITEM_FAILED, FIRE_FAILED, FAILED_FIRES_IN_A_ROW, MISFIRE, FAILOVER,
// LATE, FIRE_SKIPPED, LEASE_EXPIRED, RUNNING_LONG, NO_INSTANCE, RECOVERED) to its channels, folding repeats
// within its quiet period into one digest.
type AlertRule struct {
	On                 []string `json:"on"`
	Channels           []string `json:"channels"`
	QuietPeriodSeconds int      `json:"quietPeriodSeconds,omitempty"`
}

// Hooks are URLs POSTed once per fire for the whole cluster, signed like the job's item webhooks.
type Hooks struct {
	BeforeFire string `json:"beforeFire,omitempty"`
	AfterFire  string `json:"afterFire,omitempty"`
}

// AlertDefaults reads the cluster's default alert rules (they apply to jobs without rules of their own).
func (c *Client) AlertDefaults(ctx context.Context) (*Alerts, error) {
	var out Alerts
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/alerts/defaults", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetAlertDefaults replaces the cluster's default alert rules (an empty Alerts removes them).
func (c *Client) SetAlertDefaults(ctx context.Context, a Alerts) (*Alerts, error) {
	var out Alerts
	if _, err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/alerts/defaults", body: a, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
