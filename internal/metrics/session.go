package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// sessionWaitBuckets: 5 ms to 60 s (a reconnect takes tens of milliseconds; the wait is bounded by the
// session timeout, at most 60 s).
var sessionWaitBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// sessionMetrics time the fires that waited for a ZooKeeper session in doubt (dispatch.Observer). No job
// label: a suspension holds every fire of its moment alike.
type sessionMetrics struct {
	waitBy [2]prometheus.Observer // [0 fired, 1 skipped]
}

func newSessionMetrics(reg *prometheus.Registry) sessionMetrics {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ejserver_fire_session_wait_seconds",
		Help: "How long fires (or their prepared items) waited for this peer's ZooKeeper session, suspended at their " +
			"hand-off or send time, by outcome: fired (the session came back: the fire went out late) or skipped " +
			"(it expired, or was still in doubt at the fire's deadline).",
		Buckets: sessionWaitBuckets}, []string{"outcome"})
	reg.MustRegister(h)
	return sessionMetrics{waitBy: [2]prometheus.Observer{h.WithLabelValues("fired"), h.WithLabelValues("skipped")}}
}

// SessionWaited records a fire's wait for a ZooKeeper session in doubt (dispatch.Observer).
func (m *Metrics) SessionWaited(_ string, waited time.Duration, fired bool) {
	i := 0
	if !fired {
		i = 1
	}
	m.session.waitBy[i].Observe(max(waited, 0).Seconds())
}
