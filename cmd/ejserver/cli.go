package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/client"
)

// cli is one run of a client command (`ejserver job ...`, `server ...`, `instance ...`, `cron ...`,
// `execution ...`): it talks to a running ejserver through the Go client.
type cli struct {
	stdout, stderr io.Writer
	fs             *flag.FlagSet
	envs           map[string]string
	// server and token are the API's; nil for the callback verbs, which talk to the URL they are given.
	server, token *string
	output        *string
	// caFile, clientCert and clientKey are for an API on HTTPS.
	caFile, clientCert, clientKey *string
	jsonFlag                      *bool
	timeout                       *time.Duration
	c                             *client.Client
	// exitCode maps the error of a command that ran to its exit code (nil: 1).
	exitCode func(error) int
	// problemTypes adds the problem's type to a printed refusal, for scripts that tell refusals apart.
	problemTypes bool
	now          func() time.Time
}

// newCLI is a client command of the API: --server, --token and the flags of newBareCLI.
func newCLI(name, usage string, stdout, stderr io.Writer) *cli {
	k := newBareCLI(name, usage, stdout, stderr)
	k.server = k.str("server", "http://127.0.0.1:8080", "ejserver's address (any peer)", "EJ_SERVER")
	k.token = k.str("token", "", "API bearer token (default: EJ_TOKEN, else EJ_API_TOKEN)", "EJ_TOKEN")
	return k
}

// newBareCLI is a client command with the output and timeout flags only.
func newBareCLI(name, usage string, stdout, stderr io.Writer) *cli {
	fs := flag.NewFlagSet("ejserver "+name, flag.ContinueOnError)
	k := &cli{stdout: stdout, stderr: stderr, fs: fs, envs: map[string]string{}, now: time.Now}
	fs.SetOutput(stderr)
	k.output = k.str("o", "table", "output: table or json", "EJ_OUTPUT")
	k.jsonFlag = fs.Bool("json", false, "the same as -o json")
	k.envs["timeout"] = "EJ_TIMEOUT"
	k.timeout = fs.Duration("timeout", 30*time.Second, "bound on each API request")
	k.caFile = k.str("ca-file", "", "PEM CA bundle that verifies an https:// server's certificate (default: the system's roots)", "EJ_CA_FILE")
	k.clientCert = k.str("client-cert", "", "PEM client certificate, for a server with --tls-client-ca (with -client-key)", "EJ_CLIENT_CERT")
	k.clientKey = k.str("client-key", "", "PEM private key of -client-cert", "EJ_CLIENT_KEY")
	fs.Usage = func() {
		fmt.Fprintf(k.stderr, "Usage: ejserver %s\n\nFlags (before or after the arguments; each also read from the environment variable shown):\n", usage)
		fs.VisitAll(func(fl *flag.Flag) {
			def := ""
			if fl.DefValue != "" && fl.DefValue != "false" {
				def = " (default " + fl.DefValue + ")"
			}
			env := ""
			if e := k.envs[fl.Name]; e != "" {
				env = " [" + e + "]"
			}
			fmt.Fprintf(k.stderr, "  -%s%s%s\n      %s\n", fl.Name, env, def, fl.Usage)
		})
	}
	return k
}

func (k *cli) str(name, def, usage, env string) *string {
	if env != "" {
		k.envs[name] = env
	}
	return k.fs.String(name, def, usage)
}

// parse parses flags given before, between or after the arguments, fills flags not given from their
// environment variables, and returns the arguments.
func (k *cli) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := k.fs.Parse(args); err != nil {
			return nil, err
		}
		args = k.fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	given := map[string]bool{}
	k.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	k.fs.VisitAll(func(fl *flag.Flag) {
		env := k.envs[fl.Name]
		if v := os.Getenv(env); v != "" && env != "" && !given[fl.Name] && err == nil {
			if e := fl.Value.Set(v); e != nil {
				err = fmt.Errorf("environment variable %s=%q for -%s: %v", env, v, fl.Name, e)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if *k.jsonFlag {
		*k.output = "json"
	}
	if *k.output != "table" && *k.output != "json" {
		return nil, fmt.Errorf("-o: must be table or json, got %q", *k.output)
	}
	opts := []client.Option{client.WithTimeout(*k.timeout), client.WithUserAgent("ejserver-cli/" + version)}
	if *k.caFile != "" || *k.clientCert != "" || *k.clientKey != "" {
		tc, err := client.TLSConfig(client.TLSFiles{CAFile: *k.caFile, CertFile: *k.clientCert, KeyFile: *k.clientKey})
		if err != nil {
			return nil, cliTLSError(err)
		}
		opts = append(opts, client.WithTLSConfig(tc))
	}
	if k.server == nil {
		k.c = client.New("", opts...)
		return pos, nil
	}
	if *k.token == "" {
		*k.token = os.Getenv("EJ_API_TOKEN")
	}
	base := *k.server
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	k.c = client.New(base, append(opts, client.WithToken(*k.token))...)
	return pos, nil
}

// usageError is an error of the command line found after parsing: exit 2 and the usage.
type usageError struct{ error }

func usageErrorf(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// run parses args, checks the number of arguments, and runs fn; it maps errors to exit codes: 2 for usage
// (a usageError from fn too), else exitCode's or 1 (API errors print their problem details).
func (k *cli) run(args []string, nargs int, fn func(ctx context.Context, args []string) error) int {
	pos, err := k.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && len(pos) != nargs {
		err = fmt.Errorf("want %d argument(s), got %d", nargs, len(pos))
	}
	if err != nil {
		fmt.Fprintf(k.stderr, "ejserver: %v\n", err)
		k.fs.Usage()
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	if err := fn(ctx, pos); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(k.stderr, "ejserver: %v\n", err)
			k.fs.Usage()
			return 2
		}
		k.fail(err)
		if k.exitCode != nil {
			return k.exitCode(err)
		}
		return 1
	}
	return 0
}

func (k *cli) fail(err error) {
	var e *client.Error
	if errors.As(err, &e) {
		title := e.Title
		if t := client.ProblemType(err); k.problemTypes && t != "" {
			title += " (" + t + ")"
		}
		fmt.Fprintf(k.stderr, "ejserver: %d %s: %s\n", e.Status, title, e.Detail)
		for _, f := range e.Errors[min(1, len(e.Errors)):] {
			fmt.Fprintf(k.stderr, "  also %s: %s\n", f.Field, f.Message)
		}
		if e.Status == 401 && k.token != nil && *k.token == "" {
			fmt.Fprintln(k.stderr, "  (set --token or EJ_TOKEN)")
		}
		return
	}
	fmt.Fprintf(k.stderr, "ejserver: %s\n", strings.TrimPrefix(err.Error(), "ejserver: "))
}

func (k *cli) json(v any) error {
	enc := json.NewEncoder(k.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (k *cli) table(header string, rows [][]string) {
	tw := tabwriter.NewWriter(k.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ints(items []int) string {
	if len(items) == 0 {
		return "-"
	}
	s := make([]string, len(items))
	for i, n := range items {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func parseItems(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--items: %q is not an item number (want e.g. 0,2)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

const jobUsage = `Usage:
  ejserver job list [--q TEXT] [--status S]          jobs with status and next fire time
  ejserver job get NAME                              one job's config and state
  ejserver job apply -f jobs.yaml [--dry-run] [--force]
                                                     create the file's jobs, or replace those that differ
  ejserver job delete NAME
  ejserver job trigger NAME [--param P] [--items 0,2]
  ejserver job disable|enable NAME
  ejserver job pause NAME [--note WHY] | resume NAME  skip scheduled fires (manual triggers run) | fire again
  ejserver job next NAME [--count N]                 the effective next fires (calendars, endAt, pause)
  ejserver job sharding NAME                         each item's owner and state
  ejserver job history NAME [--limit N] [--failed]   recent executions, newest first
  ejserver job dump NAME                             the job's ZooKeeper subtree

Every command takes --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and -o table|json.
`

// jobCmd is `ejserver job ...`.
func jobCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, jobUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if code, ok := steerJobCmd(args, stdout, stderr); ok { // pause, resume, next (cli_calendar.go)
		return code
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "list":
		k := newCLI("job list", "job list [flags]", stdout, stderr)
		q := k.fs.String("q", "", "only jobs whose name, description or label holds this")
		status := k.fs.String("status", "", "only jobs in this status: OK, CRASHED, DISABLED, SHARDING_FLAG")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error { return k.jobList(ctx, *q, *status) })
	case "get":
		k := newCLI("job get", "job get NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error { return k.jobGet(ctx, a[0]) })
	case "apply":
		k := newCLI("job apply", "job apply -f FILE [flags]", stdout, stderr)
		file := k.fs.String("f", "", "the jobs file (YAML list of jobs in the API's JSON shape)")
		dry := k.fs.Bool("dry-run", false, "say what would change, change nothing")
		force := k.fs.Bool("force", false, "replace every existing job of the file, even one that looks unchanged (e.g. to set a secret again)")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			if *file == "" {
				return errors.New("-f FILE is required")
			}
			return k.jobApply(ctx, *file, *dry, *force)
		})
	case "delete":
		k := newCLI("job delete", "job delete NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			if err := k.c.DeleteJob(ctx, a[0]); err != nil {
				return err
			}
			return k.say(map[string]any{"jobName": a[0], "deleted": true}, "deleted job %s\n", a[0])
		})
	case "trigger":
		k := newCLI("job trigger", "job trigger NAME [--param P] [--items 0,2] [flags]", stdout, stderr)
		param := k.fs.String("param", "", "jobParameter for this run only")
		items := k.fs.String("items", "", "only these items, comma-separated")
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			req := client.TriggerRequest{}
			var err error
			if req.Items, err = parseItems(*items); err != nil {
				return err
			}
			k.fs.Visit(func(f *flag.Flag) {
				if f.Name == "param" {
					req.JobParameter = param
				}
			})
			return k.jobTrigger(ctx, a[0], req)
		})
	case "disable", "enable":
		k := newCLI("job "+verb, "job "+verb+" NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			fn := k.c.EnableJob
			if verb == "disable" {
				fn = k.c.DisableJob
			}
			j, err := fn(ctx, a[0])
			if err != nil {
				return err
			}
			return k.say(j, "job %s %sd (status %s)\n", j.JobName, verb, j.Status)
		})
	case "sharding":
		k := newCLI("job sharding", "job sharding NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error { return k.jobSharding(ctx, a[0]) })
	case "history":
		k := newCLI("job history", "job history NAME [--limit N] [--failed] [flags]", stdout, stderr)
		limit := k.fs.Int("limit", 20, "how many, 1-500")
		failed := k.fs.Bool("failed", false, "failed executions only")
		cursor := k.fs.String("cursor", "", "nextCursor of a previous page (-o json shows it)")
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			f := client.ExecutionFilter{Limit: *limit, Cursor: *cursor}
			if *failed {
				f.Success = new(bool)
			}
			return k.jobHistory(ctx, a[0], f)
		})
	case "dump":
		k := newCLI("job dump", "job dump NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			text, err := k.c.Dump(ctx, a[0])
			if err != nil {
				return err
			}
			return k.say(map[string]string{"jobName": a[0], "dump": text}, "%s", text)
		})
	}
	fmt.Fprintf(stderr, "ejserver job: unknown command %q\n\n%s", verb, jobUsage)
	return 2
}

// say prints v as JSON with -o json, else the formatted line.
func (k *cli) say(v any, format string, args ...any) error {
	if *k.output == "json" {
		return k.json(v)
	}
	fmt.Fprintf(k.stdout, format, args...)
	return nil
}

func (k *cli) jobList(ctx context.Context, q, status string) error {
	jobs := []client.Job{}
	for j, err := range k.c.AllJobs(ctx, client.ListJobsOptions{Query: q, Status: status, Limit: 1000}) {
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
	}
	if *k.output == "json" {
		return k.json(jobs)
	}
	rows := make([][]string, 0, len(jobs))
	for _, j := range jobs {
		last := "-"
		if j.Stats != nil {
			last = fmt.Sprintf("%d/%d", j.Stats.LastHourSuccess, j.Stats.LastHourFailure)
		}
		rows = append(rows, []string{j.JobName, j.Status, orDash(j.Cron), strconv.Itoa(j.ShardingTotalCount),
			strconv.Itoa(j.InstanceCount), fmtTime(j.NextFireTime), last})
	}
	k.table("NAME\tSTATUS\tCRON\tITEMS\tINSTANCES\tNEXT FIRE\tLAST HOUR OK/FAILED", rows)
	return nil
}

func (k *cli) jobGet(ctx context.Context, name string) error {
	j, err := k.c.GetJob(ctx, name)
	if err != nil {
		return err
	}
	if *k.output == "json" {
		return k.json(j)
	}
	rows := [][]string{
		{"name", j.JobName}, {"status", j.Status}, {"cron", orDash(j.Cron)}, {"schedule", orDash(j.CronDescription)},
		{"time zone", orDash(j.TimeZone)}, {"items", strconv.Itoa(j.ShardingTotalCount)},
		{"item parameters", orDash(j.ShardingItemParameters)}, {"job parameter", orDash(j.JobParameter)},
		{"webhook", j.Webhook.Method + " " + j.Webhook.URL}, {"signed", strconv.FormatBool(j.Webhook.HasSecret)},
		{"disabled", strconv.FormatBool(j.Disabled)}, {"instances", strconv.Itoa(j.InstanceCount)},
		{"leader", orDash(j.Leader)}, {"next fire", fmtTime(j.NextFireTime)}, {"last fire", fmtTime(j.LastFireTime)},
		{"version", j.ETag()},
	}
	if j.Description != "" {
		rows = append(rows, []string{"description", j.Description})
	}
	for _, p := range j.Problems {
		rows = append(rows, []string{"problem", p})
	}
	k.table("FIELD\tVALUE", rows)
	return nil
}

func (k *cli) jobTrigger(ctx context.Context, name string, req client.TriggerRequest) error {
	res, err := k.c.TriggerJob(ctx, name, req)
	if err != nil {
		return err
	}
	if *k.output == "json" {
		return k.json(res)
	}
	fmt.Fprintf(k.stdout, "%s (trigger %s)\n", res.Message, res.TriggerID)
	rows := make([][]string, 0, len(res.Instances))
	for _, in := range res.Instances {
		rows = append(rows, []string{in.InstanceID, ints(in.Items), ints(in.Running)})
	}
	k.table("INSTANCE\tITEMS\tSTILL RUNNING", rows)
	return nil
}

func (k *cli) jobSharding(ctx context.Context, name string) error {
	list, err := k.c.Sharding(ctx, name)
	if err != nil {
		return err
	}
	if *k.output == "json" {
		return k.json(list)
	}
	rows := make([][]string, 0, len(list.Items))
	for _, it := range list.Items {
		last := "-"
		if o := it.LastOutcome; o != nil {
			last = "ok"
			if !o.Success {
				last = "failed"
			}
			if o.StatusCode != 0 {
				last += " " + strconv.Itoa(o.StatusCode)
			}
			last += " " + o.FinishedAt.Local().Format(time.RFC3339)
		}
		rows = append(rows, []string{strconv.Itoa(it.Item), it.Status, orDash(it.Instance), orDash(it.ServerIP),
			orDash(it.Parameter), orDash(it.Failover), last})
	}
	k.table("ITEM\tSTATUS\tINSTANCE\tSERVER\tPARAMETER\tFAILOVER\tLAST OUTCOME", rows)
	return nil
}

func (k *cli) jobHistory(ctx context.Context, name string, f client.ExecutionFilter) error {
	list, err := k.c.JobExecutions(ctx, name, f)
	if err != nil {
		return err
	}
	if *k.output == "json" {
		return k.json(list)
	}
	rows := make([][]string, 0, len(list.Items))
	for _, e := range list.Items {
		result := "running"
		if !e.CompletedAt.IsZero() {
			result = "ok"
			if !e.Success {
				result = "FAILED"
			}
		}
		code := "-"
		if e.StatusCode != 0 {
			code = strconv.Itoa(e.StatusCode)
		}
		rows = append(rows, []string{e.StartedAt.Local().Format(time.RFC3339), strconv.Itoa(e.ShardingItem), e.Source,
			e.InstanceID, result, code, strconv.Itoa(e.Attempts), strconv.FormatInt(e.DurationMs, 10) + "ms", orDash(e.FailureCause)})
	}
	k.table("STARTED\tITEM\tSOURCE\tINSTANCE\tRESULT\tHTTP\tATTEMPTS\tDURATION\tCAUSE", rows)
	if list.NextCursor != "" {
		fmt.Fprintf(k.stdout, "(more: --cursor %s)\n", list.NextCursor)
	}
	return nil
}

// applied is what `job apply` did to one job.
type applied struct {
	Job     string   `json:"jobName"`
	Action  string   `json:"action"` // created, replaced, unchanged (and "would ..." with --dry-run)
	Changed []string `json:"changed,omitempty"`
	// GeneratedSecret is a secret the server generated for webhook.generateSecret (shown once).
	GeneratedSecret string `json:"generatedSecret,omitempty"`
}

// jobApply makes the server's jobs match the file's: a missing job is created, one that differs is
// replaced (with If-Match, so a concurrent edit is not overwritten), one that matches is left alone, so
// applying a file twice changes nothing the second time. Jobs not in the file are not touched.
func (k *cli) jobApply(ctx context.Context, file string, dry, force bool) error {
	entries, err := readJobsFile(file)
	if err != nil {
		return err
	}
	var out []applied
	var failed error
	for _, e := range entries {
		a, err := k.applyOne(ctx, e, dry, force)
		if err != nil {
			failed = fmt.Errorf("%s: %w", e.Pos, err)
			break
		}
		out = append(out, a)
		if *k.output != "json" {
			line := a.Action + " " + a.Job
			if len(a.Changed) > 0 {
				line += " (" + strings.Join(a.Changed, ", ") + ")"
			}
			fmt.Fprintln(k.stdout, line)
			if a.GeneratedSecret != "" {
				fmt.Fprintf(k.stdout, "  generated webhook secret (shown this once): %s\n", a.GeneratedSecret)
			}
		}
	}
	if *k.output == "json" {
		if out == nil {
			out = []applied{}
		}
		if err := k.json(out); err != nil {
			return err
		}
	}
	return failed
}

func (k *cli) applyOne(ctx context.Context, e jobEntry, dry, force bool) (applied, error) {
	name := e.Config.JobName
	a := applied{Job: name}
	prefix := ""
	if dry {
		prefix = "would be "
	}
	cur, err := k.c.GetJob(ctx, name)
	if client.IsNotFound(err) {
		a.Action = prefix + "created"
		if dry {
			return a, nil
		}
		res, err := k.c.CreateJobJSON(ctx, e.JSON)
		if err != nil {
			return a, err
		}
		a.GeneratedSecret = res.GeneratedSecret
		return a, nil
	}
	if err != nil {
		return a, err
	}
	a.Changed, err = jobChanges(cur, e.Config)
	if err != nil {
		return a, err
	}
	if len(a.Changed) == 0 && !force {
		a.Action = "unchanged"
		return a, nil
	}
	a.Action = prefix + "replaced"
	if dry {
		return a, nil
	}
	res, err := k.c.ReplaceJobJSON(ctx, name, e.JSON, cur.ETag())
	if client.IsPreconditionFailed(err) {
		return a, fmt.Errorf("job %s changed on the server while this apply ran: run it again: %w", name, err)
	}
	if err != nil {
		return a, err
	}
	a.GeneratedSecret = res.GeneratedSecret
	return a, nil
}

// jobChanges lists the fields (webhook.* one level down) in which the server's job differs from the file's.
// A secret can't be compared (the server never shows it): a file's secret counts as a change only when the
// server has none, and "" only when it has one; --force sends it anyway.
func jobChanges(cur *client.Job, want ejserver.JobConfig) ([]string, error) {
	b, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	have := ejserver.DefaultJobConfig()              // a field an older server does not send keeps its default
	if err := json.Unmarshal(b, &have); err != nil { // lenient: the state fields are ignored
		return nil, fmt.Errorf("read the server's job: %w", err)
	}
	have.Normalize()
	var changed []string
	switch w := want.Webhook; {
	case w.GenerateSecret && !cur.Webhook.HasSecret:
		changed = append(changed, "webhook.generateSecret")
	case w.SecretGiven() && w.Secret == "" && cur.Webhook.HasSecret:
		changed = append(changed, "webhook.secret (removed)")
	case w.SecretGiven() && w.Secret != "" && !cur.Webhook.HasSecret:
		changed = append(changed, "webhook.secret")
	}
	want.Webhook.Secret, want.Webhook.GenerateSecret, want.Webhook.PreviousSecret = "", false, ""
	have.Webhook.Secret, have.Webhook.PreviousSecret = "", ""
	hm, err := asMap(have)
	if err != nil {
		return nil, err
	}
	wm, err := asMap(want)
	if err != nil {
		return nil, err
	}
	changed = append(changed, diffKeys("", hm, wm)...)
	slices.Sort(changed)
	return changed, nil
}

func asMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

func diffKeys(prefix string, a, b map[string]any) []string {
	var out []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		am, aok := a[k].(map[string]any)
		bm, bok := b[k].(map[string]any)
		if aok && bok && k == "webhook" {
			out = append(out, diffKeys(prefix+k+".", am, bm)...)
			continue
		}
		x, _ := json.Marshal(a[k])
		y, _ := json.Marshal(b[k])
		if string(x) != string(y) {
			out = append(out, prefix+k)
		}
	}
	return out
}

const serverUsage = `Usage:
  ejserver server list                 server IPs: instances, jobs, disabled jobs
  ejserver server disable|enable IP    for every job
  ejserver instance list               the ejserver peers
`

// serverCmd is `ejserver server ...`.
func serverCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, serverUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "list":
		k := newCLI("server list", "server list [flags]", stdout, stderr)
		return k.run(args[1:], 0, func(ctx context.Context, _ []string) error {
			var all []client.Server
			opts := client.PageOptions{Limit: 1000}
			for {
				page, err := k.c.Servers(ctx, opts)
				if err != nil {
					return err
				}
				all = append(all, page.Items...)
				if opts.Cursor = page.NextCursor; opts.Cursor == "" {
					break
				}
			}
			if *k.output == "json" {
				if all == nil {
					all = []client.Server{}
				}
				return k.json(all)
			}
			rows := make([][]string, 0, len(all))
			for _, s := range all {
				rows = append(rows, []string{s.IP, strconv.FormatBool(s.Online), orDash(strings.Join(s.Instances, ",")),
					strconv.Itoa(s.JobCount), orDash(strings.Join(s.DisabledJobs, ","))})
			}
			k.table("IP\tONLINE\tINSTANCES\tJOBS\tDISABLED FOR", rows)
			return nil
		})
	case "disable", "enable":
		verb := args[0]
		k := newCLI("server "+verb, "server "+verb+" IP [flags]", stdout, stderr)
		return k.run(args[1:], 1, func(ctx context.Context, a []string) error {
			fn := k.c.EnableServer
			if verb == "disable" {
				fn = k.c.DisableServer
			}
			ch, err := fn(ctx, a[0])
			if err != nil {
				return err
			}
			return k.say(ch, "server %s %sd for %d job(s)\n", ch.IP, verb, ch.Jobs)
		})
	}
	fmt.Fprintf(stderr, "ejserver server: unknown command %q\n\n%s", args[0], serverUsage)
	return 2
}

// instanceCmd is `ejserver instance list`.
func instanceCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "list" {
		fmt.Fprint(stderr, serverUsage)
		return 2
	}
	k := newCLI("instance list", "instance list [flags]", stdout, stderr)
	return k.run(args[1:], 0, func(ctx context.Context, _ []string) error {
		var all []client.Instance
		opts := client.PageOptions{Limit: 1000}
		for {
			page, err := k.c.Instances(ctx, opts)
			if err != nil {
				return err
			}
			all = append(all, page.Items...)
			if opts.Cursor = page.NextCursor; opts.Cursor == "" {
				break
			}
		}
		if *k.output == "json" {
			if all == nil {
				all = []client.Instance{}
			}
			return k.json(all)
		}
		rows := make([][]string, 0, len(all))
		for _, in := range all {
			id := in.InstanceID
			if in.Self {
				id += " (answered)"
			}
			rows = append(rows, []string{id, in.ServerIP, orDash(in.APIAddress), orDash(in.Version),
				strconv.Itoa(in.JobCount), strconv.Itoa(in.LeaderOf), in.StartedAt.Local().Format(time.RFC3339)})
		}
		k.table("INSTANCE\tSERVER\tAPI\tVERSION\tJOBS\tLEADS\tSTARTED", rows)
		return nil
	})
}
