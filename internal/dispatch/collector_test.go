package dispatch

import (
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/gcpace"
)

const mb = 1 << 20

func TestShouldCollect(t *testing.T) {
	// Live 100 MB, goal 200 MB: Go may start a collection from 170 MB on
	h := gcpace.Heap{Live: 100 * mb, Goal: 200 * mb}
	for _, tc := range []struct {
		heap, perWindow uint64
		want            bool
	}{
		{heap: 150 * mb, perWindow: 10 * mb, want: false}, // 160 MB after the next window
		{heap: 160 * mb, perWindow: 10 * mb, want: true},  // the next window may reach 170 MB
		{heap: 169 * mb, perWindow: 0, want: false},       // nothing allocates: Go won't collect either
		{heap: 110 * mb, perWindow: 60 * mb, want: true},  // a fast allocator: collect early
		{heap: 160 * mb, perWindow: 70 * mb, want: false}, // a burst bigger than a whole cycle: Go collects in it anyway
		{heap: 190 * mb, perWindow: 90 * mb, want: false}, // even past the trigger
		{heap: 190 * mb, perWindow: 1, want: false},       // past the earliest trigger: Go may be collecting
		{heap: 170 * mb, perWindow: 1, want: false},       // at it
		{heap: 169 * mb, perWindow: mb, want: true},       // just before it
	} {
		h.Objects = tc.heap
		if got := shouldCollect(h, tc.perWindow); got != tc.want {
			t.Errorf("heap %d MB, %d MB per window: collect %t, want %t", tc.heap/mb, tc.perWindow/mb, got, tc.want)
		}
	}
	if shouldCollect(gcpace.Heap{Objects: 500 * mb, Live: 100 * mb, Goal: 100 * mb}, mb) {
		t.Error("collected without a goal above the live heap (GOGC=off reads so)")
	}
}

// fakeHeap is a heap a test grows by hand.
type fakeHeap struct {
	mu sync.Mutex
	h  gcpace.Heap
}

func (f *fakeHeap) read() gcpace.Heap {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.h
}

func (f *fakeHeap) setHeap(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.h.Objects = n
}

// cycle has a collection end that found the live heap Live; the dead objects it found stay in Objects, unswept.
func (f *fakeHeap) cycle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.h.Cycles++
}

func (f *fakeHeap) allocate(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.h.Allocated += n
	f.h.Objects += n
}

// collectorHarness runs a Collector on a fake clock; tick advances it by one look and waits for the look.
type collectorHarness struct {
	clk       *clock.Fake
	act       *Activity
	heap      *fakeHeap
	c         *Collector
	collected chan time.Time
}

func newCollectorHarness(t *testing.T, gcTakes time.Duration) *collectorHarness {
	h := &collectorHarness{clk: clock.NewFake(time.Unix(1000, 0)), heap: &fakeHeap{},
		collected: make(chan time.Time, 100)}
	h.heap.h = gcpace.Heap{Objects: 120 * mb, Live: 100 * mb, Goal: 200 * mb}
	h.act = NewActivity(h.clk)
	h.c = NewCollector(CollectorConfig{Activity: h.act, Clock: h.clk, Heap: h.heap.read, Collect: func() {
		h.collected <- h.clk.Now()
		h.clk.Advance(gcTakes)
		h.heap.setHeap(h.heap.read().Live)
		h.heap.cycle()
	}})
	looking := h.clk.TimerCreated()
	h.c.Start()
	t.Cleanup(h.c.Stop)
	<-looking
	return h
}

// grow allocates 1 MB a look, n looks, with no burst.
func (h *collectorHarness) grow(n int) {
	for range n {
		h.heap.allocate(mb)
		h.tick()
	}
}

func (h *collectorHarness) tick() {
	looked := h.clk.TimerCreated()
	h.clk.Advance(collectorTick)
	<-looked
}

// burst has a request leave now.
func (h *collectorHarness) burst() {
	h.act.departure().leave(h.clk.Now(), false, h.clk.Now())
}

func (h *collectorHarness) wantCollections(t *testing.T, want int64, when string) {
	t.Helper()
	if n := h.c.Collections(); n != want {
		t.Fatalf("%s: %d collections, want %d (heap %d MB)", when, n, want, h.heap.read().Objects/mb)
	}
}

func TestCollectorCollectsInAGapBeforeGoWould(t *testing.T) {
	h := newCollectorHarness(t, 0)
	// 1 MB every look (10 MB/s) from 120 MB: a second's allocation reaches Go's earliest trigger (170 MB)
	// from 160 MB on, the 40th look
	for i := 1; i < 40; i++ {
		h.heap.allocate(mb)
		if i%10 == 0 {
			h.burst()
		}
		h.tick()
	}
	h.wantCollections(t, 0, "far from Go's trigger")
	// a burst is due within the guard: the collection waits for the gap after it
	due := h.clk.Now().Add(collectorTick + 50*time.Millisecond)
	h.act.waiting(due, 1)
	h.heap.allocate(mb)
	h.tick()
	h.wantCollections(t, 0, "a burst due in 50 ms")
	h.act.departure().leave(due, true, due) // it leaves at its time, 50 ms before the next look
	h.heap.allocate(mb)
	h.tick()
	h.wantCollections(t, 0, "the burst's requests started 50 ms ago")
	h.heap.allocate(mb)
	h.tick()
	h.wantCollections(t, 1, "in the gap after the burst")
	// one collection per gap: the heap is back near the trigger, but no burst has left since
	h.grow(60)
	h.wantCollections(t, 1, "the same gap")
	h.burst()
	h.heap.allocate(mb)
	h.tick()
	h.wantCollections(t, 2, "the gap after the next burst")
}

func TestCollectorLeavesAPeerThatSendsNothingToGo(t *testing.T) {
	h := newCollectorHarness(t, 0)
	h.heap.setHeap(169 * mb)
	for range 20 {
		h.heap.allocate(mb)
		h.tick()
	}
	h.wantCollections(t, 0, "no burst ever")
}

func TestCollectorKeepsALongCollectionClearOfTheNextBurst(t *testing.T) {
	// a collection takes 400 ms here: the next one must begin 600 ms or more before a burst
	h := newCollectorHarness(t, 400*time.Millisecond)
	h.heap.setHeap(160 * mb)
	h.burst()
	for range 3 {
		h.heap.allocate(3 * mb)
		h.tick()
	}
	h.wantCollections(t, 1, "near the trigger with nothing due")
	at := <-h.collected
	h.grow(59)
	h.burst()
	due := h.clk.Now().Add(collectorTick + 500*time.Millisecond)
	h.act.waiting(due, 1)
	h.heap.allocate(mb)
	h.tick()
	h.wantCollections(t, 1, "a burst due in 500 ms")
	h.act.waiting(due, -1)
	h.heap.allocate(mb)
	h.tick()
	h.wantCollections(t, 2, "nothing due")
	if again := <-h.collected; again.Sub(at) < 400*time.Millisecond {
		t.Fatalf("collections %s apart: the first took 400 ms", again.Sub(at))
	}
}

func TestCollectorTellsTheHeapSinceACollectionFromItsUnsweptDead(t *testing.T) {
	h := newCollectorHarness(t, 0)
	h.tick() // the first look: the collections it finds done have no known end
	// Go collected on its own near its trigger: 100 MB are live, but the 69 MB of dead objects it found are
	// not swept yet, so the heap's objects still read 169 MB
	h.heap.setHeap(169 * mb)
	h.heap.cycle()
	// 1 MB every look (10 MB a second), a burst every second: Go's earliest trigger (170 MB) is 70 MB of
	// allocation away, and a second's allocation may reach it once 60 MB have been allocated
	for i := 1; i <= 70; i++ {
		h.heap.allocate(mb)
		if i%10 == 0 {
			h.burst()
		}
		h.tick()
		if i == 50 {
			h.wantCollections(t, 0, "50 MB allocated since Go's collection")
		}
	}
	h.wantCollections(t, 1, "70 MB allocated since Go's collection")
}

func TestCycleBaseHeapNow(t *testing.T) {
	var b cycleBase
	h := gcpace.Heap{Allocated: 1000 * mb, Objects: 300 * mb, Live: 100 * mb, Goal: 200 * mb, Cycles: 7}
	if got := b.heapNow(h); got != 300*mb {
		t.Fatalf("first reading: %d MB, want the heap's objects (300): the last collection's end is unknown", got/mb)
	}
	h.Allocated, h.Objects = 1010*mb, 310*mb
	if got := b.heapNow(h); got != 310*mb {
		t.Fatalf("no collection seen done: %d MB, want 310", got/mb)
	}
	h.Cycles, h.Live, h.Allocated = 8, 120*mb, 1020*mb // a collection ended; its dead are not swept
	if got := b.heapNow(h); got != 120*mb {
		t.Fatalf("just after a collection: %d MB, want what it marked (120)", got/mb)
	}
	h.Allocated, h.Objects = 1050*mb, 250*mb
	if got := b.heapNow(h); got != 150*mb {
		t.Fatalf("30 MB allocated since: %d MB, want 150", got/mb)
	}
	h.Objects = 140 * mb // swept below the estimate: the smaller figure
	if got := b.heapNow(h); got != 140*mb {
		t.Fatalf("objects below the estimate: %d MB, want 140", got/mb)
	}
}

func TestCollectorStopsWithoutStart(t *testing.T) {
	c := NewCollector(CollectorConfig{})
	c.Stop()
	c.Start() // after Stop: does nothing
	c.Stop()
}
