package gcpace

import (
	"runtime/metrics"
	"time"
)

// Heap is the runtime's heap figures, in bytes.
type Heap struct {
	Allocated uint64 // allocated since the process started
	Objects   uint64 // in heap objects now: live, and dead not yet swept
	Live      uint64 // found live by the last collection
	Goal      uint64 // where the current cycle's pacer aims to have finished its next collection
	Cycles    uint64 // collections finished since the process started
}

// heapMetrics are the runtime/metrics names ReadHeap reads, in Heap's order.
var heapMetrics = [...]string{"/gc/heap/allocs:bytes", "/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes",
	"/gc/heap/goal:bytes", "/gc/cycles/total:gc-cycles"}

// ReadHeap reads the runtime's heap figures (a few microseconds).
func ReadHeap() Heap {
	var s [len(heapMetrics)]metrics.Sample
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s[:])
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return Heap{Allocated: v(0), Objects: v(1), Live: v(2), Goal: v(3), Cycles: v(4)}
}

// AllocWindow measures the bytes allocated over the last Span from readings of the cumulative counter
// (Heap.Allocated).
type AllocWindow struct {
	Span    time.Duration
	samples []allocSample // oldest first, spanning at least Span once warm
}

type allocSample struct {
	at    time.Time
	bytes uint64
}

// Add records a reading and returns the bytes allocated since the newest reading at least Span old, or since
// the oldest when none is; 0 until there are two readings.
func (w *AllocWindow) Add(at time.Time, allocated uint64) uint64 {
	w.samples = append(w.samples, allocSample{at, allocated})
	// drop the readings that a younger one, still Span old, makes unneeded
	for len(w.samples) > 2 && at.Sub(w.samples[1].at) >= w.Span {
		w.samples = w.samples[1:]
	}
	first := w.samples[0]
	if allocated < first.bytes {
		return 0
	}
	return allocated - first.bytes
}
