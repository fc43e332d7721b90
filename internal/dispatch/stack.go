package dispatch

// A goroutine starts with a small stack (the runtime's average, a few KB in a peer) and the runtime copies it
// to one twice the size whenever a call overflows it, adjusting every frame on it: the deeper the call chain
// at the overflow, the dearer the copy (runtime.copystack walks each frame). An item's goroutine overflowed
// twice, deep in its begin and then ahead of its request, and a fire's deep in its decision: copies were 5 %
// of a peer's CPU in steady-10k's profile with a PostgreSQL history. These goroutines grow their stacks
// first, while they hold one frame, to what their work needs: one copy of an empty stack instead.

// sendStackFrame is the frame growStack pushes. Sending a webhook (resty, net/http) needs more than 16 KB of
// stack; grown at the scheduled time, the stack was copied twice or three times while the rest of the burst
// waited (runtime.newstack was a fifth of an item's CPU in a profile of the `second` workload). A 16 KB frame
// on top of what the goroutine uses grows it to 32 KB.
const sendStackFrame = 16 << 10

// decideStackFrame is the frame growDecideStack pushes: 8 KB on top of a new goroutine's few grows it to
// 16 KB, what a fire's decision and an item's end take (the largest stack the runtime keeps in its per-P
// caches, where 32 KB ones come from a shared list under a lock).
const decideStackFrame = 8 << 10

// growStack grows the calling goroutine's stack to what sending needs: an item's goroutine calls it first,
// ahead of its begin and of the wait for its scheduled time. The runtime keeps the stack until a garbage
// collection finds it mostly unused.
//
//go:noinline
func growStack() {
	var frame [sendStackFrame]byte
	useStack(frame[:])
}

// growDecideStack grows the calling goroutine's stack to what a fire's decision or an item's end needs: a
// fire's goroutine and an item's tail call it first.
//
//go:noinline
func growDecideStack() {
	var frame [decideStackFrame]byte
	useStack(frame[:])
}

//go:noinline
func useStack(b []byte) { b[len(b)-1] = 1 }
