//go:build !race

package webhook

const raceEnabled = false
