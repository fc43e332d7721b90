package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ejserver/ejserver/client"
)

const calendarUsage = `Usage:
  ejserver calendar list                the cluster's calendars
  ejserver calendar get NAME            one calendar
  ejserver calendar apply -f FILE       create the file's calendars, replace those that exist (If-Match)
  ejserver calendar delete NAME         remove a calendar (refused while jobs name it)

FILE is YAML (or JSON): one calendar or a list, e.g.
  - name: cn-holidays
    timeZone: Asia/Shanghai
    dates: [2026-01-01]
    ranges: [{from: 2026-10-01, to: 2026-10-07}]
    annual: [12-25]
Jobs name calendars in excludeCalendars (no fires on those days) or includeCalendars (fires only on them).

Every command takes --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and -o table|json.
`

// calendarCmd is `ejserver calendar ...`.
func calendarCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, calendarUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb, rest := args[0], args[1:]
	if code, handled := calendarObject.verb(verb, rest, stdout, stderr); handled {
		return code
	}
	switch verb {
	case "list":
		k := newCLI("calendar list", "calendar list [flags]", stdout, stderr)
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			l, err := k.c.ListCalendars(ctx)
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(l)
			}
			rows := [][]string{}
			for _, c := range l.Items {
				days := len(c.Dates)
				rows = append(rows, []string{c.Name, orDash(c.TimeZone), fmt.Sprint(days), fmt.Sprint(len(c.Ranges)),
					fmt.Sprint(len(c.Annual)), orDash(c.Description)})
			}
			k.table("NAME\tTIME ZONE\tDATES\tRANGES\tANNUAL\tDESCRIPTION", rows)
			return nil
		})
	}
	fmt.Fprintf(stderr, "ejserver calendar: unknown command %q\n\n%s", verb, calendarUsage)
	return 2
}

// calendarApply creates each calendar of the file that is missing and replaces each that exists (If-Match).
func (k *cli) calendarApply(ctx context.Context, file string) error {
	bodies, names, err := readChannelsFile(file) // the same shape: one object with a name, or a list of them
	if err != nil {
		return err
	}
	var out []map[string]string
	for i, body := range bodies {
		action := "created"
		cur, err := k.c.GetCalendar(ctx, names[i])
		switch {
		case client.IsNotFound(err):
			_, err = k.c.CreateCalendar(ctx, body)
		case err == nil:
			action = "replaced"
			_, err = k.c.ReplaceCalendar(ctx, names[i], body, cur.ETag)
		}
		if err != nil {
			return fmt.Errorf("calendar %s: %w", names[i], err)
		}
		out = append(out, map[string]string{"calendar": names[i], "action": action})
		if *k.output != "json" {
			fmt.Fprintf(k.stdout, "%s calendar %s\n", action, names[i])
		}
	}
	if *k.output == "json" {
		return k.json(out)
	}
	return nil
}

// steerJobCmd serves `ejserver job pause|resume|next`; ok is false for the other job verbs.
func steerJobCmd(args []string, stdout, stderr io.Writer) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "pause":
		k := newCLI("job pause", "job pause NAME --note WHY [flags]", stdout, stderr)
		note := k.fs.String("note", "", "why (shown with who paused it in the API and console)")
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			if err := k.c.PauseJob(ctx, a[0], *note); err != nil {
				return err
			}
			return k.say(map[string]string{"paused": a[0], "note": *note}, "paused job %s: scheduled fires are skipped until resume (manual triggers still run)\n", a[0])
		}), true
	case "resume":
		k := newCLI("job resume", "job resume NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			if err := k.c.ResumeJob(ctx, a[0]); err != nil {
				return err
			}
			return k.say(map[string]string{"resumed": a[0]}, "resumed job %s\n", a[0])
		}), true
	case "next":
		k := newCLI("job next", "job next NAME [--count N] [flags]", stdout, stderr)
		count := k.fs.Int("count", 5, "how many fires, 1-100")
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			n, err := k.c.JobNextFires(ctx, a[0], *count)
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(n)
			}
			if n.Pause != nil {
				fmt.Fprintf(k.stdout, "paused by %s at %s: %s\n", n.Pause.By, n.Pause.At.Format(time.RFC3339), n.Pause.Note)
			}
			if n.Ended != "" {
				fmt.Fprintf(k.stdout, "schedule ended: %s\n", n.Ended)
			}
			if n.RemainingFires != nil {
				fmt.Fprintf(k.stdout, "remaining fires: %d\n", *n.RemainingFires)
			}
			lines := make([]string, len(n.Next))
			for i, t := range n.Next {
				lines[i] = t.Format(time.RFC3339)
			}
			if len(lines) > 0 {
				fmt.Fprintln(k.stdout, strings.Join(lines, "\n"))
			}
			return nil
		}), true
	}
	return 0, false
}

// calendarObject serves `ejserver calendar get|apply|delete`.
var calendarObject = namedObject{kind: "calendar", plural: "calendars",
	get:    func(ctx context.Context, k *cli, name string) (any, error) { return k.c.GetCalendar(ctx, name) },
	apply:  func(ctx context.Context, k *cli, file string) error { return k.calendarApply(ctx, file) },
	remove: func(ctx context.Context, k *cli, name string) error { return k.c.DeleteCalendar(ctx, name) },
}
