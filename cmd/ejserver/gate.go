package main

import (
	"net/http"
	"sync/atomic"
)

// gate is the API server's handler from the moment the port is bound. Until the peer is ready (connected to
// ZooKeeper, its registry loaded) it answers every request at once with 503 and Retry-After, instead of
// leaving it in the listener's backlog: a request queued there was served when the peer came up, seconds
// after its client had given up, so that an operator's (or the soak's) "refused" disable landed later all
// the same. /healthz answers 200 (the process runs; /readyz is 503 until ready). Once opened it hands every
// request to the API.
type gate struct {
	h atomic.Pointer[http.Handler]
}

// open hands every later request to h.
func (g *gate) open(h http.Handler) { g.h.Store(&h) }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := g.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/healthz" { // liveness: the process runs
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"starting"}`))
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"type":"https://ejserver.dev/problems/unavailable","title":"Service unavailable","status":503,` +
		`"detail":"starting: not connected to ZooKeeper yet; nothing was done"}`))
}
