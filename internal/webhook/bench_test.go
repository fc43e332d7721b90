package webhook

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkDeliver measures one peer delivering to an instant loopback receiver from many goroutines, as
// the dispatcher does at a burst of fires. It reports requests per second; compare runs with benchstat.
func BenchmarkDeliver(b *testing.B) {
	const bound = 16 // fewer slots than goroutines: they contend for them
	for _, bc := range []struct {
		name   string
		secret bool
	}{{"unsigned", false}, {"signed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			s := New(Config{MaxConcurrent: bound})
			defer s.Close()
			d := testDelivery(srv.URL)
			if bc.secret {
				d.Webhook.Secret = GenerateSecret()
			}
			var failed atomic.Int64
			b.SetParallelism(16) // 16 × GOMAXPROCS goroutines
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !s.Deliver(context.Background(), d).Success {
						failed.Add(1)
					}
				}
			})
			b.StopTimer()
			if failed.Load() != 0 {
				b.Fatalf("%d deliveries failed", failed.Load())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			// Connections opened: at most the concurrency bound, however many requests (no port exhaustion).
			b.ReportMetric(float64(conns.Load()), "conns")
			if conns.Load() > bound {
				b.Fatalf("%d connections for a bound of %d: the pool does not reuse them", conns.Load(), bound)
			}
		})
	}
}
