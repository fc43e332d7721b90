package dispatch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/tracing"
	"github.com/ejserver/ejserver/internal/webhook"
)

// BenchmarkItemTracing is one item's webhook as the executor sends it: "before" as before trace context
// (no span context, no traceparent), "off" with tracing off (the item's derived span context and its
// traceparent header, the trace id for the history), "on" with spans of the item and its attempt exported
// over OTLP/HTTP to a real endpoint. cpu-ns/op is the process's CPU (sender, receiver and exporter), less
// noisy than wall time on a shared machine.
func BenchmarkItemTracing(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	on, stop, err := tracing.New(context.Background(), tracing.Config{Endpoint: sink.URL, Instance: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stop(context.Background()) }()
	d := webhook.Delivery{
		Payload: webhook.Payload{JobName: "bench", TaskID: "bench@-@0@-@READY@-@me@-@t", ExecutionID: ejserver.NewExecutionID(),
			ShardingTotalCount: 1, Source: string(ejserver.SourceNormal), ScheduledAt: time.Unix(1000, 0), InstanceID: "me"},
		Webhook: ejserver.Webhook{URL: srv.URL, Method: http.MethodPost},
	}
	for _, bc := range []struct {
		name   string
		tracer *tracing.Tracer
		ctx    bool
	}{{"before", tracing.Off, false}, {"off", tracing.Off, true}, {"on", on, true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := webhook.New(webhook.Config{Tracer: bc.tracer})
			defer s.Close()
			p := s.Prepare(d)
			b.ReportAllocs()
			cpu0 := cpuTime()
			var id string
			b.ResetTimer()
			for range b.N {
				ctx := context.Background()
				var span trace.Span
				switch {
				case bc.tracer.On():
					ctx, span = bc.tracer.Start(ctx, "item bench")
				case bc.ctx:
					ctx = trace.ContextWithSpanContext(ctx, tracing.Derived(trace.SpanContext{}, d.Payload.ExecutionID))
				}
				if bc.ctx {
					id = trace.SpanContextFromContext(ctx).TraceID().String()
				}
				if res := s.Send(ctx, p); !res.Success {
					b.Fatalf("%+v", res)
				}
				if span != nil {
					span.End()
				}
			}
			_ = id
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
