package dispatch

import (
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// parkedBegins is a registry whose begins wait until the test answers them, as ZooKeeper's writes wait through
// a restart at 100,000 jobs: BeginItemThen keeps its answer for later, and BeginItem blocks until released.
type parkedBegins struct {
	*fakeRegistry
	mu      sync.Mutex
	waits   int
	parked  []parkedBegin
	release chan struct{}
	once    sync.Once
}

// parkedBegin is a begin made as a record: what it writes and who hears the answer.
type parkedBegin struct {
	write func() error
	then  func(error)
}

func newParkedBegins(items int) *parkedBegins {
	return &parkedBegins{fakeRegistry: newFakeRegistry(items), release: make(chan struct{})}
}

func (p *parkedBegins) BeginItem(job string, item int, version int32, run cluster.Running, persistent bool) error {
	p.mu.Lock()
	p.waits++
	p.mu.Unlock()
	<-p.release
	return p.fakeRegistry.BeginItem(job, item, version, run, persistent)
}

func (p *parkedBegins) BeginItemThen(job string, item int, version int32, run cluster.Running, persistent bool, then func(error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits++
	p.parked = append(p.parked, parkedBegin{func() error { return p.fakeRegistry.BeginItem(job, item, version, run, persistent) }, then})
}

func (p *parkedBegins) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waits
}

// answer releases the blocked BeginItem calls and answers the records, each with its write's outcome, or with
// lost when it is set (the write is made, and its answer lost).
func (p *parkedBegins) answer(lost error) {
	p.mu.Lock()
	parked := p.parked
	p.parked = nil
	p.mu.Unlock()
	p.unblock()
	for _, b := range parked {
		err := b.write()
		if lost != nil {
			err = lost
		}
		b.then(err)
	}
}

// unblock releases the blocked BeginItem calls (once).
func (p *parkedBegins) unblock() { p.once.Do(func() { close(p.release) }) }

// executorGoroutines counts the goroutines running the executor's code.
func executorGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "dispatch.(*Executor)") {
			n++
		}
	}
	return n
}

func newParkedExecutor(reg *parkedBegins, send *fakeSender) *Executor {
	return NewExecutor(ExecutorConfig{Registry: reg, Sender: send, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func TestAnItemWaitingForItsBeginHoldsNoGoroutine(t *testing.T) {
	const items = 40
	reg, send := newParkedBegins(items), newFakeSender()
	reg.notOwner[7] = true // resharded away meanwhile: its begin's answer says so
	e := newParkedExecutor(reg, send)
	defer e.Drain(time.Second)
	defer reg.unblock() // before the drain: a begin blocked on a goroutine would hold it
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	waitFor(t, func() bool { return reg.waiting() == items })
	waitFor(t, func() bool { return executorGoroutines() == 0 }) // the fire's own goroutine ends
	reg.answer(nil)
	got := map[int]bool{}
	for range items - 1 {
		got[send.next(t).ShardingItem] = true
	}
	send.none(t)
	if len(got) != items-1 || got[7] {
		t.Fatalf("delivered %v: want every item but 7, once", got)
	}
	waitFor(t, func() bool { e.mu.Lock(); defer e.mu.Unlock(); return len(e.running) == 0 })
}

// A begin answered with an error of the write (the connection broke: it may have landed) goes on as it did on
// a goroutine: tried again once the session is sound, where the landed try shows as this execution's node.
func TestAnItemWhoseBeginRecordLostItsAnswerRuns(t *testing.T) {
	reg, send := newParkedBegins(1), newFakeSender()
	e := newParkedExecutor(reg, send)
	defer e.Drain(time.Second)
	e.Fire(Due{Job: "j", At: time.Unix(100, 0)})
	waitFor(t, func() bool { return reg.waiting() == 1 })
	reg.answer(errors.New("zk: connection closed"))
	if p := send.next(t); p.ShardingItem != 0 {
		t.Fatalf("payload %+v", p)
	}
	send.none(t)
	if n := reg.waiting(); n != 2 {
		t.Fatalf("begins: %d, want the record and one try after it", n)
	}
}
