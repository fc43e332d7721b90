package cronexpr

import (
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule computes fire times. It satisfies github.com/robfig/cron/v3's cron.Schedule.
type Schedule interface {
	// Next returns the first fire time strictly after t, in the schedule's location, or the zero time if
	// the schedule never fires again.
	Next(t time.Time) time.Time
}

var _ cron.Schedule = Schedule(nil)

// Parse parses a cron expression for a job whose timeZone is loc (nil means UTC):
//
//   - 5 fields: Unix cron, minute hour day-of-month month day-of-week;
//   - 6 or 7 fields: Quartz, second minute hour day-of-month month day-of-week [year];
//   - a descriptor: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>.
//
// Leading and trailing white space is ignored. An error is a *ParseError naming the field at fault. A
// CRON_TZ= or TZ= prefix is an error: the zone is the job's timeZone.
func Parse(expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, &ParseError{Expr: expr, Field: FieldExpression, Msg: "empty expression"}
	case strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ="):
		prefix, _, _ := strings.Cut(expr, " ")
		return nil, &ParseError{Expr: expr, Field: FieldExpression, Value: prefix,
			Msg: "a time-zone prefix is not allowed: set the job's timeZone instead"}
	case expr[0] == '@':
		return parseDescriptor(expr, loc)
	}
	fields := strings.FieldsFunc(expr, func(r rune) bool { return r == ' ' || r == '\t' })
	switch len(fields) {
	case 5:
		return parseUnix(expr, fields, loc)
	case 6, 7:
		return parseQuartz(expr, fields, loc)
	}
	return nil, &ParseError{Expr: expr, Field: FieldExpression,
		Msg: "expected 5 fields (Unix: minute hour day-of-month month day-of-week) or 6-7 (Quartz: second minute hour day-of-month month day-of-week [year]), found " + strconv.Itoa(len(fields))}
}
