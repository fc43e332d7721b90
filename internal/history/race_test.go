//go:build race

package history

// raceEnabled shrinks the data sets and leaves out the data-heavy tests (dataHeavy): modernc's SQLite is about
// 30 times slower under the race detector.
const raceEnabled = true
