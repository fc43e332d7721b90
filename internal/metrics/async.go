package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejserver/ejserver/internal/lease"
)

// asyncMetrics count long-running items (async.Observer). They carry no job label: a lease's end and its
// callbacks may land on any peer.
type asyncMetrics struct {
	accepted  prometheus.Counter
	ended     *prometheus.CounterVec // state
	expiries  prometheus.Counter
	callbacks *prometheus.CounterVec // kind, outcome
	running   prometheus.Gauge
}

func newAsyncMetrics(reg *prometheus.Registry) asyncMetrics {
	a := asyncMetrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{Name: "ejserver_async_accepted_total",
			Help: "Items whose receiver answered 202 Accepted on this peer: they run under a lease."}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ejserver_async_ended_total",
			Help: "Accepted items that ended on this peer (it applied the completion, expiry or cancellation), by final state."}, []string{"state"}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{Name: "ejserver_async_lease_expiries_total",
			Help: "Accepted items whose lease ran out with no attempt left (ended EXPIRED), applied by this peer as the lease watcher."}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ejserver_async_callbacks_total",
			Help: "Callbacks of accepted items this peer answered, by kind (heartbeat, complete) and outcome (applied, or the problem type)."}, []string{"kind", "outcome"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ejserver_async_items_running",
			Help: "Accepted items running cluster-wide, as the peer holding the lease watcher duty sees them (0 on the other peers)."}),
	}
	reg.MustRegister(a.accepted, a.ended, a.expiries, a.callbacks, a.running)
	for _, s := range []lease.State{lease.Succeeded, lease.Failed, lease.Expired, lease.Cancelled} {
		a.ended.WithLabelValues(string(s))
	}
	return a
}

// Accepted counts an item accepted by its receiver.
func (m *Metrics) Accepted(string) { m.async.accepted.Inc() }

// Callback counts a callback by kind and outcome.
func (m *Metrics) Callback(kind, outcome string) {
	m.async.callbacks.WithLabelValues(kind, outcome).Inc()
}

// Ended counts an accepted item's end by its final state.
func (m *Metrics) Ended(_ string, state lease.State) {
	m.async.ended.WithLabelValues(string(state)).Inc()
}

// Expired counts a lease that ran out with no attempt left.
func (m *Metrics) Expired(string) { m.async.expiries.Inc() }

// Running sets the number of accepted items running, as the lease watcher sees them.
func (m *Metrics) Running(n int) { m.async.running.Set(float64(n)) }
