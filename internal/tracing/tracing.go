// Package tracing is ejserver's OpenTelemetry tracing: spans for a fire, each item and each attempt,
// exported over OTLP/HTTP when an endpoint is configured, and W3C trace context (traceparent, tracestate)
// on every webhook whether or not spans are exported.
//
// Off (no endpoint), the Tracer is OpenTelemetry's no-op: starting a span allocates nothing and records
// nothing; an item still gets a span context of its own (its trace id from the trigger's traceparent, else
// from its execution id) so that receivers can always correlate.
package tracing

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// W3C trace context headers.
const (
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// Attribute keys of ejserver's spans.
const (
	AttrJob        = attribute.Key("ejserver.job")
	AttrItem       = attribute.Key("ejserver.item")
	AttrSource     = attribute.Key("ejserver.source")
	AttrExecution  = attribute.Key("ejserver.execution_id")
	AttrAttempt    = attribute.Key("ejserver.attempt")
	AttrLatenessMs = attribute.Key("ejserver.lateness_ms")
	AttrStatusCode = attribute.Key("http.response.status_code")
	AttrItems      = attribute.Key("ejserver.items")
	// AttrOutcome is a callback's outcome: applied, or why it was refused (lease-expired, callback-token...).
	AttrOutcome = attribute.Key("ejserver.callback.outcome")
)

// Config configures tracing.
type Config struct {
	// Endpoint is the OTLP/HTTP endpoint URL (http://collector:4318, or a full URL ending in /v1/traces).
	// Empty with FromEnv set: the standard OTEL_EXPORTER_OTLP_ENDPOINT decides; empty otherwise: off.
	Endpoint string
	FromEnv  bool
	// Instance and Version describe this peer (the resource's service.instance.id and service.version).
	Instance, Version string
}

// Tracer starts ejserver's spans. The zero of *Tracer is not usable: use Off or New.
type Tracer struct {
	trace.Tracer
	on bool
}

// Off is the no-op Tracer.
var Off = &Tracer{Tracer: noop.NewTracerProvider().Tracer("ejserver")}

// On reports whether spans are recorded and exported.
func (t *Tracer) On() bool { return t != nil && t.on }

// New returns the Tracer of cfg and the function that flushes and stops its exporter (a no-op when off).
func New(ctx context.Context, cfg Config) (*Tracer, func(context.Context) error, error) {
	if cfg.Endpoint == "" && !cfg.FromEnv {
		return Off, func(context.Context) error { return nil }, nil
	}
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(traceURL(cfg.Endpoint)))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "ejserver"),
		attribute.String("service.instance.id", cfg.Instance), attribute.String("service.version", cfg.Version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res))
	return &Tracer{Tracer: tp.Tracer("github.com/ejserver/ejserver"), on: true}, tp.Shutdown, nil
}

// traceURL completes an endpoint given as the collector's base URL with the traces path.
func traceURL(endpoint string) string {
	if len(endpoint) > 0 && endpoint[len(endpoint)-1] == '/' {
		endpoint = endpoint[:len(endpoint)-1]
	}
	const path = "/v1/traces"
	if len(endpoint) >= len(path) && endpoint[len(endpoint)-len(path):] == path {
		return endpoint
	}
	return endpoint + path
}

var propagator = propagation.TraceContext{}

// Parse reads a W3C traceparent (and tracestate) into a remote span context; it is invalid (IsValid false)
// when traceparent is absent or malformed.
func Parse(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{HeaderTraceParent: traceparent}
	if tracestate != "" {
		c[HeaderTraceState] = tracestate
	}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), c))
}

// Injected is how many headers Inject writes for ctx: 0, 1 (traceparent) or 2 (and tracestate).
func Injected(ctx context.Context) int {
	sc := trace.SpanContextFromContext(ctx)
	switch {
	case !sc.IsValid():
		return 0
	case sc.TraceState().Len() > 0:
		return 2
	}
	return 1
}

// Inject writes ctx's span context into h as traceparent (and tracestate when there is one).
func Inject(ctx context.Context, h http.Header) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	h[HeaderTraceParent] = []string{TraceParent(sc)}
	if ts := sc.TraceState().String(); ts != "" {
		h[HeaderTraceState] = []string{ts}
	}
}

// TraceParent formats sc as a W3C traceparent ("" when sc is invalid).
func TraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte
	copy(b[:], "00-")
	tid, sid := sc.TraceID(), sc.SpanID()
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// Derived is the span context of an item when no span is recorded: the parent's trace (a trigger's
// traceparent) if valid, else a trace id made of the execution id's 16 bytes; the span id is the execution
// id's last 8 bytes. It is not sampled unless the parent was.
func Derived(parent trace.SpanContext, executionID string) trace.SpanContext {
	var id [16]byte
	n := 0
	for i := 0; i < len(executionID) && n < 32; i++ {
		c := executionID[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			continue
		}
		if n%2 == 0 {
			id[n/2] = v << 4
		} else {
			id[n/2] |= v
		}
		n++
	}
	if id == [16]byte{} {
		id[15] = 1
	}
	var sid trace.SpanID
	copy(sid[:], id[8:])
	if sid == (trace.SpanID{}) {
		sid[7] = 1
	}
	cfg := trace.SpanContextConfig{TraceID: id, SpanID: sid}
	if parent.IsValid() {
		cfg.TraceID, cfg.TraceFlags, cfg.TraceState = parent.TraceID(), parent.TraceFlags(), parent.TraceState()
	}
	return trace.NewSpanContext(cfg)
}
