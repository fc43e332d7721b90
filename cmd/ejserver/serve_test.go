package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/history"
)

func TestServeFireLead(t *testing.T) {
	t.Setenv("EJ_FIRE_LEAD", "")
	os.Unsetenv("EJ_FIRE_LEAD") // t.Setenv restores it afterwards
	c, err := parseServe(nil)
	if err != nil || c.fireLead != time.Second {
		t.Fatalf("default fire lead %v: %v", c.fireLead, err)
	}
	t.Setenv("EJ_FIRE_LEAD", "250ms")
	if c, err = parseServe(nil); err != nil || c.fireLead != 250*time.Millisecond {
		t.Fatalf("EJ_FIRE_LEAD: %v %v", c.fireLead, err)
	}
	if c, err = parseServe([]string{"--fire-lead", "0"}); err != nil || c.fireLead != 0 {
		t.Fatalf("the flag wins over the environment: %v %v", c.fireLead, err)
	}
	for _, bad := range []string{"-1s", "2m"} {
		if _, err := parseServe([]string{"--fire-lead", bad}); err == nil || !strings.Contains(err.Error(), "--fire-lead") {
			t.Fatalf("--fire-lead %s: %v", bad, err)
		}
	}
}

func TestAdvertiseURL(t *testing.T) {
	tests := []struct {
		given, listen, want, err string
	}{
		{"", "127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"", "0.0.0.0:8080", "http://10.0.0.7:8080", ""},
		{"", ":8080", "http://10.0.0.7:8080", ""},
		{"", "[::]:8080", "http://10.0.0.7:8080", ""},
		{"https://ejserver.example.com/", "0.0.0.0:8080", "https://ejserver.example.com", ""},
		{"https://ejserver.example.com/base", "", "https://ejserver.example.com/base", ""},
		{"", "no-port", "", "cannot derive"},
		{"ftp://h", "", "", "http(s) URL"},
		{"https://", "", "", "http(s) URL"},
		{"https://u:p@h", "", "", "http(s) URL"},
		{"https://h/?x=1", "", "", "http(s) URL"},
		{"ejserver:8080", "", "", "http(s) URL"},
	}
	for _, tt := range tests {
		got, err := advertiseURL(tt.given, tt.listen, "10.0.0.7", false)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("advertiseURL(%q, %q) = %q, %v; want an error with %q", tt.given, tt.listen, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("advertiseURL(%q, %q) = %q, %v; want %q", tt.given, tt.listen, got, err, tt.want)
		}
	}
	if _, err := parseServe([]string{"--lease-retention", "0s"}); err == nil || !strings.Contains(err.Error(), "--lease-retention") {
		t.Errorf("--lease-retention 0s: %v", err)
	}
	if _, err := parseServe([]string{"--advertise-url", "not a url"}); err == nil || !strings.Contains(err.Error(), "--advertise-url") {
		t.Errorf("--advertise-url: %v", err)
	}
}

func TestCallbackSecretFile(t *testing.T) {
	dir := t.TempDir()
	good, short := dir+"/good", dir+"/short"
	if err := os.WriteFile(good, []byte(strings.Repeat("k", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("too-short"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := newLogger(serveConfig{logLevel: "error", logFormat: "text"})
	b, err := callbackSecret(serveConfig{callbackSecret: good}, nil, log)
	if err != nil || string(b) != strings.Repeat("k", 40) {
		t.Fatalf("good file: %q, %v", b, err)
	}
	for _, f := range []string{short, dir + "/missing"} {
		if _, err := callbackSecret(serveConfig{callbackSecret: f}, nil, log); err == nil || !strings.Contains(err.Error(), "--callback-secret-file") {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestAlertLostGraceBounded(t *testing.T) {
	for _, v := range []string{"0s", "2h"} {
		if _, err := parseServe([]string{"--alert-lost-grace", v}); err == nil || !strings.Contains(err.Error(), "--alert-lost-grace") {
			t.Errorf("--alert-lost-grace %s: %v", v, err)
		}
	}
	c, err := parseServe([]string{"--alert-lost-grace", "5s"})
	if err != nil || c.alertLostGrace.Seconds() != 5 {
		t.Fatalf("--alert-lost-grace 5s: %+v, %v", c.alertLostGrace, err)
	}
}

func TestServeHistoryStatusTraces(t *testing.T) {
	t.Setenv("EJ_HISTORY_STATUS_TRACES", "")
	os.Unsetenv("EJ_HISTORY_STATUS_TRACES") // t.Setenv restores it afterwards
	if c, err := parseServe(nil); err != nil || !c.historyStatusTraces {
		t.Fatalf("status traces are recorded by default: %v %v", c.historyStatusTraces, err)
	}
	t.Setenv("EJ_HISTORY_STATUS_TRACES", "false")
	if c, err := parseServe(nil); err != nil || c.historyStatusTraces {
		t.Fatalf("EJ_HISTORY_STATUS_TRACES=false: %v %v", c.historyStatusTraces, err)
	}
	if c, err := parseServe([]string{"--history-status-traces=true"}); err != nil || !c.historyStatusTraces {
		t.Fatalf("the flag wins over the environment: %v %v", c.historyStatusTraces, err)
	}
	if _, err := parseServe([]string{"--history-status-traces=maybe"}); err == nil || !strings.Contains(err.Error(), "history-status-traces") {
		t.Fatalf("a value that is no boolean: %v", err)
	}
}

// TestServeHistoryQueue: --history-queue [EJ_HISTORY_QUEUE] bounds the history writer's records held; a value
// outside its bounds or no number is refused, naming the flag.
func TestServeHistoryQueue(t *testing.T) {
	t.Setenv("EJ_HISTORY_QUEUE", "")
	os.Unsetenv("EJ_HISTORY_QUEUE") // t.Setenv restores it afterwards
	if c, err := parseServe(nil); err != nil || c.historyQueue != 20_000 {
		t.Fatalf("default: %d %v, want 20000", c.historyQueue, err)
	}
	t.Setenv("EJ_HISTORY_QUEUE", "100000")
	if c, err := parseServe(nil); err != nil || c.historyQueue != 100_000 {
		t.Fatalf("EJ_HISTORY_QUEUE=100000: %d %v", c.historyQueue, err)
	}
	if c, err := parseServe([]string{"--history-queue", "1000"}); err != nil || c.historyQueue != 1000 {
		t.Fatalf("the flag wins over the environment, and its least value is taken: %d %v", c.historyQueue, err)
	}
	if c, err := parseServe([]string{"--history-queue", "5000000"}); err != nil || c.historyQueue != 5_000_000 {
		t.Fatalf("its greatest value is taken: %d %v", c.historyQueue, err)
	}
	for _, bad := range []string{"0", "-1", "999", "5000001", "many"} {
		if _, err := parseServe([]string{"--history-queue", bad}); err == nil || !strings.Contains(err.Error(), "history-queue") {
			t.Errorf("--history-queue %s: %v, want an error naming the flag", bad, err)
		}
	}
}

// TestRollupBehindSource: the metric reads an SQLite store's rollup (0: nothing to count), NaN once the store
// cannot be read, and is left out for a store that does not say.
func TestRollupBehindSource(t *testing.T) {
	ctx := context.Background()
	store, err := history.Open(ctx, filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	read := rollupBehind(store)
	if read == nil {
		t.Fatal("an SQLite history got no source")
	}
	if v := read(); v != 0 {
		t.Fatalf("an empty SQLite history is %v s behind, want 0", v)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if v := read(); !math.IsNaN(v) {
		t.Fatalf("a closed store read %v, want NaN", v)
	}
	if rollupBehind(struct{ history.Store }{store}) != nil {
		t.Fatal("a store that does not report its rollup got the series")
	}
}
