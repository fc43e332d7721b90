package testutil

import "runtime"

// LiveHeap is the heap in use after a full collection (two, so that finalizers' objects go too): what the
// memory benchmarks subtract to tell what a structure holds.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
