//go:build race

package dispatch

// raceEnabled: the race detector allocates, so allocation counts are not checked under it.
const raceEnabled = true
