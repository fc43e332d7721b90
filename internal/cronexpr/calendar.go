package cronexpr

// calendar is the small part of java.util.GregorianCalendar that Quartz's CronExpression.getTimeAfter leans
// on, reproduced so that ejserver fires when Quartz does, DST quirks included. It holds wall-clock fields
// and the instant they stand for. Setting a field only marks the instant stale; reading any field first
// recomputes the instant from the fields, leniently (day 32 of April is May 2, hour 24 is midnight of the
// next day), and then all fields from the instant. A wall time that does not exist (a spring-forward gap)
// is read with the offset in force before the gap, so 02:30 becomes 03:30; a wall time that exists twice
// (a fall-back repeat) is read as the later, standard-time one. That second rule is why Quartz skips the
// first pass of a repeated hour: any field it sets there moves the instant to the second pass.
type calendar struct {
	zone *zoneCache
	// year, month (1-12), day, hour, minute and second: out of range while stale.
	year, month, day, hour, minute, second int
	unix                                   int64 // the instant, in seconds, when not stale
	stale                                  bool

	// The last date converted to or from a day number: most recomputations stay on the same day.
	cachedYear, cachedMonth, cachedDay int
	cachedDays                         int64
	cached                             bool
}

func newCalendar(zone *zoneCache, unix int64) calendar {
	c := calendar{zone: zone}
	c.setInstant(unix)
	return c
}

func (c *calendar) setInstant(unix int64) {
	c.unix = unix
	local := unix + c.zone.offsetAt(unix)
	days := floorDiv(local, secondsPerDay)
	sod := int(local - days*secondsPerDay)
	if !c.cached || days != c.cachedDays {
		c.cachedYear, c.cachedMonth, c.cachedDay = civilFromDays(days)
		c.cachedDays, c.cached = days, true
	}
	c.year, c.month, c.day = c.cachedYear, c.cachedMonth, c.cachedDay
	c.hour, c.minute, c.second = sod/3600, sod/60%60, sod%60
	c.stale = false
}

// complete recomputes the instant from the fields, and the fields from the instant, if a field was set.
func (c *calendar) complete() {
	if !c.stale {
		return
	}
	var days int64
	if c.cached && c.year == c.cachedYear && c.month == c.cachedMonth && c.day == c.cachedDay {
		days = c.cachedDays
	} else {
		days = dayNumber(c.year, c.month, c.day)
	}
	wall := days*secondsPerDay + int64(c.hour)*3600 + int64(c.minute)*60 + int64(c.second)
	c.setInstant(c.zone.instantOf(wall))
}

func (c *calendar) Year() int   { c.complete(); return c.year }
func (c *calendar) Month() int  { c.complete(); return c.month }
func (c *calendar) Day() int    { c.complete(); return c.day }
func (c *calendar) Hour() int   { c.complete(); return c.hour }
func (c *calendar) Minute() int { c.complete(); return c.minute }
func (c *calendar) Second() int { c.complete(); return c.second }
func (c *calendar) Unix() int64 { c.complete(); return c.unix }

// Weekday returns the day of the week as Java numbers it: 1 is Sunday, 7 is Saturday.
func (c *calendar) Weekday() int {
	c.complete()
	return javaWeekday(c.cachedDays) // complete leaves the current date in the cache
}

func (c *calendar) SetYear(v int)   { c.year, c.stale = v, true }
func (c *calendar) SetMonth(v int)  { c.month, c.stale = v, true }
func (c *calendar) SetDay(v int)    { c.day, c.stale = v, true }
func (c *calendar) SetHour(v int)   { c.hour, c.stale = v, true }
func (c *calendar) SetMinute(v int) { c.minute, c.stale = v, true }
func (c *calendar) SetSecond(v int) { c.second, c.stale = v, true }

// SetHourSkippingGap is Quartz's setCalendarHour: set the hour, and if that wall time falls in a
// spring-forward gap (reading the hour back gives another one), set the hour after it instead.
func (c *calendar) SetHourSkippingGap(hour int) {
	c.SetHour(hour)
	if c.Hour() != hour && hour != 24 {
		c.SetHour(hour + 1)
	}
}

// AddYear is Calendar.add(YEAR, n): complete the fields, move the year, and pin the day to the month's
// length (29 February plus a year is 28 February).
func (c *calendar) AddYear(n int) {
	c.complete()
	c.SetYear(c.year + n)
	if last := lastDayOfMonth(c.month, c.year); c.day > last {
		c.day = last
	}
}

const secondsPerDay = 86400

// dayNumber returns the days since 1970-01-01 of a possibly out-of-range date, carrying over as
// java.util.GregorianCalendar does when lenient: month 13 is January of the next year, day 0 the last day of
// the month before. (Hours, minutes and seconds out of range carry over in the sum that follows.)
func dayNumber(year, month, day int) int64 {
	y, m := int64(year)+floorDiv(int64(month)-1, 12), int(floorMod(int64(month)-1, 12))+1
	return daysFromCivil(int(y), m, 1) + int64(day) - 1
}

// daysFromCivil returns the number of days from 1970-01-01 to the given date of the proleptic Gregorian
// calendar (Howard Hinnant's algorithm). month is 1-12.
func daysFromCivil(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((month + 9) % 12)
	doy := (153*mp+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(days int64) (year, month, day int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp + 3)
	if month > 12 {
		month -= 12
	}
	y := yoe + era*400
	if month <= 2 {
		y++
	}
	return int(y), month, day
}

// javaWeekday numbers the day of the week of a day since 1970-01-01 as Java does: 1 is Sunday, 7 Saturday.
func javaWeekday(days int64) int {
	return int(floorMod(days+4, 7)) + 1 // 1970-01-01 was a Thursday, 5
}

func isLeapYear(year int) bool {
	return year%4 == 0 && (year%100 != 0 || year%400 == 0)
}

// lastDayOfMonth returns the number of days in a month (1-12) of a year.
func lastDayOfMonth(month, year int) int {
	switch month {
	case 2:
		if isLeapYear(year) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	return a - floorDiv(a, b)*b
}
