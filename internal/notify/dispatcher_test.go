package notify

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/webhook"
)

// channelMap is a fixed set of channels.
type channelMap map[string]Channel

func (m channelMap) Lookup(name string) (Channel, bool) { c, ok := m[name]; return c, ok }

// tally observes and records what the dispatcher reports.
type tally struct {
	mu      sync.Mutex
	counts  map[string]int // channel/outcome
	records []Record
	changed chan struct{}
}

func newTally() *tally { return &tally{counts: map[string]int{}, changed: make(chan struct{}, 1000)} }

func (t *tally) NotificationOutcome(channel, outcome string) {
	t.mu.Lock()
	t.counts[channel+"/"+outcome]++
	t.mu.Unlock()
}

func (t *tally) WriteNotification(_ context.Context, r Record) error {
	t.mu.Lock()
	t.records = append(t.records, r)
	t.mu.Unlock()
	t.changed <- struct{}{}
	return nil
}

func (t *tally) count(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[key]
}

// waitRecords waits until n records were written.
func (t *tally) waitRecords(tb testing.TB, n int) []Record {
	tb.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		if len(t.records) >= n {
			out := append([]Record(nil), t.records...)
			t.mu.Unlock()
			return out
		}
		t.mu.Unlock()
		select {
		case <-t.changed:
		case <-deadline.C:
			tb.Fatalf("%d records, want %d", len(t.records), n)
		}
	}
}

// server is a receiver whose answer a test decides per request; got signals each request.
type server struct {
	*httptest.Server
	got    chan []byte
	answer func(n int, w http.ResponseWriter, r *http.Request)
	mu     sync.Mutex
	n      int
}

func newServer(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *server {
	s := &server{got: make(chan []byte, 100), answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.n++
		n := s.n
		s.mu.Unlock()
		s.got <- b
		if s.answer != nil {
			s.answer(n, w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func slackChannel(name, u string) Channel {
	return Channel{Name: name, Kind: ChannelSlack, TimeoutMs: 5000, MaxAttempts: 3, Slack: &SlackSettings{URL: &u}}
}

func note(id string) Notification {
	return Notification{ID: id, Kind: KindFireFailed, Severity: SeverityError, Namespace: "ns", Job: "settle",
		Title: "settle failed", At: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
}

func recv(t *testing.T, ch <-chan []byte) []byte {
	t.Helper()
	select {
	case b := <-ch:
		return b
	case <-time.After(10 * time.Second):
		t.Fatalf("no request arrived: %s", allStacks())
		return nil
	}
}

// TestHangingChannelHoldsNothing: a channel whose service never answers holds neither Deliver nor the other
// channels; its queue fills and drops; Stop ends the hanging attempt at its drain deadline and drops the rest.
func TestHangingChannelHoldsNothing(t *testing.T) {
	release := make(chan struct{})
	slow := newServer(t, func(int, http.ResponseWriter, *http.Request) { <-release })
	defer close(release) // before the servers close (cleanups run after this)
	fast := newServer(t, nil)
	tl := newTally()
	d := NewDispatcher(DispatcherConfig{Channels: channelMap{"slow": slackChannel("slow", slow.URL),
		"fast": slackChannel("fast", fast.URL)}, Recorder: tl, Observer: tl, QueueSize: 1, DrainTimeout: 200 * time.Millisecond})
	d.Deliver(note("n1"), []string{"slow", "fast"})
	recv(t, slow.got)                               // n1 hangs at the slow service
	recv(t, fast.got)                               // and reached the fast one meanwhile
	d.Deliver(note("n2"), []string{"slow", "fast"}) // queued for slow
	recv(t, fast.got)                               // (fast's queue of one is empty again)
	d.Deliver(note("n3"), []string{"slow", "fast"}) // slow's queue is full: dropped
	recv(t, fast.got)
	if got := tl.count("slow/dropped"); got != 1 {
		t.Fatalf("slow/dropped = %d, want 1", got)
	}
	d.Deliver(note("n4"), []string{"nope"})
	d.Stop() // n1 is cancelled at the drain deadline, n2 dropped
	d.Stop()
	if tl.count("fast/sent") != 3 || tl.count("slow/failed") != 1 || tl.count("slow/dropped") != 2 || tl.count("nope/unknown") != 1 {
		t.Fatalf("counts %v", tl.counts)
	}
	d.Deliver(note("n5"), []string{"fast"})
	if tl.count("fast/dropped") != 1 {
		t.Fatalf("a notification after Stop: counts %v", tl.counts)
	}
}

// TestRetriesHonourRetryAfter: a 429 with Retry-After: 7 waits 7 s (not the 1 s back-off), a 503 is retried,
// a 400 is not, and the attempts are bounded.
func TestRetriesHonourRetryAfter(t *testing.T) {
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	s := newServer(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	tl := newTally()
	d := NewDispatcher(DispatcherConfig{Channels: channelMap{"c": slackChannel("c", s.URL)}, Recorder: tl, Observer: tl,
		Clock: clk, Rand: zeroRand{}})
	defer d.Stop()
	timer := clk.TimerCreated()
	d.Deliver(note("n1"), []string{"c"})
	recv(t, s.got)
	<-timer
	clk.Advance(6 * time.Second) // a 1 s back-off would fire here
	clk.Advance(time.Second)
	recv(t, s.got)
	rec := tl.waitRecords(t, 1)[0]
	if rec.Outcome != OutcomeSent || rec.Attempts != 2 || rec.FinishedAt.Sub(start) != 7*time.Second {
		t.Fatalf("record %+v: want sent after 2 attempts, 7s after the start", rec)
	}

	bad := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) })
	down := newServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	d2 := NewDispatcher(DispatcherConfig{Channels: channelMap{"bad": slackChannel("bad", bad.URL), "down": slackChannel("down", down.URL)},
		Recorder: tl, Observer: tl, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	defer d2.Stop()
	d2.Deliver(note("n2"), []string{"bad", "down"})
	recs := tl.waitRecords(t, 3)
	for _, r := range recs[1:] {
		want := map[string]int{"bad": 1, "down": 3}[r.Channel]
		if r.Outcome != OutcomeFailed || r.Attempts != want {
			t.Errorf("%s: %+v, want failed after %d attempts", r.Channel, r, want)
		}
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

type zeroRand struct{}

func (zeroRand) Int64N(int64) int64 { return 0 }

// TestTestSendScrubsSecrets: the test send reports the service's answer, and a transport error never
// carries the channel's secret URL.
func TestTestSendScrubsSecrets(t *testing.T) {
	d := NewDispatcher(DispatcherConfig{Channels: channelMap{}})
	defer d.Stop()
	u := "http://127.0.0.1:1/services/T/B/secret-token"
	res := d.Test(context.Background(), slackChannel("x", u), note("n"))
	if res.Outcome != OutcomeFailed || res.Attempts != 1 || strings.Contains(res.Error, "secret-token") || res.Error == "" {
		t.Fatalf("result %+v", res)
	}
}

// TestForgetADeletedChannel: the worker of a deleted channel goes through what is queued (the channel is
// gone: unknown) and ends; a channel of that name made again gets a new worker.
func TestForgetADeletedChannel(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(n int, _ http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-release
		}
	})
	chans := &lockedChannels{m: map[string]Channel{"a": slackChannel("a", s.URL)}}
	tl := newTally()
	d := NewDispatcher(DispatcherConfig{Channels: chans, Recorder: tl, Observer: tl})
	defer d.Stop()
	d.Deliver(note("n1"), []string{"a"})
	recv(t, s.got)                       // n1 in flight
	d.Deliver(note("n2"), []string{"a"}) // queued
	chans.set("a", nil)                  // deleted
	d.Forget("a")
	close(release)
	tl.waitRecords(t, 2)
	if tl.count("a/sent") != 1 || tl.count("a/unknown") != 1 {
		t.Fatalf("counts %v", tl.counts)
	}
	c := slackChannel("a", s.URL)
	chans.set("a", &c) // made again
	d.Deliver(note("n3"), []string{"a"})
	recv(t, s.got)
	if tl.waitRecords(t, 3); tl.count("a/sent") != 2 {
		t.Fatalf("counts %v", tl.counts)
	}
}

type lockedChannels struct {
	mu sync.Mutex
	m  map[string]Channel
}

func (l *lockedChannels) Lookup(name string) (Channel, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.m[name]
	return c, ok
}

func (l *lockedChannels) set(name string, c *Channel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c == nil {
		delete(l.m, name)
	} else {
		l.m[name] = *c
	}
}

// TestTargetPolicyApplies: with the operator's policy in Dial, a channel cannot reach a metadata address
// (refused before the socket connects), over HTTP or SMTP.
func TestTargetPolicyApplies(t *testing.T) {
	policy, err := webhook.ParseAllowList("")
	if err != nil {
		t.Fatal(err)
	}
	d := NewDispatcher(DispatcherConfig{Channels: channelMap{}, Dial: policy.DialContext(&net.Dialer{Timeout: time.Second})})
	defer d.Stop()
	res := d.Test(context.Background(), Channel{Name: "h", Kind: ChannelWebhook, Webhook: &WebhookSettings{URL: "https://169.254.169.254/latest"}}, note("n"))
	if res.Outcome != OutcomeFailed || !strings.Contains(res.Error, "refused") {
		t.Fatalf("http: %+v", res)
	}
	res = d.Test(context.Background(), Channel{Name: "m", Kind: ChannelEmail, Email: &EmailSettings{Host: "169.254.169.254", Port: 25,
		TLS: TLSNone, From: "a@example.com", To: []string{"b@example.com"}}}, note("n"))
	if res.Outcome != OutcomeFailed || !strings.Contains(res.Error, "refused") {
		t.Fatalf("smtp: %+v", res)
	}
}
