package cronexpr

import "time"

// The year range of Quartz expressions: the year field accepts these years, a missing or "*" year means all
// of them, and Next returns the zero time once the search passes the last.
const (
	minYear = 1970
	maxYear = 2099
)

// The instants a day before minYear begins and a day after maxYear ends anywhere.
var (
	firstYearStart = time.Date(minYear, time.January, 1, 0, 0, 0, 0, time.UTC).Unix() - secondsPerDay
	lastYearEnd    = time.Date(maxYear+1, time.January, 1, 0, 0, 0, 0, time.UTC).Unix() + secondsPerDay
)

// maxIterations bounds one Next call. Quartz's own loop ends when it passes its last year; the bound is a
// second guard, far above what any expression needs (a year of impossible days costs about fifty).
const maxIterations = 100_000

// quartzSchedule is a parsed 6- or 7-field Quartz expression. Its Next is Quartz 2.3.2's
// CronExpression.getTimeAfter, field for field, including what that method does with DST and with the
// special day forms. It is immutable and safe for concurrent use.
type quartzSchedule struct {
	loc *time.Location

	seconds, minutes, hours, daysOfMonth, months, daysOfWeek valueSet
	years                                                    valueSet // year - minYear

	domUnspecified bool // day-of-month is "?"
	dowUnspecified bool // day-of-week is "?"
	lastDayOfMonth bool // "L", "L-n", "LW" or "L-nW" in day-of-month
	lastDayOffset  int  // n of "L-n"
	nearestWeekday bool // "nW", "LW" or "L-nW" in day-of-month
	lastDayOfWeek  bool // "nL" in day-of-week: the last weekday n of the month
	nthDayOfWeek   int  // k of "n#k" in day-of-week: the k-th weekday n of the month; 0 if none

	fields [7]quartzField // as parsed, for Describe

	zones *zoneTable // the location's periods; nil for a location LoadLocation did not return
}

// Next returns the first fire time strictly after t, in the schedule's location, or the zero time if there
// is none before the end of maxYear.
func (s *quartzSchedule) Next(t time.Time) time.Time {
	// Quartz starts one second after t, at a whole second. Before the first year any time will do that is
	// before it in every zone; after the last there is nothing to find.
	start := t.Unix() + 1
	switch {
	case start > lastYearEnd:
		return time.Time{}
	case start < firstYearStart:
		start = firstYearStart
	}
	unix, ok := s.next(newZoneCache(s.loc, s.zones), start)
	if !ok {
		return time.Time{}
	}
	return time.Unix(unix, 0).In(s.loc)
}

// next is getTimeAfter's loop: fix the second, then the minute, hour, day, month and year; whenever a field
// has to move, reset the smaller ones and start over. The variables are Java's (sec, hr, day, mon), but for
// min (minute here) and t and tmon (prev and prevMon: a field's value before the search, -1 once it moved).
func (s *quartzSchedule) next(zone *zoneCache, start int64) (int64, bool) {
	c := newCalendar(zone, start)
	for range maxIterations {
		if c.Year() > 2999 { // Quartz's guard against endless loops
			return 0, false
		}

		// Second.
		sec, minute := c.Second(), c.Minute()
		if v, ok := s.seconds.next(sec); ok {
			sec = v
		} else {
			sec = s.seconds.first()
			minute++
			c.SetMinute(minute)
		}
		c.SetSecond(sec)

		// Minute.
		minute, hr := c.Minute(), c.Hour()
		prev := -1
		if v, ok := s.minutes.next(minute); ok {
			prev, minute = minute, v
		} else {
			minute = s.minutes.first()
			hr++
		}
		if minute != prev {
			c.SetSecond(0)
			c.SetMinute(minute)
			c.SetHourSkippingGap(hr)
			continue
		}
		c.SetMinute(minute)

		// Hour.
		hr = c.Hour()
		day := c.Day()
		prev = -1
		if v, ok := s.hours.next(hr); ok {
			prev, hr = hr, v
		} else {
			hr = s.hours.first()
			day++
		}
		if hr != prev {
			c.SetSecond(0)
			c.SetMinute(0)
			c.SetDay(day)
			c.SetHourSkippingGap(hr)
			continue
		}
		c.SetHour(hr)

		// Day.
		day, mon := c.Day(), c.Month()
		prev = -1
		prevMon := mon
		switch {
		case !s.domUnspecified && s.dowUnspecified:
			switch {
			case s.lastDayOfMonth && !s.nearestWeekday:
				prev = day
				day = lastDayOfMonth(mon, c.Year()) - s.lastDayOffset
				if prev > day {
					mon++
					if mon > 12 {
						mon = 1
						prevMon = 3333 // makes the mon != prevMon test below true
						c.AddYear(1)
					}
					day = 1
				}
			case s.lastDayOfMonth: // and nearestWeekday
				prev = day
				day = lastDayOfMonth(mon, c.Year()) - s.lastDayOffset
				var passed bool
				if day, passed = nearestWeekday(zone, c.Year(), mon, day, hr, minute, sec, start); passed {
					day = 1
					mon++
				}
			case s.nearestWeekday:
				prev = day
				var passed bool
				if day, passed = nearestWeekday(zone, c.Year(), mon, s.daysOfMonth.first(), hr, minute, sec, start); passed {
					day = s.daysOfMonth.first()
					mon++
				}
			default:
				if v, ok := s.daysOfMonth.next(day); ok {
					prev, day = day, v
					if day > lastDayOfMonth(mon, c.Year()) {
						day = s.daysOfMonth.first()
						mon++
					}
				} else {
					day = s.daysOfMonth.first()
					mon++
				}
			}
			if day != prev || mon != prevMon {
				c.SetSecond(0)
				c.SetMinute(0)
				c.SetHour(0)
				c.SetDay(day)
				c.SetMonth(mon)
				continue
			}

		case s.lastDayOfWeek:
			dow := s.daysOfWeek.first()
			daysToAdd := daysUntilWeekday(c.Weekday(), dow)
			last := lastDayOfMonth(mon, c.Year())
			if day+daysToAdd > last { // the last one of this month has passed
				c.startOfMonth(mon + 1)
				continue
			}
			for day+daysToAdd+7 <= last {
				daysToAdd += 7
			}
			day += daysToAdd
			if daysToAdd > 0 {
				c.startOfDay(mon, day)
				continue
			}

		case s.nthDayOfWeek != 0:
			dow := s.daysOfWeek.first()
			daysToAdd := daysUntilWeekday(c.Weekday(), dow)
			dayShifted := daysToAdd > 0
			day += daysToAdd
			weekOfMonth := day / 7
			if day%7 > 0 {
				weekOfMonth++
			}
			daysToAdd = (s.nthDayOfWeek - weekOfMonth) * 7
			day += daysToAdd
			if daysToAdd < 0 || day > lastDayOfMonth(mon, c.Year()) {
				c.startOfMonth(mon + 1)
				continue
			}
			if daysToAdd > 0 || dayShifted {
				c.startOfDay(mon, day)
				continue
			}

		default:
			cDow := c.Weekday()
			dow := s.daysOfWeek.first()
			if v, ok := s.daysOfWeek.next(cDow); ok {
				dow = v
			}
			daysToAdd := daysUntilWeekday(cDow, dow)
			if day+daysToAdd > lastDayOfMonth(mon, c.Year()) {
				c.startOfMonth(mon + 1)
				continue
			}
			if daysToAdd > 0 {
				c.startOfDay(mon, day+daysToAdd)
				continue
			}
		}
		c.SetDay(day)

		// Month.
		mon = c.Month()
		year := c.Year()
		prev = -1
		if year > maxYear {
			return 0, false
		}
		if v, ok := s.months.next(mon); ok {
			prev, mon = mon, v
		} else {
			mon = s.months.first()
			year++
		}
		if mon != prev {
			c.SetSecond(0)
			c.SetMinute(0)
			c.SetHour(0)
			c.SetDay(1)
			c.SetMonth(mon)
			c.SetYear(year)
			continue
		}
		c.SetMonth(mon)

		// Year.
		year = c.Year()
		prev = -1
		v, ok := s.years.next(year - minYear)
		if !ok {
			return 0, false // ran out of years
		}
		prev, year = year, v+minYear
		if year != prev {
			c.SetSecond(0)
			c.SetMinute(0)
			c.SetHour(0)
			c.SetDay(1)
			c.SetMonth(1)
			c.SetYear(year)
			continue
		}
		c.SetYear(year)
		return c.Unix(), true
	}
	return 0, false
}

// startOfMonth moves to 00:00:00 on the first of month (1-12, or 13 for January of the next year).
func (c *calendar) startOfMonth(month int) {
	c.startOfDay(month, 1)
}

// startOfDay moves to 00:00:00 on a day of a month of the current year; both may be out of range.
func (c *calendar) startOfDay(month, day int) {
	c.SetSecond(0)
	c.SetMinute(0)
	c.SetHour(0)
	c.SetDay(day)
	c.SetMonth(month)
}

// daysUntilWeekday returns how many days from weekday from to the next weekday to (both Java numbers, 1 is
// Sunday): 0 when they are the same.
func daysUntilWeekday(from, to int) int {
	switch {
	case from < to:
		return to - from
	case from > to:
		return to + 7 - from
	}
	return 0
}

// nearestWeekday is the "W" rule as Quartz computes it: the weekday nearest day of month in year, not
// leaving the month at its start (Saturday the 1st gives Monday the 3rd) or its end (Sunday the last day
// gives Friday). passed reports whether that day at hour:minute:sec is before start, so that the month is over.
// day may be past the end of the month (31W in April), as in Quartz: the day of the week is
// then that of the date it rolls over to. Quartz compares with a calendar that keeps the current
// millisecond; ejserver takes it as zero, which is what Quartz does for input in whole seconds.
func nearestWeekday(zone *zoneCache, year, month, day, hour, minute, sec int, start int64) (nearest int, passed bool) {
	tcal := calendar{zone: zone, year: year, month: month, day: day, stale: true}
	last := lastDayOfMonth(month, year)
	switch dow := tcal.Weekday(); {
	case dow == 7 && day == 1: // Saturday
		day += 2
	case dow == 7:
		day--
	case dow == 1 && day == last: // Sunday
		day -= 2
	case dow == 1:
		day++
	}
	tcal.SetSecond(sec)
	tcal.SetMinute(minute)
	tcal.SetHour(hour)
	tcal.SetDay(day)
	tcal.SetMonth(month)
	return day, tcal.Unix() < start
}
