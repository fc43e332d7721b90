package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ejserver/ejserver/client"
)

const executionUsage = `Usage:
  ejserver execution get ID                          one execution: where, when, how it ended, an async item's lease
  ejserver execution list [--job NAME] [--item N] [--failed|--succeeded] [--running] [--limit N] [--cursor C]
                                                     executions of every job (or one), newest first

They take --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and -o table|json (--json).
`

// executionCmd is `ejserver execution ...`.
func executionCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, executionUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "get":
		k := newCLI("execution get", "execution get ID [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error { return k.executionGet(ctx, a[0]) })
	case "list":
		k := newCLI("execution list", "execution list [--job NAME] [--item N] [--failed|--succeeded] [--running] [--limit N] [flags]", stdout, stderr)
		job := k.fs.String("job", "", "only this job's executions")
		item := k.fs.Int("item", -1, "only this item's executions")
		failed := k.fs.Bool("failed", false, "only executions that ended in failure")
		succeeded := k.fs.Bool("succeeded", false, "only executions that ended in success")
		running := k.fs.Bool("running", false, "only executions not ended yet (picked from the newest "+strconv.Itoa(runningScan)+")")
		limit := k.fs.Int("limit", 20, "how many, 1-500")
		cursor := k.fs.String("cursor", "", "nextCursor of a previous page (-o json shows it)")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			f := client.ExecutionFilter{Job: *job, Limit: *limit, Cursor: *cursor}
			switch {
			case *failed && *succeeded:
				return usageErrorf("--failed and --succeeded exclude each other")
			case *running && (*failed || *succeeded):
				return usageErrorf("--running excludes --failed and --succeeded: a running execution has not ended")
			case *limit < 1 || *limit > 500:
				return usageErrorf("--limit: must be between 1 and 500, got %d", *limit)
			case *failed || *succeeded:
				f.Success = succeeded
			}
			if given(k.fs, "item") {
				if *item < 0 {
					return usageErrorf("--item: %d is not an item number", *item)
				}
				f.Item = item
			}
			return k.executionList(ctx, f, *running)
		})
	}
	fmt.Fprintf(stderr, "ejserver execution: unknown command %q\n\n%s", verb, executionUsage)
	return 2
}

// given reports whether the flag was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (k *cli) executionGet(ctx context.Context, id string) error {
	e, err := k.c.Execution(ctx, id)
	if err != nil {
		return err
	}
	if *k.output == "json" {
		return k.json(e)
	}
	rows := [][]string{
		{"id", e.ID}, {"job", e.JobName}, {"item", fmt.Sprintf("%d of %d", e.ShardingItem, e.ShardingTotalCount)},
		{"source", e.Source}, {"instance", orDash(e.InstanceID)}, {"server", orDash(e.IP)},
		{"scheduled", fmtTime(&e.ScheduledAt)}, {"started", fmtTime(&e.StartedAt)}, {"completed", fmtTime(&e.CompletedAt)},
		{"result", resultOf(*e)}, {"duration", k.durationOf(*e)}, {"attempts", strconv.Itoa(e.Attempts)},
	}
	if e.StatusCode != 0 {
		rows = append(rows, []string{"HTTP status", strconv.Itoa(e.StatusCode)})
	}
	if e.FailureCause != "" {
		rows = append(rows, []string{"failure cause", oneLine(e.FailureCause)})
	}
	if e.Permanent {
		rows = append(rows, []string{"permanent", "true (retrying cannot cure it)"})
	}
	if e.Async {
		rows = append(rows, []string{"async", "true (the receiver answered 202 and reports through callbacks)"},
			[]string{"state", orDash(e.State)})
		if e.Progress != nil {
			rows = append(rows, []string{"progress", strconv.Itoa(*e.Progress) + "%"})
		}
		rows = append(rows, []string{"message", orDash(oneLine(e.Message))}, []string{"last heartbeat", fmtTime(&e.HeartbeatAt)})
		if e.Running() {
			rows = append(rows, []string{"lease expires", fmtTime(&e.LeaseExpiresAt)})
		}
	}
	k.table("FIELD\tVALUE", rows)
	for _, b := range []struct{ name, text string }{{"response excerpt", e.ResponseExcerpt}, {"output", e.Output}} {
		if b.text != "" {
			fmt.Fprintf(k.stdout, "\n%s:\n%s\n", b.name, indent(printable(b.text)))
		}
	}
	return nil
}

// runningScan bounds how many of the newest executions `execution list --running` looks at: the API has no
// filter for executions that have not ended, so they are picked out here, page by page.
var runningScan = 10000

func (k *cli) executionList(ctx context.Context, f client.ExecutionFilter, running bool) error {
	var list *client.ExecutionList
	scanned, want := 0, f.Limit
	if running {
		f.Limit = 500
		list = &client.ExecutionList{Items: []client.Execution{}}
	scan:
		for {
			page, err := k.c.Executions(ctx, f)
			if err != nil {
				return err
			}
			scanned += len(page.Items)
			for _, e := range page.Items {
				if e.Running() {
					list.Items = append(list.Items, e)
					if len(list.Items) == want {
						break scan
					}
				}
			}
			if page.NextCursor == "" {
				break
			}
			if f.Cursor = page.NextCursor; scanned >= runningScan {
				list.NextCursor = page.NextCursor // the next executions to look at
				break
			}
		}
	} else {
		var err error
		if list, err = k.c.Executions(ctx, f); err != nil {
			return err
		}
	}
	if *k.output == "json" {
		if list.Items == nil {
			list.Items = []client.Execution{}
		}
		return k.json(list)
	}
	rows := make([][]string, 0, len(list.Items))
	for _, e := range list.Items {
		code := "-"
		if e.StatusCode != 0 {
			code = strconv.Itoa(e.StatusCode)
		}
		note := e.FailureCause
		if note == "" {
			note = e.Message
		}
		rows = append(rows, []string{e.ID, e.JobName, strconv.Itoa(e.ShardingItem), fmtTime(&e.StartedAt), e.Source,
			resultOf(e), code, strconv.Itoa(e.Attempts), k.durationOf(e), orDash(clip(oneLine(note), 60))})
	}
	k.table("ID\tJOB\tITEM\tSTARTED\tSOURCE\tRESULT\tHTTP\tATTEMPTS\tDURATION\tNOTE", rows)
	switch {
	case running && list.NextCursor != "":
		fmt.Fprintf(k.stdout, "(looked at the newest %d executions; more: --running --cursor %s)\n", scanned, list.NextCursor)
	case running && len(list.Items) == want:
		fmt.Fprintf(k.stdout, "(the first %d running; --limit shows more)\n", want)
	case list.NextCursor != "":
		fmt.Fprintf(k.stdout, "(more: --cursor %s)\n", list.NextCursor)
	}
	return nil
}

// resultOf is an execution's outcome in a word: an async item's state (with its progress while it runs),
// else running, ok or FAILED.
func resultOf(e client.Execution) string {
	switch {
	case e.State != "" && e.Running() && e.Progress != nil:
		return fmt.Sprintf("%s %d%%", e.State, *e.Progress)
	case e.State != "":
		return e.State
	case e.Running():
		return "running"
	case e.Success:
		return "ok"
	}
	return "FAILED"
}

// durationOf is how long the execution took, or has been running so far.
func (k *cli) durationOf(e client.Execution) string {
	if e.Running() {
		return k.now().Sub(e.StartedAt).Round(time.Second).String() + " so far"
	}
	return (time.Duration(e.DurationMs) * time.Millisecond).String()
}

// printable replaces control characters other than newline and tab: messages and output come from receivers
// and must not drive the terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(printable(s)), " ")
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
