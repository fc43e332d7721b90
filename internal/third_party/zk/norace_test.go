//go:build !race

package zk

const raceEnabled = false
