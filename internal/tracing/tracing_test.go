package tracing

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestParseInjectDerived(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name, traceparent, tracestate string
		valid                         bool
	}{
		{"w3c example", tp, "a=1,b=2", true},
		{"absent", "", "", false},
		{"malformed", "00-xyz-00f067aa0ba902b7-01", "", false},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := Parse(tt.traceparent, tt.tracestate)
			if sc.IsValid() != tt.valid {
				t.Fatalf("valid %v", sc.IsValid())
			}
			h := http.Header{}
			Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
			if got := get(h, HeaderTraceParent); tt.valid && got != tt.traceparent || !tt.valid && got != "" {
				t.Fatalf("traceparent %q", got)
			}
			if got := get(h, HeaderTraceState); got != map[bool]string{true: tt.tracestate}[tt.valid] {
				t.Fatalf("tracestate %q", got)
			}
			// an item's derived context keeps the caller's trace, or makes one of the execution id
			d := Derived(sc, "01a20e13-2b4a-72b1-9b5f-1ff80d447e6d")
			if !d.IsValid() {
				t.Fatal("derived span context invalid")
			}
			if tt.valid && (d.TraceID() != sc.TraceID() || d.TraceFlags() != sc.TraceFlags()) {
				t.Fatal("derived span context left the caller's trace")
			}
			if !tt.valid && d.TraceID().String() != "01a20e132b4a72b19b5f1ff80d447e6d" {
				t.Fatalf("derived trace id %s", d.TraceID())
			}
		})
	}
}

// Off records nothing: the executor and the sender check On and start no span at all when it is off.
func TestOff(t *testing.T) {
	if Off.On() {
		t.Fatal("Off is on")
	}
	tr, stop, err := New(context.Background(), Config{})
	if err != nil || tr != Off || stop(context.Background()) != nil {
		t.Fatalf("no endpoint: %v %v", tr, err)
	}
	if got := traceURL("http://c:4318/"); got != "http://c:4318/v1/traces" {
		t.Fatal(got)
	}
	if got := traceURL("http://c:4318/v1/traces"); got != "http://c:4318/v1/traces" {
		t.Fatal(got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=1")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		sc := Parse(tp, ts)
		h := http.Header{}
		Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
		if sc.IsValid() != (get(h, HeaderTraceParent) != "") {
			t.Fatal("a valid context not written, or an invalid one written")
		}
		if sc.IsValid() && Parse(get(h, HeaderTraceParent), get(h, HeaderTraceState)).TraceID() != sc.TraceID() {
			t.Fatal("round trip changed the trace id")
		}
	})
}

// get reads a header as Inject writes it: under its lowercase W3C name, as the webhook-* headers are.
func get(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}
