package dispatch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/webhook"
)

// BenchmarkSendFromANewGoroutine sends a webhook from a goroutine of its own, as an item does at its
// scheduled time: with the stack it starts with ("fresh"), and with the stack grown ahead ("grown", what an
// item prepared ahead does before it sleeps). The difference is the stack copying saved at the burst. The
// runtime starts goroutines with the average stack size it has seen, which in this benchmark is a sending
// one's; in a peer most goroutines are small. GODEBUG=adaptivestackstart=0 starts them at 2 KB, as there:
// fresh ~130, grown ~108 CPU µs per request on the 2-core machine of docs/benchmarks.md.
func BenchmarkSendFromANewGoroutine(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	s := webhook.New(webhook.Config{})
	defer s.Close()
	p := s.Prepare(webhook.Delivery{
		Payload: webhook.Payload{JobName: "bench", TaskID: "bench@-@0@-@READY@-@me@-@t", ExecutionID: ejserver.NewExecutionID(),
			ShardingTotalCount: 1, Source: string(ejserver.SourceNormal), ScheduledAt: time.Unix(1000, 0), InstanceID: "me"},
		Webhook: ejserver.Webhook{URL: srv.URL, Method: http.MethodPost},
	})
	for _, bc := range []struct {
		name string
		grow bool
	}{{"fresh", false}, {"grown", true}} {
		b.Run(bc.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				done := make(chan webhook.Result)
				go func() {
					if bc.grow {
						growStack()
					}
					done <- s.Send(context.Background(), p)
				}()
				if res := <-done; !res.Success {
					b.Fatalf("%+v", res)
				}
			}
			// the process's CPU (this sender and the receiver), less noisy than wall time on a shared machine
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
