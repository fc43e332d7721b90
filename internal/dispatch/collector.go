package dispatch

import (
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/gcpace"
)

// Collector runs the Go garbage collector between this peer's bursts of webhooks rather than in them.
//
// Go starts a collection when the heap has grown by a set share since the last one, and a peer's heap grows
// fastest while it prepares a burst and sends it. Left alone, a collection starts as a burst begins and
// marks through it, taking a quarter of the CPU and making every allocating goroutine assist; a peer holding
// 10,000 jobs has ~100 MB of live heap to mark, a few hundred milliseconds of it. In the steady-10k
// benchmark the bursts that overlapped their peer's own collection held nearly all of the lateness p99
// (their last request p50 222 ms, against 98 ms for the others). The executor knows when bursts come and
// Go's pacer does not. So in the gap after a burst (its requests started minGuard ago or more, and no
// prepared item is due before a collection as long as the last one would end), if allocating as much as in
// the last allocWindow again could take the heap to where Go may start a collection, and a fresh cycle
// would hold that much, the Collector starts one itself: at most one per gap, and none on a peer that sends
// nothing. A burst bigger than a whole cycle (one fire of thousands of items on a small heap) is left to Go:
// a collection before it would not keep one out of it.
type Collector struct {
	cfg CollectorConfig

	collections atomic.Int64

	startOnce sync.Once
	stopOnce  sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// CollectorConfig configures a Collector.
type CollectorConfig struct {
	// Activity tells when the peer's bursts leave and which are due (the executor's).
	Activity *Activity
	Clock    clock.Clock
	// Heap reads the heap's figures (default: the runtime's own, gcpace.ReadHeap; the Collector decides on
	// Objects, the heap's objects now, live and dead not yet swept, and Live, what the last collection found
	// live); Collect runs a collection and returns when it is done (default: runtime.GC). Tests give their own.
	Heap    func() gcpace.Heap
	Collect func()
	Logger  *slog.Logger
}

const (
	// collectorTick is how often the Collector looks: often enough to find a gap between bursts a second
	// apart (they last ~100 ms on a busy peer), and reading the runtime's figures costs a few microseconds.
	collectorTick = 100 * time.Millisecond
	// allocWindow is how far back the allocation rate is measured: one period of the densest schedule
	// (every second), so a burst and its preparation are inside it.
	allocWindow = time.Second
	// minTriggerShare is the earliest point of the way from Live to Goal at which Go's pacer starts a
	// collection (its trigger lies between 0.7 and 0.95 of it, runtime/mgcpacer.go); the Collector plans for
	// the earliest.
	minTriggerShare = 0.7
	// minGuard is how long after a burst's requests started a collection may begin, and how far ahead of
	// the next burst at least (further when the last collection took longer: half again its duration).
	minGuard = 100 * time.Millisecond
)

// NewCollector returns a Collector; Start runs it.
func NewCollector(cfg CollectorConfig) *Collector {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Heap == nil {
		cfg.Heap = gcpace.ReadHeap
	}
	if cfg.Collect == nil {
		cfg.Collect = runtime.GC
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Collector{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
}

// Collections counts the collections the Collector started.
func (c *Collector) Collections() int64 { return c.collections.Load() }

// Start runs the Collector's loop until Stop.
func (c *Collector) Start() {
	c.startOnce.Do(func() { go c.loop() })
}

// Stop ends the loop and waits for it (and for a collection it started) to finish. Safe to call more
// than once, and without Start (a Start after Stop does nothing).
func (c *Collector) Stop() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.startOnce.Do(func() { close(c.done) }) // never started: nothing to wait for
	<-c.done
}

func (c *Collector) loop() {
	defer close(c.done)
	rate := gcpace.AllocWindow{Span: allocWindow}
	took := time.Duration(0)     // how long the last collection took
	var collectedAfter time.Time // the burst the last collection followed
	var base cycleBase
	for clock.Sleep(c.cfg.Clock, collectorTick, c.stop) {
		now := c.cfg.Clock.Now()
		h := c.cfg.Heap()
		h.Objects = base.heapNow(h)
		perWindow := rate.Add(now, h.Allocated)
		gap, burst := c.cfg.Activity.Gap(minGuard, max(minGuard, took*3/2))
		if gap && burst.After(collectedAfter) && shouldCollect(h, perWindow) {
			c.cfg.Collect()
			took = c.cfg.Clock.Since(now)
			collectedAfter = burst
			c.collections.Add(1)
			c.cfg.Logger.Debug("garbage collected between bursts", "heap_mb", h.Objects>>20, "goal_mb", h.Goal>>20,
				"alloc_per_window_mb", perWindow>>20, "took", took)
		}
	}
}

// shouldCollect reports whether the heap is close enough to where Go's pacer may start a collection that
// another window's allocation (the next burst and its preparation) could reach it, and whether collecting
// now would keep that collection out of the next burst: if a window's allocation is more than a whole
// cycle's way to the trigger (the current cycle's, for the next), Go collects during the burst anyway, and
// a collection in the gap would only be one more. Past Go's earliest trigger it leaves the heap to Go: Go may
// have started a collection already, and runtime.GC would wait for it to end and then run another (at 100,000
// jobs Go's trigger was at its earliest, and peers ran such a second collection after each of Go's: 0.5-1.1 s
// of marking for a heap that had grown by 0-3 MB).
func shouldCollect(h gcpace.Heap, perWindow uint64) bool {
	if h.Goal <= h.Live || perWindow == 0 {
		return false
	}
	way := uint64(float64(h.Goal-h.Live) * minTriggerShare)
	return perWindow < way && h.Objects < h.Live+way && h.Objects+perWindow >= h.Live+way
}

// cycleBase remembers how much had been allocated when the Collector first saw the latest collection done.
type cycleBase struct {
	cycles, allocated uint64
	looked            bool // a reading was taken: a change of cycles after it has a known base
	known             bool // allocated is the base of the latest collection
}

// heapNow is the heap Go's pacer compares with its trigger: what the last collection found live and what was
// allocated since (h.Objects when no collection has been seen done since the first reading). The heap's objects
// (h.Objects) also count the dead objects the last collection found until they are swept, lazily, by the
// allocating goroutines: on a busy peer they are still there a second after the collection, and a Collector
// reading h.Objects then would find it as full as before the collection.
func (b *cycleBase) heapNow(h gcpace.Heap) uint64 {
	if h.Cycles != b.cycles || !b.looked {
		b.known = b.looked
		b.cycles, b.allocated, b.looked = h.Cycles, h.Allocated, true
	}
	if !b.known || h.Allocated < b.allocated {
		return h.Objects
	}
	return min(h.Objects, h.Live+(h.Allocated-b.allocated))
}
