// Package cronexpr parses the cron expressions of ejserver jobs and computes their fire times. It is pure:
// no goroutines, no clock; a Schedule is immutable and safe for concurrent use.
//
// Three forms are accepted (Parse):
//
//   - 6 or 7 fields: Quartz 2.3.2, as ElasticJob users write it: second minute hour day-of-month month
//     day-of-week [year]. Day of week is 1-7 with Sunday 1, or SUN-SAT; month 1-12 or JAN-DEC; year
//     1970-2099. Values, ranges (a range written high-low wraps: 22-2, NOV-FEB), steps (0/5, */5, 10-40/10)
//     and lists, plus "?" (no value) in exactly one day field, L, L-n, LW, L-nW and nW in day-of-month, and
//     L (Saturday), nL (the last weekday n of the month) and n#k (the k-th weekday n) in day-of-week. The one
//     extension: "*" in both day fields means every day.
//   - 5 fields: Unix cron, minute hour day-of-month month day-of-week, evaluated by robfig/cron/v3; day of
//     week 0-7 with Sunday 0 or 7, and the Vixie rule: with both day fields restricted, either matches.
//   - Descriptors: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>.
//
// # Quartz, exactly
//
// A Quartz schedule's Next is Quartz's own algorithm (CronExpression.getTimeAfter) over a reproduction of the
// java.util.GregorianCalendar behaviour it relies on, and testdata holds over 3,000 vectors computed by
// Quartz itself that every build replays. So ejserver keeps Quartz's readings where they surprise:
// JAN-MAR/2 is January to March (Quartz ignores a step after a name), L alone in day-of-week is Saturday,
// 31W in a 30-day month looks at the 1st of the next month, 0-59/100 is minute 0.
//
// What Quartz accepts but mishandles is an error here, with the field named: characters Quartz silently
// skips (MONDAY, 5x, *x, an empty list element, an eighth field), a step of 0, L outside the day fields
// (Quartz then throws on every Next), W after a range or list, # or L in a list, 0W, a weekday outside 1-7
// before # (Quartz loops forever on 9#3), and L-nW with n over 27 (Quartz loops forever in February).
// Quartz accepts any year and fires up to 100 years from now; here the year field is 1970-2099 and Next
// returns the zero time after 2099.
//
// # Time zones and DST
//
// LoadLocation takes IANA names and Java's ids ("GMT+8", "GMT+08:00", "GMT-0530", "CTT"); it rejects an id
// Java would silently read as GMT. Fire times follow Quartz:
//
//   - A fire time in a spring-forward gap is skipped: on the day New York jumps from 02:00 to 03:00,
//     0 30 2 * * ? does not fire and 0 30 * * * ? fires at 01:30, then 03:30. (In a gap shorter than an hour,
//     such as Lord Howe's 30 minutes, a time can come out where the gap maps it: 0 0/15 2 * * ? fires at
//     02:30 and 02:45 that day.)
//   - In a fall-back repeat, Quartz reads a wall-clock time as the second pass, in standard time: a daily
//     01:30 fires once, at 01:30 standard time, and a schedule asked about an instant in the first pass
//     answers in the second. So for instants in a first pass Next is not monotonic (the vectors pin this).
//
// Unix expressions skip gap times too (robfig's behaviour). In a fall-back repeat robfig would fire twice;
// like Vixie cron, a schedule with a fixed minute and hour fires only in the first pass, and one whose
// minute or hour field starts with "*" fires in both.
//
// # Next
//
// Next(t) is the first fire time strictly after t, in the schedule's location, or the zero time when there is
// none (0 0 0 31 2 ? never fires; Unix schedules look five years ahead, as robfig does). Fire times are whole
// seconds. The search is bounded. Describe gives the English the console shows.
package cronexpr
