package history

import "testing"

// TestReplayOf: a replay's link to the execution it re-runs (0007_replay_of) is stored and read back on both
// stores, and kept by a later record of the replay that does not repeat it.
func TestReplayOf(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		orig := newExec("replayed", 0, t0)
		mustWrite(t, s, orig)
		replay := running(newExec("replayed", 0, t0))
		replay.ReplayOf = orig.ID
		mustWrite(t, s, replay)
		if got := mustGet(t, s, replay.ID); got.ReplayOf != orig.ID {
			t.Fatalf("replayOf %q, want %q", got.ReplayOf, orig.ID)
		}
		end := newExec("replayed", 0, t0)
		end.ID = replay.ID
		mustWrite(t, s, end)
		if got := mustGet(t, s, replay.ID); got.ReplayOf != orig.ID || got.CompletedAt.IsZero() {
			t.Fatalf("after the end record: %+v", got)
		}
		if got := mustGet(t, s, orig.ID); got.ReplayOf != "" {
			t.Fatalf("the original links to %q", got.ReplayOf)
		}
	})
}
