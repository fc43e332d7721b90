// Package gcpace gives Go's garbage collector room where it would otherwise collect often: the heap may grow
// past what the last collection found live by what the process allocated in the last Window (15 s), up to a
// set headroom, so that a busy peer collects about once a Window rather than every few seconds.
//
// Go's collector aims each cycle at a heap goal of live × (1 + GOGC/100): with GOGC 100, twice what was live. A
// collection's marking costs about as much as the live heap is large, and collections come as often as the
// allocation fills the room between live and the goal, so the collector's CPU is about the allocation rate
// divided by GOGC, whatever the heap's size. Where the live heap is small and the allocation fast (a peer of
// 10,000 jobs holds ~40 MB and allocates ~10 MB a second) that room lasts two seconds. Room in proportion to
// the allocation, not the live heap, spends memory where the collector runs often: a peer of 1,000 jobs gets
// ~45 MB of room (steady-1k's RSS 80 -> 125 MB, where a fixed 128 MiB took it to 176).
//
// A small heap's collection is cheap, so a small heap's room stops at SmallHeapRoom (128 MiB) however much it
// allocates: more would be memory for no CPU (a peer of 10,000 jobs took ~70-150 MB more RSS with 384 MiB of
// headroom and no less CPU). A large heap's collection is not: a peer of 100,000 jobs marks ~145 MB live, and
// Go's own goal (room as large as the live heap) had it collect every ~5 s, a quarter of its CPU. So above
// SmallHeapRoom / 2 live the room may grow to twice the live heap, up to the headroom (default 256 MiB). From as
// much live heap as the headroom up, Go's own goal is at least as large and nothing changes: a heap that grows
// (a restart's) is given less than the headroom past Go's goal, and nothing past it once that large. The goal
// is max(live × (1 + base/100), live + Room(allocated in the last Window, live, headroom)).
//
// Percent and Room are the decision, functions of values; Pacer applies them after each collection. ReadHeap
// and AllocWindow read the runtime's figures, for the Pacer and dispatch's Collector alike.
package gcpace

import (
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// minLive is the smallest live heap Percent divides by: a heap that small (a process starting) gets its room
// over minLive, not a percent in the tens of thousands.
const minLive = 4 << 20

// Percent returns the GOGC percent that gives a live heap of live bytes a goal at least room bytes above it,
// and never less than base: max(base, ⌈room × 100 / live⌉), live counted as at least minLive. A room of 0
// gives base.
func Percent(live, room uint64, base int) int {
	if room == 0 {
		return base
	}
	live = max(live, minLive)
	p := (room*100 + live - 1) / live
	if p > uint64(maxPercent) {
		p = uint64(maxPercent)
	}
	return max(base, int(p))
}

// maxPercent bounds Percent: with minLive and a room below 4 GiB it is never reached.
const maxPercent = 100_000

// SmallHeapRoom is the most room a live heap of up to half of it is given (a small heap's collection is
// cheap: more room would be memory for no CPU); a larger heap may have up to twice itself.
const SmallHeapRoom = 128 << 20

// Room is the room a collection leaves the heap: what was allocated in the last Window, at most headroom,
// and at most twice the live heap or SmallHeapRoom, whichever is larger. A headroom of 0 gives 0.
func Room(allocatedInWindow, live, headroom uint64) uint64 {
	byLive := max(SmallHeapRoom, live)
	if live <= math.MaxUint64/2 {
		byLive = max(SmallHeapRoom, 2*live)
	}
	return min(allocatedInWindow, headroom, byLive)
}

// Window is how far back the allocation is counted: the heap may hold about this long's allocation before
// the next collection.
const Window = 15 * time.Second

// Config configures a Pacer.
type Config struct {
	// Headroom bounds the room between the live heap and the goal, in bytes (0: the Pacer does nothing).
	Headroom uint64
	// Window is how far back allocation is counted (default Window).
	Window time.Duration
	// Base is the GOGC percent below which the Pacer never goes: Go's default, 100, if 0.
	Base int
	// Tick is how often the Pacer looks for a finished collection (default 1 s): the percent is set at
	// most this long after each one.
	Tick  time.Duration
	Clock clock.Clock
	// Read returns the runtime's figures (default: ReadHeap); Set sets the percent and returns the
	// previous one (default: debug.SetGCPercent). Tests give their own.
	Read   func() Heap
	Set    func(int) int
	Logger *slog.Logger
}

// Pacer sets Go's GC percent after each collection to Percent of the live heap that collection found and the
// Room of the allocation in the last Window for that heap.
type Pacer struct {
	cfg Config

	mu      sync.Mutex
	percent int // set last; 0 before the first

	startOnce, stopOnce sync.Once
	stop, done          chan struct{}
}

// New returns a Pacer; Start runs it.
func New(cfg Config) *Pacer {
	if cfg.Base <= 0 {
		cfg.Base = 100
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = Window
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Read == nil {
		cfg.Read = ReadHeap
	}
	if cfg.Set == nil {
		cfg.Set = debug.SetGCPercent
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Pacer{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start runs the Pacer: it sets the percent at its first look and after each collection until Stop. With
// no headroom it does nothing.
func (p *Pacer) Start() {
	p.startOnce.Do(func() {
		if p.cfg.Headroom == 0 {
			close(p.done)
			return
		}
		go p.loop()
	})
}

// Stop ends the loop, waits for it, and gives Go back the base percent. Safe to call more than once, and
// without Start.
func (p *Pacer) Stop() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.startOnce.Do(func() { close(p.done) })
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.percent != 0 {
		p.cfg.Set(p.cfg.Base)
		p.percent = 0
	}
}

// Percent returns the percent the Pacer set last, 0 before it set one.
func (p *Pacer) Percent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.percent
}

func (p *Pacer) loop() {
	defer close(p.done)
	window := AllocWindow{Span: p.cfg.Window}
	seen := uint64(0)
	for {
		h := p.cfg.Read()
		allocated := window.Add(p.cfg.Clock.Now(), h.Allocated)
		if h.Cycles != seen {
			p.apply(h.Live, Room(allocated, h.Live, p.cfg.Headroom))
			seen = h.Cycles
		}
		if !clock.Sleep(p.cfg.Clock, p.cfg.Tick, p.stop) {
			return
		}
	}
}

// apply sets the percent for live and room unless it is set already.
func (p *Pacer) apply(live, room uint64) {
	want := Percent(live, room, p.cfg.Base)
	p.mu.Lock()
	defer p.mu.Unlock()
	if want == p.percent {
		return
	}
	p.cfg.Set(want)
	p.cfg.Logger.Debug("garbage collector paced", "live_mb", live>>20, "room_mb", room>>20, "gc_percent", want)
	p.percent = want
}
