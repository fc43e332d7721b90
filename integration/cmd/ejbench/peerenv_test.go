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

func TestProfileAtNeedsProfile(t *testing.T) {
	for _, args := range [][]string{{"-profile-at", "1m"}, {"-profile", t.TempDir(), "-profile-at", "-1s"}} {
		if code := run(append(args, "-workload", "steady-10")); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
