package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/ejserver/ejserver/internal/gcpace"
)

// defaultGCHeadroomMiB is --gc-headroom's default. A heap of up to 64 MB live (a peer of ~10,000 jobs) gets at
// most gcpace.SmallHeapRoom (128 MiB) of it: at steady-10k (~10 MB allocated a second) that made a peer's
// collections 4.4 times rarer and its CPU 10-15 % lower for ~70 MB more RSS. A larger heap may have up to
// twice itself, up to this: at steady-100000 (~145 MB live) 256 instead of Go's own ~145 (docs/benchmarks.md,
// "A 100,000-job peer's collector given room"). From 256 MB live up Go's own goal is the larger and nothing
// changes.
const defaultGCHeadroomMiB = 256

// maxGCHeadroomMiB bounds the flag (64 GiB): past it a value is a typo more likely than a plan.
const maxGCHeadroomMiB = 64 << 10

// gcHeadroomFlag adds --gc-headroom [EJ_GC_HEADROOM]; the returned func gives its value in bytes, or the
// error that names what is wrong with it.
func gcHeadroomFlag(f *envFlags) func() (uint64, error) {
	mib := f.Int("gc-headroom", defaultGCHeadroomMiB, fmt.Sprintf("at most this many MiB of room for the heap to grow past "+
		"what the last garbage collection found live: as much as the peer allocated in the last %v, at most %d MiB for a "+
		"heap of up to %d MiB live and at most twice the live heap above it, where Go's GOGC=100 gives as much as was "+
		"live (a busy peer with a small heap then collects every second or two); 0 leaves Go's pacer alone, as does "+
		"GOGC in the environment", gcpace.Window, gcpace.SmallHeapRoom>>20, gcpace.SmallHeapRoom>>21))
	return func() (uint64, error) {
		if *mib < 0 || *mib > maxGCHeadroomMiB {
			return 0, fmt.Errorf("--gc-headroom: %d: must be from 0 (off) to %d MiB", *mib, maxGCHeadroomMiB)
		}
		return uint64(*mib) << 20, nil
	}
}

// newGCPacer returns the pacer for headroom; it does nothing when headroom is 0 or GOGC is set in the
// environment (the operator's own percent wins).
func newGCPacer(headroom uint64, log *slog.Logger) *gcpace.Pacer {
	if v, ok := os.LookupEnv("GOGC"); ok && headroom > 0 {
		log.Info("GOGC is set in the environment: --gc-headroom not applied", "GOGC", v)
		headroom = 0
	}
	return gcpace.New(gcpace.Config{Headroom: headroom, Logger: log})
}
