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
			eachOnANewGoroutine(b, func() webhook.Result {
				if bc.grow {
					growStack()
				}
				return s.Send(context.Background(), p)
			}, func(res webhook.Result) {
				if !res.Success {
					b.Fatalf("%+v", res)
				}
			})
		})
	}
}

// eachOnANewGoroutine runs each of b's iterations on a goroutine of its own, as the executor starts its items',
// checks what it returns on b's goroutine, and reports the process's CPU an iteration (cpu-ns/op: with a
// receiver in the process, its CPU too), less noisy than wall time on a shared machine.
func eachOnANewGoroutine[T any](b *testing.B, run func() T, check func(T)) {
	cpu0 := cpuTime()
	for b.Loop() {
		done := make(chan T)
		go func() { done <- run() }()
		check(<-done)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGrowStackFirst is what growing a goroutine's stack first saves: a goroutine that calls 12 frames of
// ~400 bytes (a deep decision, as a fire's or an item's begin) and then grows its stack for sending
// ("deep-first": the old order, its overflows copying the frames on the stack), against one that grows its
// stack first ("grow-first": what an item's and a fire's goroutines do, one copy of an empty stack).
func BenchmarkGrowStackFirst(b *testing.B) {
	for _, bc := range []struct {
		name  string
		first bool
	}{{"deep-first", false}, {"grow-first", true}} {
		b.Run(bc.name, func(b *testing.B) {
			eachOnANewGoroutine(b, func() int {
				if bc.first {
					growStack()
				}
				r := deepFrames(12)
				if !bc.first {
					growStack()
				}
				return r
			}, func(int) {})
		})
	}
}

// deepFrames calls itself n times, each frame ~400 bytes.
//
//go:noinline
func deepFrames(n int) int {
	var buf [400]byte
	buf[n%len(buf)] = byte(n)
	if n == 0 {
		return int(buf[0])
	}
	return deepFrames(n-1) + int(buf[n%len(buf)])
}
