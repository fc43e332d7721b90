package async

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/tracing"
)

// callbackParent decides the parent of a callback's span and the link it carries. item is the item's span
// context (the lease's traceparent, invalid when the execution is not known or the token not its own);
// caller is the callback request's traceparent, if the receiver sent one. A caller in the item's trace (a
// receiver that propagated the webhook's traceparent) is the parent: it is the closer one. Otherwise the
// item is the parent and a caller in a trace of its own is linked, so both traces lead to the callback.
func callbackParent(item, caller trace.SpanContext) (parent, link trace.SpanContext) {
	switch {
	case !item.IsValid():
		return caller, trace.SpanContext{}
	case !caller.IsValid():
		return item, trace.SpanContext{}
	case caller.TraceID() == item.TraceID():
		return caller, trace.SpanContext{}
	}
	return item, caller
}

// itemSpanContext is the span context an execution's callbacks are children of: the lease's traceparent, or,
// when only the history record is left, its trace id with the span id derived from the execution id.
func itemSpanContext(l lease.Lease, traceID string) trace.SpanContext {
	if sc := tracing.Parse(l.TraceParent, ""); sc.IsValid() {
		return sc
	}
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil || l.ExecutionID == "" {
		return trace.SpanContext{}
	}
	return tracing.Derived(trace.SpanContext{}, l.ExecutionID).WithTraceID(tid).WithRemote(true)
}

// found is what a callback learnt of its execution, for its span.
type found struct {
	lease   lease.Lease
	traceID string // the history record's, when the lease was gone
}

// callbackSpan records a callback's span when tracing is on, from start to now: a child of its item's span
// (see callbackParent), with the job, item, execution, attempt and outcome; a refused callback's span has
// the error status. Off, it does nothing.
func (m *Manager) callbackSpan(ctx context.Context, kind, executionID string, f found, outcome string, start time.Time) {
	if !m.cfg.Tracer.On() {
		return
	}
	parent, link := callbackParent(itemSpanContext(f.lease, f.traceID), trace.SpanContextFromContext(ctx))
	pctx := context.Background()
	if parent.IsValid() {
		pctx = trace.ContextWithRemoteSpanContext(pctx, parent)
	}
	opts := []trace.SpanStartOption{trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(tracing.AttrExecution.String(executionID), tracing.AttrOutcome.String(outcome))}
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	name := kind
	if l := f.lease; l.JobName != "" {
		name += " " + l.JobName
		opts = append(opts, trace.WithAttributes(tracing.AttrJob.String(l.JobName), tracing.AttrItem.Int(l.ShardingItem),
			tracing.AttrAttempt.Int(l.Attempt)))
	}
	_, span := m.cfg.Tracer.Start(pctx, name, opts...)
	if outcome != outcomeApplied {
		span.SetStatus(codes.Error, outcome)
	}
	span.End(trace.WithTimestamp(m.clk.Now()))
}
