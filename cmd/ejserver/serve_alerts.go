package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ejserver/ejserver/internal/alert"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/notify"
)

// alertFlags adds the flags of the alert rules and hooks.
func alertFlags(f *envFlags) *time.Duration {
	return f.Duration("alert-lost-grace", 30*time.Second, "how long a fire waits for failover to end the items of a vanished peer, or for items nobody started, before they are reported LOST (alerts, afterFire)")
}

func checkAlertFlags(c serveConfig) error {
	if c.alertLostGrace < time.Second || c.alertLostGrace > time.Hour {
		return fmt.Errorf("--alert-lost-grace: must be between 1s and 1h, got %s", c.alertLostGrace)
	}
	return nil
}

// alerts is the peer's alert edge: the fire ledger and rules (alert.Service) and the once-per-fire hooks.
type alerts struct {
	svc   *alert.Service
	hooks *alert.HookPoster
}

// newAlerts wires the alert edge (before the executor, which tells it about fires).
func newAlerts(c serveConfig, reg *cluster.Registry, check func(string) error, clk clock.Clock, log *slog.Logger) *alerts {
	hooks := alert.NewHookPoster(alert.HookPosterConfig{Clock: clk, Logger: log, Check: check, UserAgent: "ejserver/" + version})
	svc := alert.NewService(alert.ServiceConfig{Registry: reg, Namespace: c.namespace, Hooks: hooks, Clock: clk,
		Logger: log, LostGrace: c.alertLostGrace})
	return &alerts{svc: svc, hooks: hooks}
}

// start runs the edge once the registry is loaded (the default rules are read from it) and the channels
// exist: notifications go to deliver, jobErrorHandlerType EMAIL/DINGTALK/WECHAT to the store's default
// channel of kind email/dingtalk/wecom.
func (a *alerts) start(deliver notify.Deliverer, channels *notify.Store, log *slog.Logger) {
	a.svc.Use(deliver, func(kind string) (string, bool) {
		ch, ok := channels.Default(notify.ChannelKind(kind))
		return ch.Name, ok
	})
	a.hooks.Start()
	if err := a.svc.Start(); err != nil {
		log.Warn("alerts: default rules not loaded (retried every 10 s)", "err", err)
	}
}

// stop ends the edge after dispatch drained.
func (a *alerts) stop() {
	a.svc.Stop()
	a.hooks.Stop()
}
