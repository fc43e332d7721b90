package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/ejserver/ejserver/client"
)

const channelUsage = `Usage:
  ejserver channel list                 the cluster's notification channels (secrets never shown)
  ejserver channel get NAME             one channel's settings
  ejserver channel apply -f FILE        create the file's channels, replace those that exist (If-Match)
  ejserver channel delete NAME          remove a channel
  ejserver channel test NAME            send a TEST notification through it now; exit 1 if it failed
  ejserver channel history [--channel NAME] [--job NAME] [--outcome sent|failed|dropped|unknown] [--limit N]
                                        what was sent where, newest first

FILE is YAML (or JSON): one channel or a list, in the API's shape, e.g.
  - name: ops-slack
    kind: slack
    default: true
    slack: {url: https://hooks.slack.com/services/T000/B000/XXXX}
A secret left out of an existing channel keeps its stored value, so a file without secrets can be
applied again safely; keep a file that holds secrets private.

Every command takes --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and -o table|json.
`

// channelCmd is `ejserver channel ...`.
func channelCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, channelUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb, rest := args[0], args[1:]
	if code, handled := channelObject.verb(verb, rest, stdout, stderr); handled {
		return code
	}
	switch verb {
	case "list":
		k := newCLI("channel list", "channel list [flags]", stdout, stderr)
		return k.run(rest, 0, func(ctx context.Context, _ []string) error { return k.channelList(ctx) })
	case "test":
		k := newCLI("channel test", "channel test NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			res, err := k.c.TestChannel(ctx, a[0])
			if err != nil {
				return err
			}
			if *k.output == "json" {
				if err := k.json(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(k.stdout, "%s: %s", res.Channel, res.Outcome)
				if res.Status != 0 {
					fmt.Fprintf(k.stdout, " (HTTP %d)", res.Status)
				}
				fmt.Fprintf(k.stdout, " in %d ms, notification %s\n", res.DurationMs, res.NotificationID)
			}
			if res.Outcome != "sent" {
				return fmt.Errorf("the test notification was not sent: %s", res.Error)
			}
			return nil
		})
	case "history":
		k := newCLI("channel history", "channel history [--channel NAME] [--job NAME] [--outcome O] [--limit N] [flags]", stdout, stderr)
		ch := k.fs.String("channel", "", "only this channel's notifications")
		job := k.fs.String("job", "", "only this job's notifications")
		outcome := k.fs.String("outcome", "", "only this outcome: sent, failed, dropped, unknown")
		limit := k.fs.Int("limit", 20, "how many, 1-500")
		cursor := k.fs.String("cursor", "", "nextCursor of a previous page (-o json shows it)")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			if *limit < 1 || *limit > 500 {
				return usageErrorf("--limit: must be between 1 and 500, got %d", *limit)
			}
			page, err := k.c.Notifications(ctx, client.NotificationFilter{Channel: *ch, Job: *job, Outcome: *outcome,
				Limit: *limit, Cursor: *cursor})
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(page)
			}
			rows := make([][]string, 0, len(page.Items))
			for _, r := range page.Items {
				rows = append(rows, []string{r.FinishedAt.Local().Format("2006-01-02 15:04:05"), r.Channel, r.Kind,
					orDash(r.Job), r.Outcome, strconv.Itoa(r.Attempts), orDash(r.Error)})
			}
			k.table("FINISHED\tCHANNEL\tKIND\tJOB\tOUTCOME\tATTEMPTS\tERROR", rows)
			return nil
		})
	}
	fmt.Fprintf(stderr, "ejserver: unknown channel command %q\n\n%s", verb, channelUsage)
	return 2
}

func (k *cli) channelList(ctx context.Context) error {
	list, err := k.c.ListChannels(ctx)
	if err != nil {
		return err
	}
	if *k.output == "json" {
		return k.json(list.Items)
	}
	rows := make([][]string, 0, len(list.Items))
	for _, c := range list.Items {
		def := ""
		if c.Default {
			def = "yes"
		}
		rows = append(rows, []string{c.Name, c.Kind, orDash(def), orDash(c.Description)})
	}
	k.table("NAME\tKIND\tDEFAULT\tDESCRIPTION", rows)
	return nil
}

// asYAML turns v into generic values through its JSON (so YAML shows the API's field names).
func asYAML(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// readChannelsFile reads one channel or a list, YAML or JSON, as JSON bodies with their names.
func readChannelsFile(path string) ([]json.RawMessage, []string, error) {
	return readNamedFile(path, "channel", "a mapping with name, kind and its settings")
}

// readNamedFile reads one object or a list of them, YAML or JSON, as JSON bodies with their names (what
// names the objects in errors, shape says what one looks like).
func readNamedFile(path, what, shape string) ([]json.RawMessage, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var doc any
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%s: no %ss in it", path, what)
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	items, ok := doc.([]any)
	if !ok {
		items = []any{doc}
	}
	var bodies []json.RawMessage
	var names []string
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: entry %d is not a %s (%s)", path, i+1, what, shape)
		}
		name, _ := m["name"].(string)
		if name == "" {
			return nil, nil, fmt.Errorf("%s: entry %d has no name", path, i+1)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: entry %d (%s): %w", path, i+1, name, err)
		}
		bodies, names = append(bodies, b), append(names, name)
	}
	return bodies, names, nil
}

// channelApply creates each channel of the file that is missing and replaces each that exists, with
// If-Match so a concurrent edit is not overwritten; secrets left out keep their stored values.
func (k *cli) channelApply(ctx context.Context, file string) error {
	bodies, names, err := readChannelsFile(file)
	if err != nil {
		return err
	}
	type applied struct {
		Channel string `json:"channel"`
		Action  string `json:"action"`
	}
	var out []applied
	for i, body := range bodies {
		action := "created"
		cur, err := k.c.GetChannel(ctx, names[i])
		switch {
		case client.IsNotFound(err):
			_, err = k.c.CreateChannel(ctx, body)
		case err == nil:
			action = "replaced"
			_, err = k.c.ReplaceChannel(ctx, names[i], body, cur.ETag)
		}
		if err != nil {
			return fmt.Errorf("channel %s: %w", names[i], err)
		}
		out = append(out, applied{names[i], action})
		if *k.output != "json" {
			fmt.Fprintf(k.stdout, "%s channel %s\n", action, names[i])
		}
	}
	if *k.output == "json" {
		return k.json(out)
	}
	return nil
}

// channelObject serves `ejserver channel get|apply|delete`.
var channelObject = namedObject{kind: "channel", plural: "channels",
	get:    func(ctx context.Context, k *cli, name string) (any, error) { return k.c.GetChannel(ctx, name) },
	apply:  func(ctx context.Context, k *cli, file string) error { return k.channelApply(ctx, file) },
	remove: func(ctx context.Context, k *cli, name string) error { return k.c.DeleteChannel(ctx, name) },
}
