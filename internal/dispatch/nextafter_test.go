package dispatch

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// A fire handed off by the scheduler knows its job's next fire without asking the scheduler, until the
// scheduler may have moved on from it (FireLead before that next fire); any other fire asks.
func TestNextAfterAsksTheSchedulerOnlyOnceItMayHaveMovedOn(t *testing.T) {
	now := time.Unix(1000, 0)
	asked := time.Unix(5000, 0) // what the scheduler says, when asked
	cases := []struct {
		name string
		req  fireRequest
		want time.Time
	}{
		{"handed off, its next well ahead", fireRequest{scheduled: true, next: now.Add(time.Minute)}, now.Add(time.Minute)},
		{"handed off, its next beyond the lead", fireRequest{scheduled: true, next: now.Add(2*time.Second + time.Nanosecond)}, now.Add(2*time.Second + time.Nanosecond)},
		{"handed off, its next within the lead: maybe handed off too", fireRequest{scheduled: true, next: now.Add(2 * time.Second)}, asked},
		{"handed off, its next passed", fireRequest{scheduled: true, next: now.Add(-time.Second)}, asked},
		{"handed off as the job's last fire", fireRequest{scheduled: true}, time.Time{}},
		{"not handed off (a failover, a trigger)", fireRequest{next: now.Add(time.Minute)}, asked},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			e := NewExecutor(ExecutorConfig{Registry: newFakeRegistry(1), Sender: newFakeSender(), Clock: clock.NewFake(now),
				FireLead: 2 * time.Second, NextFire: func(string) time.Time { calls++; return asked },
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			req := tc.req
			req.job = "j"
			if got := e.nextAfter(&req); !got.Equal(tc.want) {
				t.Fatalf("nextAfter %v, want %v", got, tc.want)
			}
			if wantCalls := map[bool]int{true: 1, false: 0}[tc.want.Equal(asked)]; calls != wantCalls {
				t.Fatalf("asked the scheduler %d times, want %d", calls, wantCalls)
			}
		})
	}
}
