package main

import (
	"os"
	"strings"
	"testing"
	"time"
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
