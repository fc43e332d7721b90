package main

import (
	"slices"
	"testing"
)

func TestPeerEnv(t *testing.T) {
	if env := peerEnv(options{}); env != nil {
		t.Errorf("no -peer-gomaxprocs: environment %v, want nothing added", env)
	}
	if env := peerEnv(options{peerProcs: 1}); !slices.Equal(env, []string{"GOMAXPROCS=1"}) {
		t.Errorf("-peer-gomaxprocs 1: environment %v", env)
	}
}

func TestNegativePeerGOMAXPROCSIsRefused(t *testing.T) {
	if code := run([]string{"-peer-gomaxprocs", "-1", "-workload", "steady-10"}); code != 2 {
		t.Errorf("-peer-gomaxprocs -1: exit %d, want 2", code)
	}
}
