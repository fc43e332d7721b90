package metrics

import "strings"

// The reason label's values, indexed by reasonIndex; reasonOther is the last.
var reasonLabels = [...]string{
	"config",
	"disabled",
	"session",
	"not_registered",
	"server_disabled",
	"clock",
	"sharding",
	"still_running",
	"calendar",
	"paused",
	"ended",
	"other",
}

const reasonOther = len(reasonLabels) - 1

// reasonPrefixes map the start of the executor's skip reasons (internal/dispatch/executor.go) to
// reasonLabels; TestSkipReasonsOfExecutor checks that each reason the executor passes is known here.
var reasonPrefixes = [...]struct {
	prefix string
	label  int
}{
	{"config can't be parsed", 0},
	{"job disabled", 1},
	{"ZooKeeper session in doubt", 2},
	{"this peer's instance node is not registered", 3},
	{"this peer's server is disabled", 4},
	{"clock check failed", 5},
	{"no sharding to fire with", 6},
	{"item still running", 7},
	{"calendar", 8},
	{"job paused", 9},
	{"schedule ended", 10},
}

// SkipReason maps a skip reason of the executor to the bounded value of the reason label: one of config,
// disabled, session, not_registered, server_disabled, clock, sharding, still_running, calendar, paused, ended,
// other.
func SkipReason(reason string) string { return reasonLabels[reasonIndex(reason)] }

func reasonIndex(reason string) int {
	for _, p := range reasonPrefixes {
		if strings.HasPrefix(reason, p.prefix) {
			return p.label
		}
	}
	return reasonOther
}
