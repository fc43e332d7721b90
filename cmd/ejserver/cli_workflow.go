package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ejserver/ejserver/client"
)

const workflowUsage = `Usage:
  ejserver workflow list                    the workflows
  ejserver workflow get NAME                one workflow's definition
  ejserver workflow apply -f FILE           create the file's workflows, replace those that exist (If-Match)
  ejserver workflow delete NAME             remove a workflow (and the runs ZooKeeper holds of it)
  ejserver workflow run NAME [--parameters JSON] [--wait D]
                                            trigger a run; with --wait, wait up to D for its end (exit 1 if
                                            it did not succeed)
  ejserver workflow runs NAME               its active and last ended runs, newest first
  ejserver workflow show NAME RUN           one run, node by node
  ejserver workflow cancel NAME RUN         cancel a run
  ejserver workflow retry NAME RUN          run a FAILED or CANCELLED run again from its failed nodes

FILE is YAML (or JSON): one workflow or a list, in the API's shape, e.g.
  - name: nightly
    cron: "0 0 2 * * ?"
    nodes:
      - {name: settle, job: settle}
      - {name: report, job: report, after: [{node: settle, on: success}]}

Every command takes --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and -o table|json.
`

// workflowCmd is `ejserver workflow ...`.
func workflowCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, workflowUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb, rest := args[0], args[1:]
	if code, handled := workflowObject.verb(verb, rest, stdout, stderr); handled {
		return code
	}
	switch verb {
	case "list":
		k := newCLI("workflow list", "workflow list [flags]", stdout, stderr)
		return k.run(rest, 0, func(ctx context.Context, _ []string) error { return k.workflowList(ctx) })
	case "run", "trigger":
		k := newCLI("workflow run", "workflow run NAME [--parameters JSON] [--wait D] [flags]", stdout, stderr)
		params := k.fs.String("parameters", "", "a JSON object every node's items get as workflow.parameters")
		wait := k.fs.Duration("wait", 0, "wait up to this long for the run's end (0: return at once)")
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			var raw json.RawMessage
			if *params != "" {
				raw = json.RawMessage(*params)
				if !json.Valid(raw) {
					return usageErrorf("--parameters: not JSON")
				}
			}
			r, err := k.c.TriggerWorkflow(ctx, a[0], raw)
			if err != nil {
				return err
			}
			if *wait > 0 {
				if r, err = k.waitRun(ctx, a[0], r.ID, *wait); err != nil {
					return err
				}
			}
			if err := k.showRun(r); err != nil {
				return err
			}
			if *wait > 0 && r.State != "SUCCEEDED" {
				return fmt.Errorf("run %s ended %s", r.ID, r.State)
			}
			return nil
		})
	case "runs":
		k := newCLI("workflow runs", "workflow runs NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			list, err := k.c.WorkflowRuns(ctx, a[0])
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(list.Items)
			}
			rows := make([][]string, 0, len(list.Items))
			for _, r := range list.Items {
				ended := "-"
				if !r.EndedAt.IsZero() {
					ended = r.EndedAt.Local().Format("2006-01-02 15:04:05")
				}
				rows = append(rows, []string{r.ID, r.State, r.Trigger, strconv.Itoa(r.Attempt),
					r.CreatedAt.Local().Format("2006-01-02 15:04:05"), ended})
			}
			k.table("RUN\tSTATE\tTRIGGER\tATTEMPT\tCREATED\tENDED", rows)
			return nil
		})
	case "show", "run-get":
		k := newCLI("workflow show", "workflow show NAME RUN [flags]", stdout, stderr)
		return k.run(rest, 2, func(ctx context.Context, a []string) error {
			r, err := k.c.GetWorkflowRun(ctx, a[0], a[1])
			if err != nil {
				return err
			}
			return k.showRun(r)
		})
	case "cancel", "retry":
		k := newCLI("workflow "+verb, "workflow "+verb+" NAME RUN [flags]", stdout, stderr)
		return k.run(rest, 2, func(ctx context.Context, a []string) error {
			call := k.c.CancelWorkflowRun
			if verb == "retry" {
				call = k.c.RetryWorkflowRun
			}
			if _, err := call(ctx, a[0], a[1]); err != nil {
				return err
			}
			return k.say(map[string]string{verb: a[1]}, "asked for the %s of run %s\n", verb, a[1])
		})
	}
	fmt.Fprintf(stderr, "ejserver: unknown workflow command %q\n\n%s", verb, workflowUsage)
	return 2
}

func (k *cli) workflowList(ctx context.Context) error {
	list, err := k.c.ListWorkflows(ctx)
	if err != nil {
		return err
	}
	if *k.output == "json" {
		return k.json(list.Items)
	}
	rows := make([][]string, 0, len(list.Items))
	for _, w := range list.Items {
		state := "enabled"
		if w.Disabled {
			state = "disabled"
		}
		rows = append(rows, []string{w.Name, strconv.Itoa(len(w.Nodes)), orDash(w.Cron), state, orDash(w.Description)})
	}
	k.table("NAME\tNODES\tCRON\tSTATE\tDESCRIPTION", rows)
	return nil
}

func (k *cli) workflowApply(ctx context.Context, file string) error {
	bodies, names, ok, err := jobsFileWorkflows(file)
	if !ok && err == nil {
		bodies, names, err = readNamedFile(file, "workflow", "a mapping with name and nodes")
	}
	if err != nil {
		return err
	}
	type applied struct {
		Workflow string `json:"workflow"`
		Action   string `json:"action"`
	}
	var out []applied
	for i, body := range bodies {
		action := "created"
		cur, err := k.c.GetWorkflow(ctx, names[i])
		switch {
		case client.IsNotFound(err):
			_, err = k.c.CreateWorkflow(ctx, body)
		case err == nil:
			action = "replaced"
			_, err = k.c.ReplaceWorkflow(ctx, names[i], body, cur.ETag)
		}
		if err != nil {
			return fmt.Errorf("workflow %s: %w", names[i], err)
		}
		out = append(out, applied{names[i], action})
		if *k.output != "json" {
			fmt.Fprintf(k.stdout, "%s workflow %s\n", action, names[i])
		}
	}
	if *k.output == "json" {
		return k.json(out)
	}
	return nil
}

// waitRun polls a run until it ended or d passed.
func (k *cli) waitRun(ctx context.Context, name, id string, d time.Duration) (*client.WorkflowRun, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := k.c.GetWorkflowRun(ctx, name, id)
		if err != nil {
			return nil, err
		}
		if r.State != "PENDING" && r.State != "RUNNING" {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("run %s still %s after %s", id, r.State, d)
		case <-tick.C:
		}
	}
}

func (k *cli) showRun(r *client.WorkflowRun) error {
	if *k.output == "json" {
		return k.json(r)
	}
	fmt.Fprintf(k.stdout, "run %s of %s: %s (attempt %d, %s)\n", r.ID, r.Workflow, r.State, r.Attempt, strings.ToLower(r.Trigger))
	rows := make([][]string, 0, len(r.Nodes))
	for _, n := range r.Nodes {
		var after []string
		for _, e := range n.After {
			after = append(after, e.Node+":"+e.On)
		}
		rows = append(rows, []string{n.Name, n.Job, n.State, orDash(strings.Join(after, ",")), orDash(n.Error)})
	}
	k.table("NODE\tJOB\tSTATE\tAFTER\tERROR", rows)
	return nil
}

// workflowObject serves `ejserver workflow get|apply|delete`.
var workflowObject = namedObject{kind: "workflow", plural: "workflows",
	get:    func(ctx context.Context, k *cli, name string) (any, error) { return k.c.GetWorkflow(ctx, name) },
	apply:  func(ctx context.Context, k *cli, file string) error { return k.workflowApply(ctx, file) },
	remove: func(ctx context.Context, k *cli, name string) error { return k.c.DeleteWorkflow(ctx, name) },
}
