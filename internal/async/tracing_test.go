package async

import (
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/tracing"
)

func TestCallbackParent(t *testing.T) {
	t.Parallel()
	sc := func(tid, sid byte) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{tid}, SpanID: trace.SpanID{sid}, Remote: true})
	}
	none := trace.SpanContext{}
	item, inItemsTrace, elsewhere := sc(1, 1), sc(1, 2), sc(2, 3)
	tests := []struct {
		name                string
		item, caller        trace.SpanContext
		wantParent, wantLnk trace.SpanContext
	}{
		{"item only", item, none, item, none},
		{"a receiver that propagated the webhook's trace", item, inItemsTrace, inItemsTrace, none},
		{"a receiver in a trace of its own", item, elsewhere, item, elsewhere},
		{"unknown execution, a caller's trace", none, elsewhere, elsewhere, none},
		{"nothing known", none, none, none, none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, l := callbackParent(tt.item, tt.caller)
			if !p.Equal(tt.wantParent) || !l.Equal(tt.wantLnk) {
				t.Fatalf("parent %v link %v, want %v and %v", p, l, tt.wantParent, tt.wantLnk)
			}
		})
	}
}

func TestItemSpanContext(t *testing.T) {
	t.Parallel()
	const exec = "0123456789abcdef0123456789abcdef"
	fromLease := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if got := tracing.TraceParent(itemSpanContext(lease.Lease{ExecutionID: exec, TraceParent: fromLease}, "")); got != fromLease {
		t.Fatalf("from the lease: %q", got)
	}
	// only the history record left: its trace id, the span id the item's derived context has
	got := itemSpanContext(lease.Lease{ExecutionID: exec}, "4bf92f3577b34da6a3ce929d0e0e4736")
	if got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || got.SpanID() != tracing.Derived(trace.SpanContext{}, exec).SpanID() || !got.IsRemote() {
		t.Fatalf("from the history: %v", got)
	}
	for _, tid := range []string{"", "xyz", "00000000000000000000000000000000"} {
		if itemSpanContext(lease.Lease{ExecutionID: exec}, tid).IsValid() {
			t.Fatalf("trace id %q gives a parent", tid)
		}
	}
}
