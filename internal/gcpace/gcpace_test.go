package gcpace

import (
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ejserver/ejserver/internal/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const mib = 1 << 20

func TestPercentGivesTheRoomAndNeverLessThanBase(t *testing.T) {
	for _, c := range []struct {
		live, room uint64
		base, want int
	}{
		{40 * mib, 0, 100, 100},                // off
		{40 * mib, 128 * mib, 100, 320},        // steady-10k's ~40 MB: goal 168 MB
		{37 * mib, 128 * mib, 100, 346},        // rounded up: the goal is never below live + headroom
		{128 * mib, 128 * mib, 100, 100},       // Go's own goal already has the headroom
		{320 * mib, 128 * mib, 100, 100},       // 100,000 jobs: unchanged
		{320 * mib, 128 * mib, 50, 50},         // a lower base is kept where it gives the headroom
		{200 * mib, 128 * mib, 50, 64},         // and raised where it does not
		{0, 128 * mib, 100, 3200},              // before the first collection: minLive
		{1, 128 * mib, 100, 3200},              // a tiny heap counts as minLive
		{minLive, 64 * mib, 100, 1600},         //
		{40 * mib, 64 << 30, 100, maxPercent},  // bounded
		{1 << 40, 128 * mib, 100, 100},         // a terabyte live
		{40*mib + 1, 40 * mib, 100, 100},       // just above: 100 gives more than the headroom
		{40*mib - 1, 40 * mib, 100, 101},       // just below: 100 is one byte short
		{3 * mib, 4 * mib, 100, 100},           // minLive: 100 % of 4 MiB is the headroom
		{10 * mib, 15 * mib, 100, 150},         // exact
		{10 * mib, 15*mib + 1, 100, 151},       // one byte more: the next percent
		{999 * mib, 1 * mib, 100, 100},         //
		{64 * mib, 64 * mib, 200, 200},         // a base above the headroom's percent
		{64*mib - 1, 64 * mib, 1, 101},         // a base of 1
		{uint64(1) << 63, 128 * mib, 100, 100}, // no overflow at the top
	} {
		if got := Percent(c.live, c.room, c.base); got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.room, c.base, got, c.want)
		}
	}
}

func TestRoomIsTheWindowsAllocationUpToTheHeadroom(t *testing.T) {
	for _, c := range []struct{ allocated, live, headroom, want uint64 }{
		{150 * mib, 40 * mib, 256 * mib, 128 * mib},  // steady-10k: ~10 MB a second, a small heap
		{15 * mib, 20 * mib, 256 * mib, 15 * mib},    // steady-1k: ~1 MB a second
		{280 * mib, 145 * mib, 256 * mib, 256 * mib}, // steady-100000: the headroom
		{280 * mib, 145 * mib, 128 * mib, 128 * mib}, // --gc-headroom 128: as before 2026-12-08
		{280 * mib, 145 * mib, 384 * mib, 280 * mib}, // --gc-headroom 384: the window's allocation
		{500 * mib, 90 * mib, 256 * mib, 180 * mib},  // twice the live heap
		{500 * mib, 64 * mib, 256 * mib, 128 * mib},  // at half SmallHeapRoom, SmallHeapRoom
		{500 * mib, 40 * mib, 64 * mib, 64 * mib},    // a headroom below SmallHeapRoom bounds it
		{0, 145 * mib, 256 * mib, 0},                 // idle
		{150 * mib, 145 * mib, 0, 0},                 // off
		{math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64},
	} {
		if got := Room(c.allocated, c.live, c.headroom); got != c.want {
			t.Errorf("Room(%d, %d, %d) = %d, want %d", c.allocated, c.live, c.headroom, got, c.want)
		}
	}
}

// FuzzRoom checks Room against its bounds, each stated on its own: never above the window's allocation or the
// headroom; never above SmallHeapRoom for a heap of up to half of it, nor above twice a larger heap; always
// one of those bounds; and a heap as large as the headroom keeps Go's own goal.
func FuzzRoom(f *testing.F) {
	f.Add(uint64(150*mib), uint64(40*mib), uint64(256*mib))
	f.Add(uint64(280*mib), uint64(145*mib), uint64(256*mib))
	f.Add(uint64(1<<40), uint64(300*mib), uint64(256*mib))
	f.Add(uint64(500*mib), uint64(100*mib), uint64(1<<30)) // twice the heap is the least bound
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, allocated, live, headroom uint64) {
		r := Room(allocated, live, headroom)
		small := live <= SmallHeapRoom/2
		if r > allocated || r > headroom {
			t.Fatalf("Room(%d, %d, %d) = %d: above the allocation or the headroom", allocated, live, headroom, r)
		}
		if small && r > SmallHeapRoom {
			t.Fatalf("Room(%d, %d, %d) = %d: a small heap above SmallHeapRoom", allocated, live, headroom, r)
		}
		if !small && r/2 > live {
			t.Fatalf("Room(%d, %d, %d) = %d: above twice the heap", allocated, live, headroom, r)
		}
		twice := r/2 == live && r%2 == 0 || r == live && live > math.MaxUint64/2
		if r != allocated && r != headroom && !(small && r == SmallHeapRoom) && !(!small && (twice || r == SmallHeapRoom)) {
			t.Fatalf("Room(%d, %d, %d) = %d: none of its bounds", allocated, live, headroom, r)
		}
		if live >= headroom && live >= minLive && live < 1<<50 {
			if p := Percent(live, r, 100); p != 100 {
				t.Fatalf("live %d >= headroom %d: percent %d, want Go's own 100", live, headroom, p)
			}
		}
	})
}

func TestAllocWindowCountsTheLastWindow(t *testing.T) {
	w := AllocWindow{Span: 15 * time.Second}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at    time.Duration
		bytes uint64
		want  uint64
	}{
		{0, 100, 0},                   // one reading: nothing yet
		{time.Second, 150, 50},        // since the first
		{10 * time.Second, 600, 500},  //
		{15 * time.Second, 900, 800},  // the first is 15 s old: still in
		{16 * time.Second, 1000, 850}, // now it is out: since the reading at 1 s
		{40 * time.Second, 1000, 0},   // since the reading at 16 s, the newest older than the window
		{41 * time.Second, 900, 0},    // a counter that went back (never, in Go): 0, not a wrap
		{42 * time.Second, 1900, 900}, // since the reading at 16 s
	}
	for _, st := range steps {
		if got := w.Add(t0.Add(st.at), st.bytes); got != st.want {
			t.Fatalf("at %s, %d allocated: %d in the window, want %d", st.at, st.bytes, got, st.want)
		}
	}
	if len(w.samples) > 4 { // those within the window, and the newest one older
		t.Fatalf("kept %d readings", len(w.samples))
	}
}

// The Collector's use: readings every 100 ms, a 1 s window.
func TestAllocWindowSpansTheLastWindow(t *testing.T) {
	const tick = 100 * time.Millisecond
	r := AllocWindow{Span: time.Second}
	at := time.Unix(1000, 0)
	if got := r.Add(at, 5*mib); got != 0 {
		t.Fatalf("one reading: %d bytes, want 0", got)
	}
	for i := 1; i <= 30; i++ { // 1 MB every 100 ms
		got := r.Add(at.Add(time.Duration(i)*tick), uint64(5+i)*mib)
		want := uint64(min(i, 10)) * mib
		if got != want {
			t.Fatalf("reading %d: %d MB over the window, want %d", i, got/mib, want/mib)
		}
	}
	if len(r.samples) > 12 {
		t.Fatalf("%d readings kept for a 1 s window at 100 ms", len(r.samples))
	}
}

// FuzzPercent: the goal Percent gives is at least live + room (below the bound), never below base's, and
// one percent less would fall short (unless base is what holds it up).
func FuzzPercent(f *testing.F) {
	f.Add(uint64(40*mib), uint64(128*mib), 100)
	f.Add(uint64(0), uint64(1), 1)
	f.Add(uint64(1<<40), uint64(64<<30), 1000)
	f.Fuzz(func(t *testing.T, live, headroom uint64, base int) {
		headroom %= 64<<30 + 1 // the flag's bound
		if base < 1 || base > maxPercent {
			base = 100
		}
		p := Percent(live, headroom, base)
		if p < base {
			t.Fatalf("Percent(%d, %d, %d) = %d, below base", live, headroom, base, p)
		}
		l := max(live, minLive)
		if l > 1<<50 {
			return // the products below would overflow; the table covers such heaps
		}
		room := func(p int) uint64 { return l * uint64(p) / 100 }
		if headroom == 0 {
			if p != base {
				t.Fatalf("Percent(%d, 0, %d) = %d, want base", live, base, p)
			}
			return
		}
		if p < maxPercent && l*uint64(p) < headroom*100 {
			t.Fatalf("Percent(%d, %d, %d) = %d: room %d short of the headroom", live, headroom, base, p, room(p))
		}
		if p > base && l*uint64(p-1) >= headroom*100 {
			t.Fatalf("Percent(%d, %d, %d) = %d: %d would have done", live, headroom, base, p, p-1)
		}
	})
}

// fakeRuntime is a heap the test moves and the percents the Pacer set on it.
type fakeRuntime struct {
	mu      sync.Mutex
	heap    Heap
	set     []int
	current int
	setCh   chan int
}

func newFakeRuntime(live uint64) *fakeRuntime {
	return &fakeRuntime{heap: Heap{Live: live, Cycles: 1}, current: 100, setCh: make(chan int, 16)}
}

func (r *fakeRuntime) read() Heap {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.heap
}

func (r *fakeRuntime) allocate(n uint64) {
	r.mu.Lock()
	r.heap.Allocated += n
	r.mu.Unlock()
}

func (r *fakeRuntime) setPercent(p int) int {
	r.mu.Lock()
	prev := r.current
	r.current = p
	r.set = append(r.set, p)
	r.mu.Unlock()
	r.setCh <- p
	return prev
}

func (r *fakeRuntime) collect(live uint64) {
	r.mu.Lock()
	r.heap.Live, r.heap.Cycles = live, r.heap.Cycles+1
	r.mu.Unlock()
}

func (r *fakeRuntime) sets() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.set...)
}

func waitSet(t *testing.T, r *fakeRuntime, want int) {
	t.Helper()
	select {
	case got := <-r.setCh:
		if got != want {
			t.Fatalf("set %d, want %d (all: %v)", got, want, r.sets())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no percent set; want %d (all: %v)", want, r.sets())
	}
}

func newTestPacer(r *fakeRuntime, clk clock.Clock, headroom uint64) *Pacer {
	return New(Config{Headroom: headroom, Clock: clk, Read: r.read, Set: r.setPercent,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// startWaiting starts p and returns once its loop waits on its first timer.
func startWaiting(p *Pacer, clk *clock.Fake) {
	created := clk.TimerCreated()
	p.Start()
	<-created
}

// look moves the fake clock a tick on, from a loop waiting on its timer, and returns once the loop looked
// and waits on the next.
func look(clk *clock.Fake) {
	next := clk.TimerCreated()
	clk.Advance(time.Second)
	<-next
}

// The Pacer sets the percent at its first look, again after a collection whose live heap or window of
// allocation asks for another, not again for one that asks for the same, and gives Go back the base at Stop.
func TestPacerSetsThePercentAfterEachCollection(t *testing.T) {
	r := newFakeRuntime(40 * mib)
	clk := clock.NewFake(time.Unix(1000, 0))
	p := newTestPacer(r, clk, 128*mib)
	startWaiting(p, clk)
	waitSet(t, r, 100) // nothing allocated yet: Go's own
	r.allocate(150 * mib)
	r.collect(40 * mib) // 150 MiB in the window: the headroom's 128
	look(clk)
	waitSet(t, r, 320)
	if got := p.Percent(); got != 320 {
		t.Fatalf("Percent() = %d, want 320", got)
	}
	r.collect(64 * mib) // grown: a smaller percent keeps the room
	look(clk)
	waitSet(t, r, 200)
	r.collect(64*mib + 100) // the same percent: not set again
	look(clk)
	for range 15 { // the 150 MiB leave the window
		look(clk)
	}
	r.allocate(20 * mib)
	r.collect(40 * mib) // 20 MiB in the window: less than Go's own 40
	look(clk)
	waitSet(t, r, 100)
	p.Stop()
	waitSet(t, r, 100) // the base, given back
	if got, want := r.sets(), []int{100, 320, 200, 100, 100}; !slices.Equal(got, want) {
		t.Fatalf("sets %v, want %v", got, want)
	}
	if got := p.Percent(); got != 0 {
		t.Fatalf("Percent() after Stop = %d, want 0", got)
	}
	p.Stop() // twice: nothing more
	if got := r.sets(); len(got) != 5 {
		t.Fatalf("sets after a second Stop %v", got)
	}
}

// No collection between two looks: the percent is not decided again from figures no collection made.
func TestPacerWaitsForACollection(t *testing.T) {
	r := newFakeRuntime(40 * mib)
	clk := clock.NewFake(time.Unix(1000, 0))
	p := newTestPacer(r, clk, 128*mib)
	startWaiting(p, clk)
	defer p.Stop()
	waitSet(t, r, 100)
	r.allocate(150 * mib)
	r.mu.Lock()
	r.heap.Live = 10 * mib // moved without a collection (what a read between two could see): ignored
	r.mu.Unlock()
	for range 3 {
		look(clk)
	}
	r.collect(10 * mib) // a collection found it: now
	look(clk)
	waitSet(t, r, 1280)
	if got, want := r.sets(), []int{100, 1280}; !slices.Equal(got, want) {
		t.Fatalf("sets %v, want %v", got, want)
	}
}

// With no headroom the Pacer never touches Go's percent, and Start and Stop return.
func TestPacerWithoutHeadroomDoesNothing(t *testing.T) {
	r := newFakeRuntime(40 * mib)
	p := newTestPacer(r, clock.NewFake(time.Unix(1000, 0)), 0)
	p.Start()
	p.Stop()
	if got := r.sets(); len(got) != 0 {
		t.Fatalf("sets %v, want none", got)
	}
	unstarted := newTestPacer(r, clock.Real{}, 128*mib)
	unstarted.Stop() // never started
	unstarted.Start()
	if got := r.sets(); len(got) != 0 {
		t.Fatalf("a Start after Stop set %v", got)
	}
}

// The real runtime: after a collection that follows some allocation the percent is above 100, it is what Go
// reports, and Stop restores 100.
func TestPacerOnTheRuntime(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	set := make(chan int, 64)
	p := New(Config{Headroom: 256 * mib, Tick: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Set: func(percent int) int {
			prev := debug.SetGCPercent(percent)
			select {
			case set <- percent:
			default:
			}
			return prev
		}})
	p.Start()
	deadline := time.After(5 * time.Second)
	for p.Percent() <= 100 {
		for range 64 {
			sink = make([]byte, mib)
		}
		runtime.GC()
		select {
		case <-set: // looked after the collection
		case <-time.After(50 * time.Millisecond): // not yet: another collection
		case <-deadline:
			t.Fatalf("Percent() = %d after 64 MiB allocated and collected, again and again", p.Percent())
		}
	}
	got := p.Percent()
	if now := debug.SetGCPercent(got); now != got {
		t.Fatalf("the runtime's percent is %d, the Pacer's %d", now, got)
	}
	p.Stop()
	if now := debug.SetGCPercent(100); now != 100 {
		t.Fatalf("after Stop the runtime's percent is %d, want 100", now)
	}
}

var sink []byte

func TestReadHeapReadsTheRuntime(t *testing.T) {
	runtime.GC() // so that a collection has marked the live heap
	h := ReadHeap()
	if h.Allocated == 0 || h.Objects == 0 || h.Live == 0 || h.Goal <= h.Live || h.Cycles == 0 {
		t.Fatalf("runtime heap figures: %+v", h)
	}
	keep := make([]byte, 4*mib)
	if after := ReadHeap(); after.Allocated < h.Allocated+uint64(len(keep)) {
		t.Fatalf("allocated %d bytes, then the figure went from %d to %d", len(keep), h.Allocated, after.Allocated)
	}
	_ = keep[len(keep)-1]
}
