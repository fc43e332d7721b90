package lease

import (
	"testing"
	"time"
)

// FuzzEventOrders applies events in any order and checks the lease's invariants after each: an ended lease
// never changes, an item ends once, the attempt never goes back nor past retry.maxAttempts by expiries,
// the lease never runs past maxAt, and a refused callback changes nothing.
func FuzzEventOrders(f *testing.F) {
	f.Add([]byte{1, 0, 2, 0, 3, 5, 4, 1, 2, 1})
	f.Add([]byte{3, 9, 4, 2, 1, 2, 3, 9, 2, 2})
	f.Add([]byte{5, 0, 2, 0, 2, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		p := Policy{MaxAttempts: 3, ResendWindow: 20 * time.Second, Streaming: len(script)%2 == 0}
		l := accepted(t0)
		now := t0
		ends := 0
		for i := 0; i+1 < len(script); i += 2 {
			op, arg := script[i]%6, int(script[i+1])
			now = now.Add(time.Duration(arg%90) * time.Second)
			ev := Event{At: now, Iteration: l.Iteration, Attempt: l.Attempt}
			if arg%7 == 0 && l.Attempt > 1 {
				ev.Attempt = l.Attempt - 1 // a late callback of an earlier attempt
			}
			switch op {
			case 0:
				ev.Kind, ev.Progress = Heartbeat, &arg
			case 1:
				ev.Kind, ev.Success, ev.HasMore = Complete, arg%3 != 0, arg%5 == 0
			case 2:
				ev.Kind = Tick
			case 3:
				ev.Kind, ev.Accepted, ev.Success = Sent, arg%2 == 0, arg%3 == 0
			case 4:
				ev.Kind = Cancel
			case 5:
				ev.Kind, ev.Success = Complete, true // a repeat of a completion
			}
			before := l
			d := Apply(l, ev, p)
			if d.Refusal != Applied && d.Changed {
				t.Fatalf("refused %s but changed the lease", d.Refusal)
			}
			if before.State.Ended() && (d.Changed || d.Ended || d.Resend) {
				t.Fatalf("ended lease (%s) changed by %+v", before.State, ev)
			}
			if d.Ended {
				ends++
				if !d.Lease.State.Ended() {
					t.Fatalf("Ended with state %s", d.Lease.State)
				}
			}
			if d.Lease.Attempt < before.Attempt && d.Lease.Iteration <= before.Iteration {
				t.Fatalf("attempt went back: %d -> %d", before.Attempt, d.Lease.Attempt)
			}
			if ev.Kind == Tick && d.Resend && d.Lease.Attempt > p.MaxAttempts {
				t.Fatalf("expiry retried past maxAttempts: attempt %d", d.Lease.Attempt)
			}
			if !d.Lease.State.Ended() && d.Lease.ExpiresAt.After(d.Lease.MaxAt) {
				t.Fatalf("lease runs past maxAt: %v > %v", d.Lease.ExpiresAt, d.Lease.MaxAt)
			}
			if d.Resend && d.Lease.State != Retrying {
				t.Fatalf("resend from state %s", d.Lease.State)
			}
			l = d.Lease
		}
		if ends > 1 {
			t.Fatalf("ended %d times", ends)
		}
	})
}
