package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/receiver"
)

// hasMoreFor answers {"hasMore": true} to the first n requests, then {"hasMore": false}.
func hasMoreFor(n int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, i int) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"hasMore": %t, "processed": 10}`, i <= n)
	}
}

func TestDataflowStreaming(t *testing.T) {
	t.Run("re-POSTs while hasMore, each a distinct message", func(t *testing.T) {
		rec := newRecorder(t, hasMoreFor(3))
		s, _ := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Streaming = true
		res := s.Deliver(context.Background(), d)
		if !res.Success || res.Iterations != 4 || res.Attempts != 4 || res.HasMore {
			t.Fatalf("result = %+v", res)
		}
		wantIDs := []string{testExecutionID, testExecutionID + ".2", testExecutionID + ".3", testExecutionID + ".4"}
		for i, r := range rec.requests() {
			p := r.payload(t)
			if id := r.header.Get("Webhook-Id"); id != wantIDs[i] || p.Iteration != i+1 || p.Attempt != 1 ||
				p.ExecutionID != testExecutionID {
				t.Errorf("POST %d: webhook-id %q, iteration %d, attempt %d, executionId %q", i+1, id, p.Iteration, p.Attempt, p.ExecutionID)
			}
		}
	})
	t.Run("without streaming one POST per fire, whatever the answer", func(t *testing.T) {
		rec := newRecorder(t, hasMoreFor(100))
		s, _ := newTestSender(t, Config{})
		res := s.Deliver(context.Background(), testDelivery(rec.URL))
		if !res.Success || res.Iterations != 1 || rec.count() != 1 || rec.requests()[0].payload(t).Iteration != 0 {
			t.Fatalf("result = %+v", res)
		}
		if strings.Contains(string(rec.requests()[0].body), "iteration") {
			t.Errorf("a non-streaming body carries an iteration: %s", rec.requests()[0].body)
		}
	})
	t.Run("stops on a non-2xx answer", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 3 {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			hasMoreFor(100)(w, r, n)
		})
		s, _ := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Streaming = true
		res := s.Deliver(context.Background(), d)
		if res.Success || res.Iterations != 3 || res.StatusCode != 400 || rec.count() != 3 {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("stops on a 2xx that is not {hasMore: true}", func(t *testing.T) {
		for _, body := range []string{`{"hasMore": false}`, `{}`, `not json`, `{"hasMore": "yes"}`, ``} {
			rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request, _ int) { _, _ = io.WriteString(w, body) })
			s, _ := newTestSender(t, Config{})
			d := testDelivery(rec.URL)
			d.Streaming = true
			if res := s.Deliver(context.Background(), d); !res.Success || res.Iterations != 1 {
				t.Fatalf("body %q: result = %+v", body, res)
			}
		}
	})
	t.Run("a failed iteration is retried under the same id", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 2 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			hasMoreFor(2)(w, r, n)
		})
		s, clk := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Streaming = true
		res, _ := deliverAdvancing(t, s, clk, context.Background(), d)
		if !res.Success || res.Iterations != 2 || res.Attempts != 3 {
			t.Fatalf("result = %+v", res)
		}
		reqs := rec.requests()
		second, retry := reqs[1], reqs[2]
		if second.header.Get("Webhook-Id") != testExecutionID+".2" || retry.header.Get("Webhook-Id") != testExecutionID+".2" ||
			retry.payload(t).Attempt != 2 || retry.payload(t).Iteration != 2 {
			t.Fatalf("retry of iteration 2: ids %q %q, body %s", second.header.Get("Webhook-Id"), retry.header.Get("Webhook-Id"), retry.body)
		}
	})
	t.Run("stops when ctx is cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 3 {
				cancel() // the job is disabled while iteration 3 runs
				<-r.Context().Done()
				return
			}
			hasMoreFor(100)(w, r, n)
		})
		s, _ := newTestSender(t, Config{})
		d := testDelivery(rec.URL)
		d.Streaming = true
		res := s.Deliver(ctx, d)
		if res.Success || res.Iterations != 3 || rec.count() != 3 || !strings.Contains(res.FailureCause, "cancelled") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("stops at the deadline, reporting more to do", func(t *testing.T) {
		s, clk := newTestSender(t, Config{})
		rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 2 {
				clk.Advance(4 * time.Second) // the item's next fire comes while iteration 2 runs (within its 5s timeout)
			}
			hasMoreFor(100)(w, r, n)
		})
		d := testDelivery(rec.URL)
		d.Streaming = true
		d.Deadline = clk.Now().Add(3 * time.Second)
		res := s.Deliver(context.Background(), d)
		if !res.Success || !res.HasMore || res.Iterations != 2 || rec.count() != 2 {
			t.Fatalf("result = %+v", res)
		}
	})
}

// TestPayloadMatchesReceiver: what the sender encodes, the receiver helper decodes to the same values.
func TestPayloadMatchesReceiver(t *testing.T) {
	p := testDelivery("").Payload
	p.Attempt, p.Iteration = 2, 3
	p.ScheduledAt = time.Date(2026, 11, 21, 18, 0, 0, 0, time.FixedZone("CST", 8*3600))
	body, err := payloadBody(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"scheduledAt":"2026-11-21T10:00:00Z"`) {
		t.Errorf("scheduledAt is not UTC: %s", body)
	}
	var got receiver.Payload
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := receiver.Payload{
		JobName: p.JobName, TaskID: p.TaskID, ExecutionID: p.ExecutionID, ShardingItem: p.ShardingItem,
		ShardingParameter: p.ShardingParameter, ShardingTotalCount: p.ShardingTotalCount, JobParameter: p.JobParameter,
		Source: string(p.Source), ScheduledAt: p.ScheduledAt.UTC(), Attempt: 2, Iteration: 3, InstanceID: p.InstanceID,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("receiver decoded\n%+v\nwant\n%+v", got, want)
	}
	// Both types have the same JSON fields.
	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Tag.Get("json"))
		}
		return out
	}
	if a, b := fields(Payload{}), fields(receiver.Payload{}); !reflect.DeepEqual(a, b) {
		t.Fatalf("fields differ:\n%v\n%v", a, b)
	}
}

// FuzzShardingContextHeader: the header is printable ASCII and decodes to the payload's values.
func FuzzShardingContextHeader(f *testing.F) {
	f.Add("settle", "Guangzhou", "batch=500")
	f.Add("j", "广州 😀\n\"", "\x00\xff")
	f.Add("j", "\xff\xfe", "")
	f.Fuzz(func(t *testing.T, job, param, jobParam string) {
		p := Payload{JobName: job, ShardingParameter: param, JobParameter: jobParam, ShardingTotalCount: 3}
		h, err := shardingContextHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(h); i++ {
			if h[i] < 0x20 || h[i] > 0x7e {
				t.Fatalf("byte %#x at %d in %q", h[i], i, h)
			}
		}
		var back shardingContext
		if err := json.Unmarshal([]byte(h), &back); err != nil {
			t.Fatalf("%q: %v", h, err)
		}
		var want string // encoding/json's own treatment of invalid UTF-8 (one U+FFFD per bad byte)
		b, _ := json.Marshal(param)
		_ = json.Unmarshal(b, &want)
		if back.ShardingParameter != want {
			t.Fatalf("shardingParameter %q, want %q", back.ShardingParameter, want)
		}
	})
}
