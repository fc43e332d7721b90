package webhook

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/ejserver/ejserver"
)

// TestAcceptedEndsTheDelivery: a 202 after a failed attempt ends the delivery as accepted, each request
// carries the callback URL and the token of its own attempt, in the body and the headers.
func TestAcceptedEndsTheDelivery(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	s, clk := newTestSender(t, Config{})
	d := testDelivery(rec.URL)
	d.Retry = ejserver.RetryPolicy{MaxAttempts: 5, InitialBackoffMs: 1000, MaxBackoffMs: 1000}
	d.Callback = func(it, attempt int) (string, string) {
		return "http://peer/api/v1/executions/" + d.Payload.ExecutionID, fmt.Sprintf("tok-%d-%d", it, attempt)
	}
	res, _ := deliverAdvancing(t, s, clk, context.Background(), d)
	if !res.Success || !res.Accepted || res.Attempts != 2 || res.Attempt != 2 || res.StatusCode != 202 {
		t.Fatalf("result = %+v", res)
	}
	for i, r := range rec.requests() {
		want := fmt.Sprintf("tok-0-%d", i+1)
		p := r.payload(t)
		if p.CallbackToken != want || r.header.Get(HeaderCallbackToken) != want {
			t.Errorf("request %d: token body %q header %q, want %q", i+1, p.CallbackToken, r.header.Get(HeaderCallbackToken), want)
		}
		if p.CallbackURL == "" || r.header.Get(HeaderCallbackURL) != p.CallbackURL {
			t.Errorf("request %d: callback URL body %q header %q", i+1, p.CallbackURL, r.header.Get(HeaderCallbackURL))
		}
	}
}

// TestAcceptedStopsStreaming: a DATAFLOW item answered 202 is not POSTed again until its completion asks.
func TestAcceptedStopsStreaming(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			w.Write([]byte(`{"hasMore": true}`))
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	s, clk := newTestSender(t, Config{})
	d := testDelivery(rec.URL)
	d.Streaming = true
	res, _ := deliverAdvancing(t, s, clk, context.Background(), d)
	if !res.Accepted || rec.count() != 2 || res.Iteration != 2 || res.Attempt != 1 {
		t.Fatalf("result = %+v after %d requests", res, rec.count())
	}
}

// TestFirstAttemptContinuesAnExecution: a re-POST after a lease ran out continues the attempt numbering,
// and retry.maxAttempts bounds the attempt number, not the count of this delivery's requests.
func TestFirstAttemptContinuesAnExecution(t *testing.T) {
	rec := newRecorder(t, status(http.StatusInternalServerError))
	s, clk := newTestSender(t, Config{})
	d := testDelivery(rec.URL)
	d.Retry = ejserver.RetryPolicy{MaxAttempts: 4, InitialBackoffMs: 10, MaxBackoffMs: 10}
	d.FirstAttempt = 3
	res, _ := deliverAdvancing(t, s, clk, context.Background(), d)
	if res.Success || res.Attempts != 2 || res.Attempt != 4 {
		t.Fatalf("result = %+v", res)
	}
	for i, r := range rec.requests() {
		if p := r.payload(t); p.Attempt != 3+i || r.header.Get("Webhook-Id") != testExecutionID {
			t.Errorf("request %d: attempt %d id %q", i+1, p.Attempt, r.header.Get("Webhook-Id"))
		}
	}
}
