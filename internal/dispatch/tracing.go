package dispatch

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver/internal/tracing"
	"github.com/ejserver/ejserver/internal/webhook"
)

// startFire starts the fire's span, a child of the caller's trace when a manual trigger carried a
// traceparent, and sets req.span, the parent of the fire's items. Tracing off, req.span is the trigger's
// span context (or invalid) and nothing is allocated. It returns the function that ends the span.
func (e *Executor) startFire(req *fireRequest, items []int) func() {
	if req.trigger != nil && req.trigger.TraceParent != "" {
		req.span = tracing.Parse(req.trigger.TraceParent, req.trigger.TraceState)
	}
	if !e.tracer.On() {
		return noEnd
	}
	ctx := context.Background()
	if req.span.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, req.span)
	}
	_, span := e.tracer.Start(ctx, "fire "+req.job, trace.WithAttributes(tracing.AttrJob.String(req.job),
		tracing.AttrSource.String(string(req.source)), tracing.AttrItems.Int(len(items)),
		tracing.AttrLatenessMs.Int64(e.clk.Now().Sub(req.scheduledAt).Milliseconds())))
	req.span = span.SpanContext()
	return func() { span.End() }
}

func noEnd() {}

// itemSpan returns the context an item's webhook is sent in: with the item's span (a child of the fire's)
// when tracing is on, else with the item's derived span context, so that its requests carry a traceparent
// either way; the drain's bound aborts it. The returned function ends the span with the outcome.
func (e *Executor) itemSpan(req fireRequest, item int, executionID string) (ctx context.Context,
	end func(webhook.Result, time.Duration)) {
	ctx = e.hard
	if !e.tracer.On() {
		return trace.ContextWithSpanContext(ctx, tracing.Derived(req.span, executionID)), noItemEnd
	}
	if req.span.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, req.span)
	}
	ctx, span := e.tracer.Start(ctx, "item "+req.job, trace.WithAttributes(tracing.AttrJob.String(req.job),
		tracing.AttrItem.Int(item), tracing.AttrSource.String(string(req.source)), tracing.AttrExecution.String(executionID)))
	return ctx, func(res webhook.Result, lateness time.Duration) {
		span.SetAttributes(tracing.AttrStatusCode.Int(res.StatusCode), tracing.AttrAttempt.Int(res.Attempts),
			tracing.AttrLatenessMs.Int64(lateness.Milliseconds()))
		if !res.Success && !res.Accepted {
			span.SetStatus(codes.Error, res.FailureCause)
		}
		span.End()
	}
}

func noItemEnd(webhook.Result, time.Duration) {}
