package cronexpr_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/ejserver/ejserver/internal/cronexpr"
)

func Example() {
	loc, err := cronexpr.LoadLocation("GMT+8") // a job's timeZone, as ElasticJob users write it
	if err != nil {
		panic(err)
	}
	const expr = "0 15 10 L * ?"
	s, err := cronexpr.Parse(expr, loc)
	if err != nil {
		panic(err)
	}
	fmt.Println(cronexpr.Describe(expr))
	t := time.Date(2026, time.January, 1, 0, 0, 0, 0, loc)
	for range 3 {
		t = s.Next(t)
		fmt.Println(t)
	}
	// Output:
	// at 10:15 on the last day of every month
	// 2026-01-31 10:15:00 +0800 GMT+08:00
	// 2026-02-28 10:15:00 +0800 GMT+08:00
	// 2026-03-31 10:15:00 +0800 GMT+08:00
}

func ExampleParse_error() {
	_, err := cronexpr.Parse("0 0 25 * * ?", time.UTC)
	var pe *cronexpr.ParseError
	if errors.As(err, &pe) {
		fmt.Println(pe.Field)
	}
	fmt.Println(err)
	// Output:
	// hour
	// cron "0 0 25 * * ?": hour "25": value out of range 0-23
}

func ExampleParse_unix() {
	loc, err := cronexpr.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	s, err := cronexpr.Parse("0 9 * * 1-5", loc) // five fields: Unix cron, Sunday is 0 or 7
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Next(time.Date(2026, time.November, 20, 12, 0, 0, 0, loc)))
	// Output:
	// 2026-11-23 09:00:00 -0500 EST
}

func ExampleDescribe() {
	for _, expr := range []string{"0/5 * * * * ?", "0 0 12 ? * 6#3", "0 0 12 15W * ?", "*/15 9-17 * * 1-5", "@every 1h30m"} {
		fmt.Println(cronexpr.Describe(expr))
	}
	// Output:
	// every 5 seconds
	// at 12:00 on the third Friday of every month
	// at 12:00 on the weekday nearest the 15th of every month
	// every 15 minutes from 09:00 through 17:59 on Monday through Friday
	// every 90 minutes
}
