package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// brokenWriter is a scrape whose client went away: every write fails.
type brokenWriter struct{ h http.Header }

func (w *brokenWriter) Header() http.Header       { return w.h }
func (w *brokenWriter) WriteHeader(int)           {}
func (w *brokenWriter) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

func TestAnAbandonedScrapeWritesOneWarning(t *testing.T) {
	var buf bytes.Buffer
	m := New(Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	families := strings.Count(scrape(t, m), "# TYPE ")
	if families < 10 {
		t.Fatalf("a scrape served %d families; the test needs many", families)
	}
	for range 3 {
		m.Handler().ServeHTTP(&brokenWriter{h: http.Header{}}, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("3 abandoned scrapes of %d families wrote %d lines, want 1:\n%s", families, len(lines), buf.String())
	}
	if l := lines[0]; !strings.Contains(l, `msg="error encoding and sending metric family"`) || !strings.Contains(l, "broken pipe") ||
		!strings.Contains(l, "occurrences=1") {
		t.Errorf("the line does not say what failed: %s", l)
	}
}

func TestScrapeErrorKindsAreBounded(t *testing.T) {
	var buf bytes.Buffer
	l := newScrapeErrorLog(slog.New(slog.NewTextHandler(&buf, nil)))
	for i := range 50 {
		l.Println(fmt.Sprintf("message %d:", i), errors.New("boom"))
	}
	l.Println() // no message at all
	if n := len(l.kinds); n > maxScrapeErrorKinds+1 {
		t.Errorf("%d kinds kept for 51 messages, want at most %d", n, maxScrapeErrorKinds+1)
	}
	if got := strings.Count(buf.String(), "\n"); got != maxScrapeErrorKinds+1 {
		t.Errorf("%d lines, want one for each of the first %d messages and one for the rest:\n%s", got, maxScrapeErrorKinds, buf.String())
	}
	if !strings.Contains(buf.String(), `msg="message 0" err=boom occurrences=1`) {
		t.Errorf("a message's line lost its error:\n%s", buf.String())
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d", rec.Code)
	}
	return rec.Body.String()
}
