package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// recordingHandler keeps the records it handles and counts the loggers derived from it with With.
type recordingHandler struct {
	mu      *sync.Mutex
	records *[]slog.Record
	derived *int
	level   slog.Level
}

func newRecordingHandler(level slog.Level) recordingHandler {
	return recordingHandler{mu: new(sync.Mutex), records: new([]slog.Record), derived: new(int), level: level}
}

func (h recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, r.Clone())
	return nil
}
func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.derived++
	return h
}
func (h recordingHandler) WithGroup(string) slog.Handler { return h }

// Preparing and sending a delivery derives no logger (slog's With formats its attributes at once, for every
// item, though almost none writes a line); a line that is written still names the job, item and execution.
func TestDeliveryLinesNameTheItemWithoutADerivedLogger(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusGone) // a permanent failure: one warning
	}))
	defer srv.Close()
	h := newRecordingHandler(slog.LevelInfo)
	s := New(Config{Logger: slog.New(h)})
	defer s.Close()
	d := testDelivery(srv.URL)
	d.Webhook.ConnectTimeoutMs, d.Webhook.TimeoutMs = 0, 0 // the system clock's defaults
	if res := s.Send(context.Background(), s.Prepare(d)); res.Success || !res.Permanent {
		t.Fatalf("result %+v, want a permanent failure", res)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if *h.derived != 0 {
		t.Fatalf("%d loggers derived with With", *h.derived)
	}
	if len(*h.records) != 1 {
		t.Fatalf("%d lines, want the one warning", len(*h.records))
	}
	got := map[string]string{}
	(*h.records)[0].Attrs(func(a slog.Attr) bool {
		got[a.Key] = a.Value.String()
		return true
	})
	if got["job"] != d.Payload.JobName || got["item"] != "2" || got["execution_id"] != d.Payload.ExecutionID || got["status"] != "410" {
		t.Fatalf("attributes %v", got)
	}
}
