package dispatch

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// failingCommits is a recorder whose end records are never committed in time (a saturated history store).
type failingCommits struct{ recorder }

func (f *failingCommits) EnqueueCommittedThen(ctx context.Context, e ejserver.Execution, then func(error)) {
	then(f.EnqueueCommitted(ctx, e))
}

func (f *failingCommits) EnqueueCommitted(_ context.Context, e ejserver.Execution) error {
	f.Enqueue(e)
	return context.DeadlineExceeded
}

// syncBuffer is a log sink the items' goroutines write to concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A history store that cannot commit items' ends makes every item warn; the warning is one line per 10 s with
// the count it stands for, not one line per item (300,000 lines in 27 minutes at 100,000 jobs).
func TestUncommittedEndsWarnOncePerInterval(t *testing.T) {
	const items = 6
	reg, send := newFakeRegistry(items), newFakeSender()
	var logs syncBuffer
	rec := &failingCommits{}
	clk := clock.NewFake(time.Unix(1000, 0))
	e := NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Recorder: rec, Clock: clk, Activity: NewActivity(clk),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(1000, 0)})
	for range items {
		send.next(t)
	}
	ended := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, x := range rec.execs {
			if !x.CompletedAt.IsZero() {
				n++
			}
		}
		return n
	}
	const msg = "item's end acknowledged before its history record was committed"
	// an item logs after its record was handed over: wait for the first line too (the others are folded into
	// it, the fake clock staying within the interval)
	waitFor(t, func() bool {
		clk.Advance(time.Millisecond)
		return ended() == items && strings.Contains(logs.String(), msg)
	})
	if n := strings.Count(logs.String(), msg); n != 1 {
		t.Fatalf("%d lines of %q for %d items, want 1:\n%s", n, msg, items, logs.String())
	}
	if !strings.Contains(logs.String(), "occurrences=1") {
		t.Fatalf("the first line stands for itself: %s", logs.String())
	}
}
