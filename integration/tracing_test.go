package integration

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/ejserver/ejserver/integration/harness"
)

// otlpSpan is a span as an OTLP/HTTP collector receives it.
type otlpSpan struct {
	name, traceID, spanID, parentID string
	attrs                           map[string]string
	links                           []string // trace id-span id
	failed                          bool     // status code error
}

// otlpCollector is a real OTLP/HTTP endpoint: it decodes the protobuf ExportTraceServiceRequests the SDK
// sends to /v1/traces.
type otlpCollector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []otlpSpan
	bad   []string
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				c.fail("gzip: " + err.Error())
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			c.fail(r.URL.Path + " " + r.Header.Get("Content-Type") + " " + errString(err))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := otlpSpan{name: s.Name, traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId),
						parentID: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{},
						failed: s.Status != nil && s.Status.Code == tracepb.Status_STATUS_CODE_ERROR}
					for _, l := range s.Links {
						sp.links = append(sp.links, hex.EncodeToString(l.TraceId)+"-"+hex.EncodeToString(l.SpanId))
					}
					for _, kv := range s.Attributes {
						v := kv.Value.GetStringValue()
						if v == "" {
							v = strings.TrimSpace(strings.TrimPrefix(kv.Value.String(), "int_value:"))
						}
						sp.attrs[kv.Key] = v
					}
					c.spans = append(c.spans, sp)
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (c *otlpCollector) fail(s string) {
	c.mu.Lock()
	c.bad = append(c.bad, s)
	c.mu.Unlock()
}

func (c *otlpCollector) snapshot() ([]otlpSpan, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpSpan(nil), c.spans...), append([]string(nil), c.bad...)
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

func triggerTraced(t *testing.T, p *harness.Peer, job string) {
	t.Helper()
	if !eventually(30*time.Second, func() bool {
		s, _, _ := p.Do("POST", "/api/v1/jobs/"+job+"/trigger", nil, nil,
			"traceparent", "00-"+callerTrace+"-"+callerSpan+"-01", "tracestate", "caller=yes")
		return s == http.StatusAccepted
	}) {
		t.Fatal("trigger")
	}
}

// Spans of a traced trigger reach a real OTLP/HTTP endpoint with the right links: the fire is a child of the
// caller's span, each item of the fire, each attempt of its item; the receiver gets the caller's trace id
// and tracestate with the attempt's span as parent. With tracing off the receiver still sees the caller's
// trace.
func TestTracingSpansReachOTLPAndReceiversSeeTheCallersTrace(t *testing.T) {
	t.Parallel()
	col := newOTLPCollector(t)
	recv := newReceiver(t)
	c := newCluster(t, 2, withArgs("--otlp-endpoint", col.srv.URL))
	a := c.peers[0]
	mustDo(t, a, "POST", "/api/v1/jobs", job("traced", "@yearly", 2, recv.URL), http.StatusCreated, nil)
	triggerTraced(t, a, "traced")
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatalf("%d deliveries", len(ds))
	}
	parents := map[string]bool{} // the attempts' span ids, as receivers saw them
	for _, d := range ds {
		tp := strings.Split(d.Header.Get("traceparent"), "-")
		if len(tp) != 4 || tp[0] != "00" || tp[1] != callerTrace || tp[3] != "01" || d.Header.Get("tracestate") != "caller=yes" {
			t.Fatalf("item %d: traceparent %q tracestate %q", d.Payload.ShardingItem, d.Header.Get("traceparent"), d.Header.Get("tracestate"))
		}
		parents[tp[2]] = true
	}

	var spans []otlpSpan
	if !eventually(30*time.Second, func() bool {
		spans, _ = col.snapshot()
		n := 0
		for _, s := range spans {
			if s.name == "webhook attempt" && s.traceID == callerTrace {
				n++
			}
		}
		return n >= 2
	}) {
		t.Fatalf("spans: %+v", spans)
	}
	if _, bad := col.snapshot(); len(bad) > 0 {
		t.Fatalf("bad export requests: %v", bad)
	}
	byID := map[string]otlpSpan{}
	for _, s := range spans {
		if s.traceID == callerTrace {
			byID[s.spanID] = s
		}
	}
	attempts := 0
	for id := range parents {
		att, ok := byID[id]
		if !ok || att.name != "webhook attempt" || att.attrs["ejserver.attempt"] != "1" || att.attrs["http.response.status_code"] != "200" {
			t.Fatalf("the receiver's parent span %s: %+v", id, att)
		}
		item, ok := byID[att.parentID]
		if !ok || item.name != "item traced" || item.attrs["ejserver.job"] != "traced" || item.attrs["ejserver.source"] != "MANUAL" ||
			item.attrs["http.response.status_code"] != "200" || item.attrs["ejserver.lateness_ms"] == "" || item.attrs["ejserver.item"] == "" {
			t.Fatalf("the attempt's parent: %+v", item)
		}
		fire, ok := byID[item.parentID]
		if !ok || fire.name != "fire traced" || fire.parentID != callerSpan {
			t.Fatalf("the item's parent: %+v (spans %+v)", fire, spans)
		}
		attempts++
	}
	if attempts != 2 {
		t.Fatalf("%d attempts traced", attempts)
	}

	// the trace id is stored with each execution
	var execs struct {
		Items []struct{ TraceID string }
	}
	if !eventually(30*time.Second, func() bool { // SQLite: each peer holds its own items' rows
		n := 0
		for _, p := range c.peers {
			mustDo(t, p, "GET", "/api/v1/jobs/traced/executions", nil, http.StatusOK, &execs)
			for _, e := range execs.Items {
				if e.TraceID != callerTrace {
					return false
				}
				n++
			}
		}
		return n == 2
	}) {
		t.Fatalf("executions %+v", execs.Items)
	}

	// tracing off: no spans, but the receiver still sees the caller's trace
	off := newCluster(t, 1)
	recv2 := newReceiver(t)
	mustDo(t, off.peers[0], "POST", "/api/v1/jobs", job("untraced", "@yearly", 1, recv2.URL), http.StatusCreated, nil)
	triggerTraced(t, off.peers[0], "untraced")
	ds, ok = recv2.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok || !strings.HasPrefix(ds[0].Header.Get("traceparent"), "00-"+callerTrace+"-") || ds[0].Header.Get("tracestate") != "caller=yes" {
		t.Fatalf("tracing off: %v %+v", ok, ds)
	}
	// and a fire without a caller gets a trace of its own
	mustDo(t, off.peers[0], "POST", "/api/v1/jobs/untraced/trigger", nil, http.StatusAccepted, nil)
	ds, ok = recv2.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok || len(ds[1].Header.Get("traceparent")) != 55 || strings.Contains(ds[1].Header.Get("traceparent"), callerTrace) {
		t.Fatalf("untraced trigger: %v %q", ok, ds[len(ds)-1].Header.Get("traceparent"))
	}
}

// The callbacks of a long-running item get spans in the item's trace: a heartbeat from a receiver with a
// trace of its own is the item span's child and links the receiver's span; a completion from a receiver
// that propagated the webhook's traceparent is a child of the receiver's span; a refused completion's span
// has the error status.
func TestTracingAsyncCallbacksJoinTheItemsTrace(t *testing.T) {
	t.Parallel()
	col := newOTLPCollector(t)
	recv := newReceiver(t)
	accepting(recv)
	c := newCluster(t, 1, withArgs("--otlp-endpoint", col.srv.URL))
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", asyncJob("traced-async", "", 1, recv.URL, 30), http.StatusCreated, nil)
	triggerTraced(t, p, "traced-async")
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatal("no delivery")
	}
	d := ds[0].Payload
	attemptSpan := strings.Split(ds[0].Header.Get("traceparent"), "-")[2]
	send := func(kind string, body any, traceparent string, want int) {
		t.Helper()
		s, raw, err := p.Do("POST", "/api/v1/executions/"+d.ExecutionID+"/"+kind, body, nil,
			"Authorization", "Bearer "+d.CallbackToken, "traceparent", traceparent)
		if err != nil || s != want {
			t.Fatalf("%s: %d %s %v", kind, s, raw, err)
		}
	}
	const receiverTrace, receiverSpan, receiverChild = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "c7ad6b7169203332"
	send("heartbeat", map[string]any{"progress": 50}, "00-"+receiverTrace+"-"+receiverSpan+"-01", http.StatusOK)
	send("complete", map[string]any{"status": "success"}, "00-"+callerTrace+"-"+receiverChild+"-01", http.StatusOK)
	send("complete", map[string]any{"status": "failure"}, "", http.StatusConflict)

	var spans []otlpSpan
	byName := map[string][]otlpSpan{}
	if !eventually(30*time.Second, func() bool {
		spans, _ = col.snapshot()
		byName = map[string][]otlpSpan{}
		for _, s := range spans {
			byName[s.name] = append(byName[s.name], s)
		}
		return len(byName["heartbeat traced-async"]) == 1 && len(byName["complete traced-async"]) == 2 && len(byName["item traced-async"]) == 1
	}) {
		t.Fatalf("spans: %+v", spans)
	}
	if _, bad := col.snapshot(); len(bad) > 0 {
		t.Fatalf("bad export requests: %v", bad)
	}
	item := byName["item traced-async"][0]
	if item.traceID != callerTrace || item.attrs["ejserver.execution_id"] != d.ExecutionID {
		t.Fatalf("item span %+v", item)
	}
	hb := byName["heartbeat traced-async"][0]
	if hb.traceID != callerTrace || hb.parentID != item.spanID || hb.failed || hb.attrs["ejserver.callback.outcome"] != "applied" ||
		hb.attrs["ejserver.execution_id"] != d.ExecutionID || hb.attrs["ejserver.job"] != "traced-async" || hb.attrs["ejserver.item"] != "0" ||
		hb.attrs["ejserver.attempt"] != "1" || len(hb.links) != 1 || hb.links[0] != receiverTrace+"-"+receiverSpan {
		t.Fatalf("heartbeat span %+v (item %s, attempt %s)", hb, item.spanID, attemptSpan)
	}
	var done, refused otlpSpan
	for _, s := range byName["complete traced-async"] {
		if s.failed {
			refused = s
		} else {
			done = s
		}
	}
	if done.traceID != callerTrace || done.parentID != receiverChild || len(done.links) != 0 || done.attrs["ejserver.callback.outcome"] != "applied" {
		t.Fatalf("completion span %+v", done)
	}
	if refused.traceID != callerTrace || refused.parentID != item.spanID || refused.attrs["ejserver.callback.outcome"] != "already-completed" {
		t.Fatalf("refused completion's span %+v", refused)
	}
}
