package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

func TestWarnWritesOneLinePerIntervalWithItsCount(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	clk := clock.NewFake(time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC))
	w := New(log, clk, 10*time.Second, "item's end acknowledged before its history record was committed")

	w.Warn("job", "a", "item", 0) // the first: at once
	for i := 1; i <= 500; i++ {
		w.Warn("job", "a", "item", i) // within the interval: counted
	}
	clk.Advance(9 * time.Second)
	w.Warn("job", "b", "item", 7) // still within it
	clk.Advance(time.Second)
	w.Warn("job", "c", "item", 3) // the interval is over: one line for 502 occurrences
	w.Warn("job", "c", "item", 4)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="item's end acknowledged before its history record was committed" job=a item=0 occurrences=1`,
		`level=WARN msg="item's end acknowledged before its history record was committed" job=c item=3 occurrences=502`,
	}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s\nwant %d lines", buf.String(), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
}

func TestWarnCountsOccurrencesFromConcurrentCallers(t *testing.T) {
	var buf bytes.Buffer
	clk := clock.NewFake(time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC))
	w := New(slog.New(slog.NewTextHandler(&buf, nil)), clk, time.Minute, "dropped")
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 1000; i++ {
				w.Warn()
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	clk.Advance(time.Minute)
	w.Warn()
	out := buf.String()
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, "occurrences=1\n") || !strings.Contains(out, "occurrences=8000\n") {
		t.Fatalf("want one line for the first and one for the other 7,999 and the last:\n%s", out)
	}
}
