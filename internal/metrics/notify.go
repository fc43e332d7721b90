package metrics

import "github.com/prometheus/client_golang/prometheus"

// notifyMetrics count alert notifications by channel and outcome (notify.Observer). Channels are few and
// named by operators, so the channel label stays small; an unknown name is counted under channel="".
type notifyMetrics struct {
	outcomes *prometheus.CounterVec // channel, outcome
}

func newNotifyMetrics(reg *prometheus.Registry) notifyMetrics {
	n := notifyMetrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ejserver_notifications_total",
			Help: "Alert notifications this peer delivered or gave up on, by channel and outcome (sent, failed, dropped: queue full or shutdown, unknown: no such channel)."},
			[]string{"channel", "outcome"}),
	}
	reg.MustRegister(n.outcomes)
	return n
}

// NotificationOutcome counts one notification's delivery to one channel.
func (m *Metrics) NotificationOutcome(channel, outcome string) {
	if outcome == "unknown" {
		channel = "" // a name from a rule that no channel has: keep arbitrary names out of the labels
	}
	m.notify.outcomes.WithLabelValues(channel, outcome).Inc()
}

// ForgetChannel removes a deleted channel's series.
func (m *Metrics) ForgetChannel(channel string) {
	m.notify.outcomes.DeletePartialMatch(prometheus.Labels{"channel": channel})
}
