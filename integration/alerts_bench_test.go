package integration

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// BenchmarkLatenessWithHangingChannel measures the lateness of a failing job's webhooks (arrival minus the
// scheduled time) over the 10 fires after its first notification, on 3 peers, when the alert channel answers
// at once and when it hangs: a notification must never hold dispatch, so the two should be alike.
//
//	go test -run '^$' -bench LatenessWithHangingChannel -benchtime 1x ./integration/
func BenchmarkLatenessWithHangingChannel(b *testing.B) {
	for _, hang := range []bool{false, true} {
		name := "channel=ok"
		if hang {
			name = "channel=hanging"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				p50, p99 := latenessWithChannel(b, hang)
				b.ReportMetric(p50, "p50-ms")
				b.ReportMetric(p99, "p99-ms")
			}
		})
	}
}

func latenessWithChannel(b *testing.B, hang bool) (p50, p99 float64) {
	recv := newReceiver(b)
	recv.Respond(func(harness.Delivery) (int, string, time.Duration) { return 500, "down", 0 })
	release := make(chan struct{})
	var notified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		notified.Add(1)
		if hang {
			<-release
		}
	}))
	b.Cleanup(func() { close(release); srv.Close() })
	c := newCluster(b, 3, withArgs("--log-level", "warn"))
	status, body, err := c.peers[0].Do("POST", "/api/v1/channels", map[string]any{"name": "ch", "kind": "webhook",
		"webhook": map[string]any{"url": srv.URL + "/alerts"}}, nil)
	if err != nil || status != http.StatusCreated {
		b.Fatalf("channel: %d %v %s", status, err, body)
	}
	spec := job("late", "* * * * * ?", 20, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	spec["alerts"] = map[string]any{"rules": []any{map[string]any{"on": []string{"FIRE_FAILED"}, "channels": []string{"ch"}}}}
	if status, body, err := c.peers[0].Do("POST", "/api/v1/jobs", spec, nil); err != nil || status != http.StatusCreated {
		b.Fatalf("job: %d %v %s", status, err, body)
	}
	deadline := time.Now().Add(60 * time.Second)
	for notified.Load() == 0 {
		if time.Now().After(deadline) {
			b.Fatal("no notification")
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
	since := time.Now()
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool {
		n := 0
		for _, d := range ds {
			if d.Payload.ScheduledAt.After(since) {
				n++
			}
		}
		return n >= 200
	})
	if !ok {
		b.Fatal("fewer than 10 fires after the first notification")
	}
	var late []float64
	for _, d := range ds {
		if d.Payload.ScheduledAt.After(since) {
			late = append(late, float64(d.ArrivedAt.Sub(d.Payload.ScheduledAt).Microseconds())/1000)
		}
	}
	slices.Sort(late)
	return late[len(late)/2], late[len(late)*99/100]
}
