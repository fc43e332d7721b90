package lease

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func accepted(at time.Time) Lease {
	return Accept(Accepted{
		Lease: Lease{ExecutionID: "e1", JobName: "settle", ShardingItem: 2, Attempt: 1},
		At:    at, Started: at.Add(-time.Second), LeaseFor: time.Minute, MaxDuration: 24 * time.Hour,
	})
}

var pol = Policy{MaxAttempts: 3, ResendWindow: 30 * time.Second}

func intp(n int) *int { return &n }

func TestAcceptSetsTheLease(t *testing.T) {
	l := accepted(t0)
	if l.State != Running || l.LeaseSeconds != 60 || !l.ExpiresAt.Equal(t0.Add(time.Minute)) ||
		!l.MaxAt.Equal(t0.Add(-time.Second).Add(24*time.Hour)) || !l.DueAt().Equal(l.ExpiresAt) {
		t.Fatalf("accepted lease = %+v", l)
	}
	short := Accept(Accepted{Lease: Lease{Attempt: 1}, At: t0, Started: t0, LeaseFor: time.Hour, MaxDuration: time.Minute})
	if !short.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a lease longer than maxDuration must stop at it: %v", short.ExpiresAt)
	}
}

func TestApply(t *testing.T) {
	running := accepted(t0)
	succeeded := Apply(running, Event{Kind: Complete, At: t0.Add(time.Second), Attempt: 1, Success: true, Message: "done"}, pol).Lease
	expired := Apply(Lease{State: Running, Attempt: 3, ExpiresAt: t0, LeaseSeconds: 60}, Event{Kind: Tick, At: t0}, pol).Lease
	retrying := Apply(running, Event{Kind: Tick, At: t0.Add(time.Minute)}, pol).Lease
	cancelled := Apply(running, Event{Kind: Cancel, At: t0, Cause: "job deleted"}, pol).Lease
	tests := []struct {
		name    string
		l       Lease
		ev      Event
		pol     Policy
		state   State
		refusal Refusal
		changed bool
		ended   bool
		resend  bool
	}{
		{"heartbeat renews", running, Event{Kind: Heartbeat, At: t0.Add(50 * time.Second), Attempt: 1, Progress: intp(40)}, pol, Running, Applied, true, false, false},
		{"heartbeat after the lease ran out", running, Event{Kind: Heartbeat, At: t0.Add(time.Minute), Attempt: 1}, pol, Running, LeaseExpired, false, false, false},
		{"heartbeat of an earlier attempt", retrying, Event{Kind: Heartbeat, At: t0.Add(time.Minute), Attempt: 1}, pol, Retrying, StaleAttempt, false, false, false},
		{"heartbeat of a later attempt than issued", running, Event{Kind: Heartbeat, At: t0, Attempt: 2}, pol, Running, StaleAttempt, false, false, false},
		{"heartbeat of a retry of the re-POST before its outcome is seen", retrying, Event{Kind: Heartbeat, At: t0.Add(61 * time.Second), Attempt: 3}, pol, Running, Applied, true, false, false},
		{"heartbeat of the re-POSTed attempt before its 202 is seen", retrying, Event{Kind: Heartbeat, At: t0.Add(61 * time.Second), Attempt: 2}, pol, Running, Applied, true, false, false},
		{"complete success", running, Event{Kind: Complete, At: t0.Add(time.Second), Attempt: 1, Success: true}, pol, Succeeded, Applied, true, true, false},
		{"complete failure", running, Event{Kind: Complete, At: t0.Add(time.Second), Attempt: 1, Message: "disk full"}, pol, Failed, Applied, true, true, false},
		{"the same completion again", succeeded, Event{Kind: Complete, At: t0.Add(time.Hour), Attempt: 1, Success: true, Message: "done"}, pol, Succeeded, Applied, false, false, false},
		{"a different completion after the end", succeeded, Event{Kind: Complete, At: t0.Add(2 * time.Second), Attempt: 1, Success: false}, pol, Succeeded, AlreadyCompleted, false, false, false},
		{"a heartbeat after the end", succeeded, Event{Kind: Heartbeat, At: t0.Add(2 * time.Second), Attempt: 1}, pol, Succeeded, AlreadyCompleted, false, false, false},
		{"complete after expiry", expired, Event{Kind: Complete, At: t0, Attempt: 3, Success: true}, pol, Expired, LeaseExpired, false, false, false},
		{"complete after cancel", cancelled, Event{Kind: Complete, At: t0, Attempt: 1, Success: true}, pol, Cancelled, ExecutionCanceled, false, false, false},
		{"complete with hasMore on a streaming job", running, Event{Kind: Complete, At: t0.Add(time.Second), Attempt: 1, Success: true, HasMore: true}, Policy{MaxAttempts: 3, Streaming: true, ResendWindow: time.Minute}, Retrying, Applied, true, false, true},
		{"hasMore on a job that does not stream", running, Event{Kind: Complete, At: t0.Add(time.Second), Attempt: 1, Success: true, HasMore: true}, pol, Succeeded, Applied, true, true, false},
		{"tick before the expiry", running, Event{Kind: Tick, At: t0.Add(59 * time.Second)}, pol, Running, Applied, false, false, false},
		{"tick at the expiry, attempts left", running, Event{Kind: Tick, At: t0.Add(time.Minute)}, pol, Retrying, Applied, true, false, true},
		{"tick at the expiry, none left", Lease{State: Running, Attempt: 3, ExpiresAt: t0}, Event{Kind: Tick, At: t0}, pol, Expired, Applied, true, true, false},
		{"tick at the expiry, job disabled", running, Event{Kind: Tick, At: t0.Add(time.Minute)}, Policy{MaxAttempts: 3, Paused: true}, Expired, Applied, true, true, false},
		{"tick at the expiry, past the next fire", func() Lease { l := running; l.Deadline = t0.Add(30 * time.Second); return l }(), Event{Kind: Tick, At: t0.Add(time.Minute)}, pol, Expired, Applied, true, true, false},
		{"tick past maxDuration", func() Lease { l := running; l.MaxAt = t0.Add(time.Second); return l }(), Event{Kind: Tick, At: t0.Add(time.Second)}, pol, Expired, Applied, true, true, false},
		{"re-POST accepted", retrying, Event{Kind: Sent, At: t0.Add(61 * time.Second), Attempt: 2, Accepted: true, StatusCode: 202}, pol, Running, Applied, true, false, false},
		{"re-POST answered 200", retrying, Event{Kind: Sent, At: t0.Add(61 * time.Second), Attempt: 2, Success: true, StatusCode: 200}, pol, Succeeded, Applied, true, true, false},
		{"re-POST failed", retrying, Event{Kind: Sent, At: t0.Add(61 * time.Second), Attempt: 3, StatusCode: 500, Cause: "HTTP 500"}, pol, Failed, Applied, true, true, false},
		{"re-POST result after the receiver completed", succeeded, Event{Kind: Sent, At: t0.Add(61 * time.Second), Attempt: 2, Accepted: true}, pol, Succeeded, Applied, false, false, false},
		{"cancel", running, Event{Kind: Cancel, At: t0, Cause: "job deleted"}, pol, Cancelled, Applied, true, true, false},
		{"cancel after the end", succeeded, Event{Kind: Cancel, At: t0}, pol, Succeeded, Applied, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Apply(tt.l, tt.ev, tt.pol)
			if d.Lease.State != tt.state || d.Refusal != tt.refusal || d.Changed != tt.changed || d.Ended != tt.ended || d.Resend != tt.resend {
				t.Fatalf("got state %s refusal %q changed %v ended %v resend %v; want %s %q %v %v %v",
					d.Lease.State, d.Refusal, d.Changed, d.Ended, d.Resend, tt.state, tt.refusal, tt.changed, tt.ended, tt.resend)
			}
			if !d.Changed && d.Lease != tt.l && d.Lease.Progress == tt.l.Progress {
				t.Fatalf("unchanged decision altered the lease: %+v", d.Lease)
			}
		})
	}
}

func TestHeartbeatRecordsProgressAndExtendsUpToMaxAt(t *testing.T) {
	l := accepted(t0)
	l.MaxAt = t0.Add(90 * time.Second)
	d := Apply(l, Event{Kind: Heartbeat, At: t0.Add(50 * time.Second), Attempt: 1, Progress: intp(40), Message: "40%"}, pol)
	if *d.Lease.Progress != 40 || d.Lease.Message != "40%" || !d.Lease.HeartbeatAt.Equal(t0.Add(50*time.Second)) {
		t.Fatalf("heartbeat not recorded: %+v", d.Lease)
	}
	if !d.Lease.ExpiresAt.Equal(t0.Add(90 * time.Second)) {
		t.Fatalf("expiry %v, want capped at maxAt", d.Lease.ExpiresAt)
	}
	d = Apply(d.Lease, Event{Kind: Heartbeat, At: t0.Add(60 * time.Second), Attempt: 1}, pol)
	if *d.Lease.Progress != 40 || d.Lease.Message != "40%" {
		t.Fatal("a heartbeat without progress or message must keep the last ones")
	}
}

// TestHoursOfHeartbeats drives a lease with a fake clock over six simulated hours: heartbeats every 50 s
// keep a 60 s lease alive; when they stop, the watcher retries twice and then expires it.
func TestHoursOfHeartbeats(t *testing.T) {
	l := accepted(t0)
	now := t0
	for now.Before(t0.Add(6 * time.Hour)) {
		now = now.Add(50 * time.Second)
		if d := Apply(l, Event{Kind: Tick, At: now}, pol); d.Changed {
			t.Fatalf("tick at %v changed a heartbeating lease", now.Sub(t0))
		}
		d := Apply(l, Event{Kind: Heartbeat, At: now, Attempt: 1}, pol)
		if d.Refusal != Applied {
			t.Fatalf("heartbeat at %v refused: %s", now.Sub(t0), d.Refusal)
		}
		l = d.Lease
	}
	var resends int
	for step := 0; step < 100 && !l.State.Ended(); step++ {
		now = l.DueAt()
		d := Apply(l, Event{Kind: Tick, At: now}, pol)
		if d.Resend {
			resends++
			d = Apply(d.Lease, Event{Kind: Sent, At: now.Add(time.Second), Attempt: d.Lease.Attempt, Accepted: true}, pol)
		}
		l = d.Lease
	}
	if l.State != Expired || resends != 2 || l.Attempt != 3 {
		t.Fatalf("after the heartbeats stopped: state %s after %d re-POSTs at attempt %d; want EXPIRED after 2 at 3", l.State, resends, l.Attempt)
	}
	if d := Apply(l, Event{Kind: Complete, At: now, Attempt: 3, Success: true}, pol); d.Refusal != LeaseExpired {
		t.Fatalf("a completion after the expiry: %q, want lease-expired", d.Refusal)
	}
}

func TestStateNames(t *testing.T) {
	for _, s := range []State{Running, Retrying, Succeeded, Failed, Expired, Cancelled} {
		if !s.Valid() {
			t.Fatalf("%s not valid", s)
		}
	}
	if State("DONE").Valid() || Running.Ended() || Retrying.Ended() || !Expired.Ended() {
		t.Fatal("state predicates wrong")
	}
}
