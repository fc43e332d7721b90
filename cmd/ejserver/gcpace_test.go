package main

import (
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestServeGCHeadroom(t *testing.T) {
	t.Setenv("EJ_GC_HEADROOM", "")
	os.Unsetenv("EJ_GC_HEADROOM") // t.Setenv restores it afterwards
	if c, err := parseServe(nil); err != nil || c.gcHeadroom != 256<<20 {
		t.Fatalf("default headroom %d: %v", c.gcHeadroom, err)
	}
	t.Setenv("EJ_GC_HEADROOM", "0")
	if c, err := parseServe(nil); err != nil || c.gcHeadroom != 0 {
		t.Fatalf("EJ_GC_HEADROOM=0: %d %v", c.gcHeadroom, err)
	}
	if c, err := parseServe([]string{"--gc-headroom", "64"}); err != nil || c.gcHeadroom != 64<<20 {
		t.Fatalf("the flag wins over the environment: %d %v", c.gcHeadroom, err)
	}
	for _, bad := range []string{"-1", "65537", "128MiB"} {
		if _, err := parseServe([]string{"--gc-headroom", bad}); err == nil || !strings.Contains(err.Error(), "gc-headroom") {
			t.Errorf("--gc-headroom %s: %v", bad, err)
		}
	}
}

// GOGC in the environment is the operator's percent: the pacer leaves it alone.
func TestGCPacerLeavesAnOperatorsGOGC(t *testing.T) {
	prev := debug.SetGCPercent(77)
	defer debug.SetGCPercent(prev)
	t.Setenv("GOGC", "77")
	var log strings.Builder
	p := newGCPacer(128<<20, slog.New(slog.NewTextHandler(&log, nil)))
	p.Start()
	p.Stop()
	if now := debug.SetGCPercent(77); now != 77 || p.Percent() != 0 {
		t.Fatalf("percent %d (pacer %d), want the operator's 77", now, p.Percent())
	}
	if !strings.Contains(log.String(), "GOGC is set") {
		t.Fatalf("no line says why: %q", log.String())
	}
	os.Unsetenv("GOGC")
	p = newGCPacer(128<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.Start()
	defer p.Stop()
	for deadline := time.Now().Add(5 * time.Second); p.Percent() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("without GOGC the pacer set no percent")
		}
		runtime.GC() // it decides after a collection
	}
}
