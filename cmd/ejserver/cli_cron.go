package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ejserver/ejserver/client"
)

// cronCmd is `ejserver cron next EXPR`.
func cronCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "Usage:\n  ejserver cron next 'EXPR' [--tz ZONE] [--count N] [--from RFC3339] [--exclude-calendars A,B] [--include-calendars C]\n      the next fire times, from the server's scheduler code, with those calendars applied as a job's\n"
	if len(args) == 0 || args[0] != "next" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	k := newCLI("cron next", "cron next 'EXPR' [flags]", stdout, stderr)
	tz := k.fs.String("tz", "", "time zone: IANA name or GMT+8 form (default UTC)")
	count := k.fs.Int("count", 5, "how many, 1-100")
	from := k.fs.String("from", "", "start at this RFC 3339 time (default now)")
	exclude := k.fs.String("exclude-calendars", "", "skip the days of these calendars (comma-separated names)")
	include := k.fs.String("include-calendars", "", "fire only on the days of these calendars (comma-separated names)")
	return k.run(args[1:], 1, func(ctx context.Context, a []string) error {
		q := client.CronQuery{Cron: a[0], TimeZone: *tz, Count: *count,
			ExcludeCalendars: names(*exclude), IncludeCalendars: names(*include)}
		if *from != "" {
			t, err := time.Parse(time.RFC3339, *from)
			if err != nil {
				return fmt.Errorf("--from: %q is not an RFC 3339 time (2026-11-21T10:00:00Z)", *from)
			}
			q.From = t
		}
		p, err := k.c.CronNext(ctx, q)
		if err != nil {
			return err
		}
		if *k.output == "json" {
			return k.json(p)
		}
		if p.Description != "" {
			fmt.Fprintf(k.stdout, "%s (%s)\n", p.Description, p.TimeZone)
		}
		for _, t := range p.Next {
			fmt.Fprintln(k.stdout, t.Format(time.RFC3339))
		}
		if len(p.Next) == 0 {
			fmt.Fprintln(k.stdout, "never fires")
		}
		return nil
	})
}

// names splits a comma-separated flag into its names, blanks dropped.
func names(s string) []string {
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
