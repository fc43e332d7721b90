package cronexpr

import (
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"
)

// sharedSchedule is a parsed schedule that jobs with the same expression and location hold together.
type sharedSchedule struct{ Schedule }

type sharedKey struct {
	expr string
	loc  *time.Location
}

// shared maps a sharedKey to a weak.Pointer[sharedSchedule]; an entry goes once no job holds its schedule.
var shared sync.Map

// ParseShared is Parse for a schedule a peer keeps for a job: jobs with the same expression and location
// get one parsed schedule (schedules are immutable and safe for concurrent use). Thousands of jobs often
// share a handful of expressions, and a parsed Quartz expression is about a kilobyte. The cache holds its
// schedules weakly: a schedule no job uses any more is collected and its entry removed.
func ParseShared(expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	k := sharedKey{strings.TrimSpace(expr), loc}
	if v, ok := shared.Load(k); ok {
		if s := v.(weak.Pointer[sharedSchedule]).Value(); s != nil {
			return s, nil
		}
	}
	s, err := Parse(expr, loc)
	if err != nil {
		return nil, err
	}
	sh := &sharedSchedule{s}
	wp := weak.Make(sh)
	shared.Store(k, wp)
	runtime.AddCleanup(sh, func(k sharedKey) { shared.CompareAndDelete(k, wp) }, k)
	return sh, nil
}
