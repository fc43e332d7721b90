package cronexpr

import "fmt"

// Field names a ParseError can carry. FieldExpression is for problems of the whole expression, such as the
// wrong number of fields or a descriptor that does not exist.
const (
	FieldSecond     = "second"
	FieldMinute     = "minute"
	FieldHour       = "hour"
	FieldDayOfMonth = "day-of-month"
	FieldMonth      = "month"
	FieldDayOfWeek  = "day-of-week"
	FieldYear       = "year"
	FieldExpression = "expression"
)

// ParseError says which part of a cron expression is wrong and why. Value is the offending text as written:
// one element of a comma-separated list when a single element is at fault, else the whole field; it is
// empty for some whole-expression problems.
type ParseError struct {
	Expr  string
	Field string
	Value string
	Msg   string
}

func (e *ParseError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("cron %q: %s: %s", e.Expr, e.Field, e.Msg)
	}
	return fmt.Sprintf("cron %q: %s %q: %s", e.Expr, e.Field, e.Value, e.Msg)
}
