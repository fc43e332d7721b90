package main

import (
	"context"
	"io"

	"gopkg.in/yaml.v3"
)

// namedObject is a cluster-wide object the CLI reads, applies from a file and deletes by name: a channel, a
// calendar, a workflow. One place serves the get, apply and delete verbs they share.
type namedObject struct {
	kind   string // "channel": the command's name and the word in its messages
	plural string // "channels": the -f flag's help
	get    func(ctx context.Context, k *cli, name string) (any, error)
	apply  func(ctx context.Context, k *cli, file string) error
	remove func(ctx context.Context, k *cli, name string) error
}

// verb runs get, apply or delete; handled is false for any other verb, which the caller then serves.
func (o namedObject) verb(verb string, rest []string, stdout, stderr io.Writer) (code int, handled bool) {
	switch verb {
	case "get":
		k := newCLI(o.kind+" get", o.kind+" get NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			v, err := o.get(ctx, k, a[0])
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(v)
			}
			return yaml.NewEncoder(k.stdout).Encode(asYAML(v))
		}), true
	case "apply":
		k := newCLI(o.kind+" apply", o.kind+" apply -f FILE [flags]", stdout, stderr)
		file := k.fs.String("f", "", "the "+o.plural+" file (YAML or JSON: one "+o.kind+" or a list)")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			if *file == "" {
				return usageErrorf("-f FILE is required")
			}
			return o.apply(ctx, k, *file)
		}), true
	case "delete":
		k := newCLI(o.kind+" delete", o.kind+" delete NAME [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			if err := o.remove(ctx, k, a[0]); err != nil {
				return err
			}
			return k.say(map[string]string{"deleted": a[0]}, "deleted "+o.kind+" %s\n", a[0])
		}), true
	}
	return 0, false
}
