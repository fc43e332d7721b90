package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ejserver/ejserver/client"
)

const executionUsage = `Usage:
  ejserver execution get ID                          one execution: where, when, how it ended, an async item's lease
  ejserver execution list [--job NAME] [--fire TIME] [--item N] [--failed|--succeeded] [--running] [--limit N] [--cursor C]
                                                     executions of every job (or one), newest first
  ejserver execution heartbeat --callback-url URL --token TOKEN [--progress N] [--message M]
                                                     an accepted item is still being worked on: renews its lease
  ejserver execution complete --callback-url URL --token TOKEN --status success|failure [--message M]
                                [--output O|--output-file F] [--has-more]
                                                     ends an accepted item's attempt

get and list take --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and -o table|json (--json).

heartbeat and complete are for receivers that answered an item 202 Accepted. They send the item's
callbackToken (--token, else EJ_CALLBACK_TOKEN; never the API token, and never printed) to its callbackUrl
(--callback-url, else EJ_CALLBACK_URL), whichever peer that names. Exit status: 0 done (200); 1 refused for
good (4xx: the problem on stderr, e.g. 409 lease-expired); 2 bad usage; 3 not known to have arrived (no
answer, 408, 429, 5xx): send it again, a repeated completion is answered 200.
`

// executionCmd is `ejserver execution ...`.
func executionCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
		k := newCLI("execution list", "execution list [--job NAME] [--fire TIME] [--item N] [--failed|--succeeded] [--running] [--limit N] [flags]", stdout, stderr)
		job := k.fs.String("job", "", "only this job's executions")
		item := k.fs.Int("item", -1, "only this item's executions")
		failed := k.fs.Bool("failed", false, "only executions that ended in failure")
		succeeded := k.fs.Bool("succeeded", false, "only executions that ended in success")
		running := k.fs.Bool("running", false, "only executions not ended yet (picked from the newest "+strconv.Itoa(runningScan)+")")
		limit := k.fs.Int("limit", 20, "how many, 1-500")
		cursor := k.fs.String("cursor", "", "nextCursor of a previous page (-o json shows it)")
		fire := k.fs.String("fire", "", "only one fire's items: its scheduled time (RFC 3339)")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			f := client.ExecutionFilter{Job: *job, Limit: *limit, Cursor: *cursor}
			if *fire != "" {
				t, err := time.Parse(time.RFC3339Nano, *fire)
				if err != nil {
					return usageErrorf("--fire: %q is not an RFC 3339 time", *fire)
				}
				f.ScheduledAt = t
			}
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
	case "heartbeat", "complete":
		return callbackCmd(verb, rest, stdin, stdout, stderr)
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

// maxOutput is the contract's bound on a completion's output (docs/long-running.md: 4096 characters). The
// CLI keeps the last maxOutput bytes, which is within the bound however characters are counted.
const maxOutput = 4096

// callbackCmd is `ejserver execution heartbeat|complete`.
func callbackCmd(verb string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := "execution heartbeat --callback-url URL --token TOKEN [--progress N] [--message M] [flags]"
	if verb == "complete" {
		usage = "execution complete --callback-url URL --token TOKEN --status success|failure [--message M] [--output O|--output-file F] [--has-more] [flags]"
	}
	k := newBareCLI("execution "+verb, usage, stdout, stderr)
	callbackURL := k.str("callback-url", "", "the callbackUrl of the item's body", "EJ_CALLBACK_URL")
	token := k.str("token", "", "the callbackToken of the item's body (not an API token; never printed)", "EJ_CALLBACK_TOKEN")
	k.redact(token)
	k.problemTypes = true
	k.exitCode = callbackExit
	message := k.fs.String("message", "", "a message for the execution's record (heartbeat: up to 1024 characters)")
	var progress *int
	var status, output, outputFile *string
	var hasMore *bool
	if verb == "heartbeat" {
		progress = k.fs.Int("progress", 0, "progress, 0-100 (not sent unless given)")
	} else {
		status = k.fs.String("status", "", "success or failure (required)")
		output = k.fs.String("output", "", "an excerpt of the work's output (its last 4096 bytes are sent)")
		outputFile = k.fs.String("output-file", "", "send the end of this file (- for stdin) as the output (its last 4096 bytes)")
		hasMore = k.fs.Bool("has-more", false, "DATAFLOW with streamingProcess: POST the item again with the next iteration")
	}
	return k.run(args, 0, func(ctx context.Context, _ []string) error {
		if *callbackURL == "" || *token == "" {
			return usageErrorf("--callback-url [EJ_CALLBACK_URL] and --token [EJ_CALLBACK_TOKEN] are required")
		}
		var lease *client.LeaseView
		var err error
		if verb == "heartbeat" {
			req := client.HeartbeatRequest{Message: *message}
			if given(k.fs, "progress") {
				if *progress < 0 || *progress > 100 {
					return usageErrorf("--progress: must be between 0 and 100, got %d", *progress)
				}
				req.Progress = progress
			}
			lease, err = k.c.Heartbeat(ctx, *callbackURL, *token, req)
		} else {
			req := client.CompleteRequest{Status: *status, Message: *message, HasMore: *hasMore}
			if *status != "success" && *status != "failure" {
				return usageErrorf("--status: must be success or failure, got %q", *status)
			}
			if req.Output, err = k.completionOutput(*output, *outputFile, stdin); err != nil {
				return err
			}
			lease, err = k.c.Complete(ctx, *callbackURL, *token, req)
		}
		if errors.Is(err, client.ErrInvalidCallback) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		if *k.output == "json" {
			return k.json(lease)
		}
		line := fmt.Sprintf("%s %s (job %s, item %d, attempt %d)", lease.State, lease.ExecutionID, lease.JobName, lease.ShardingItem, lease.Attempt)
		if lease.Progress != nil {
			line += fmt.Sprintf(", progress %d%%", *lease.Progress)
		}
		if lease.Running() && !lease.LeaseExpiresAt.IsZero() {
			line += ", lease until " + fmtTime(&lease.LeaseExpiresAt)
		}
		fmt.Fprintln(k.stdout, line)
		if verb == "heartbeat" && !lease.Running() {
			fmt.Fprintf(k.stderr, "ejserver: the item is %s, no longer RUNNING: stop working on it\n", lease.State)
		}
		return nil
	})
}

// completionOutput is the output to send: --output or the end of --output-file, cut to its last maxOutput
// bytes (a note on stderr says so), as valid UTF-8.
func (k *cli) completionOutput(output, file string, stdin io.Reader) (string, error) {
	if output != "" && file != "" {
		return "", usageErrorf("--output and --output-file exclude each other")
	}
	size := len(output)
	if file != "" {
		r := stdin
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return "", usageErrorf("--output-file: %v", err)
			}
			defer f.Close()
			r = f
		}
		var err error
		if output, size, err = readTail(r, maxOutput+utf8.UTFMax); err != nil {
			return "", usageErrorf("--output-file: %v", err)
		}
	}
	kept := lastBytes(strings.ToValidUTF8(output, "\uFFFD"), maxOutput)
	if len(kept) < size {
		fmt.Fprintf(k.stderr, "ejserver: the output has %d bytes; its last %d are sent\n", size, len(kept))
	}
	return kept, nil
}

// readTail reads r to its end and returns its last n bytes and its size.
func readTail(r io.Reader, n int) (string, int, error) {
	buf := make([]byte, 0, 2*n+32<<10)
	size := 0
	for {
		if len(buf) > n {
			buf = buf[:copy(buf, buf[len(buf)-n:])]
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf, size = buf[:len(buf)+m], size+m
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", 0, err
		}
	}
	if len(buf) > n {
		buf = buf[len(buf)-n:]
	}
	return string(buf), size, nil
}

// lastBytes returns the longest suffix of s of at most n bytes that starts on a character.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// callbackExit is the exit status of a callback that failed: 1 when the server refused it for good, 3 when
// it may not have arrived or may succeed later.
func callbackExit(err error) int {
	var e *client.Error
	if errors.As(err, &e) && e.Status >= 400 && e.Status < 500 && e.Status != 408 && e.Status != 429 {
		return 1
	}
	return 3
}

// callbackTokenPattern matches callback tokens (ejcb1.{attempt}.{mac}) wherever they would be printed.
var callbackTokenPattern = regexp.MustCompile(`ejcb1\.[0-9]+\.[A-Za-z0-9_\-+/=.]*`)

// redact keeps the callback token out of everything the command prints: the value of secret, and anything
// shaped like a callback token (one given to the wrong flag, say).
func (k *cli) redact(secret *string) {
	k.stdout = redactor{k.stdout, secret}
	k.stderr = redactor{k.stderr, secret}
	k.fs.SetOutput(k.stderr)
}

type redactor struct {
	w      io.Writer
	secret *string
}

func (r redactor) Write(p []byte) (int, error) {
	s := string(p)
	if *r.secret != "" {
		s = strings.ReplaceAll(s, *r.secret, "[callback token]")
	}
	s = callbackTokenPattern.ReplaceAllString(s, "[callback token]")
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
