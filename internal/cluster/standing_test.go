package cluster

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A fresh session stands sound at epoch 0, and each heartbeat that renews the lease closes the channel
// Standing gave: a fire waiting on a lease gone stale (a peer thawed after a pause) is woken by the renewal.
// The suspension and the resume are covered end to end by the integration test
// TestSessionSuspendedAtAFiresLeadTimeCostsLatenessNotTheFire.
func TestStandingIsSoundAndWakesOnRenewal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Dial(ctx, SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 3 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	st, changed := s.Standing()
	if want := (SessionStanding{Healthy: true, Lease: true}); st != want {
		t.Fatalf("standing %+v, want %+v", st, want)
	}
	for range 2 { // a heartbeat every second
		select {
		case <-changed:
		case <-time.After(20 * time.Second):
			t.Fatal("no heartbeat woke the standing's waiters")
		}
		if st, changed = s.Standing(); !st.Lease || st.Epoch != 0 {
			t.Fatalf("standing after a heartbeat %+v", st)
		}
	}
}
