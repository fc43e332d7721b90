package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ejserver/ejserver/client"
)

const alertsUsage = `Usage:
  ejserver alerts defaults                 the cluster's default alert rules
  ejserver alerts set-defaults -f FILE     replace them (YAML or JSON, the API's object; - reads stdin; {} removes them)
`

// alertsCmd is `ejserver alerts ...`.
func alertsCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, alertsUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "defaults":
		k := newCLI("alerts defaults", "alerts defaults [flags]", stdout, stderr)
		return k.run(args[1:], 0, func(ctx context.Context, _ []string) error {
			a, err := k.c.AlertDefaults(ctx)
			if err != nil {
				return err
			}
			return k.printAlerts(a)
		})
	case "set-defaults":
		k := newCLI("alerts set-defaults", "alerts set-defaults -f FILE [flags]", stdout, stderr)
		file := k.fs.String("f", "", "the default rules (YAML or JSON); - reads stdin")
		return k.run(args[1:], 0, func(ctx context.Context, _ []string) error {
			if *file == "" {
				return usageErrorf("-f FILE is required")
			}
			a, err := readAlertsFile(*file, stdin)
			if err != nil {
				return err
			}
			saved, err := k.c.SetAlertDefaults(ctx, a)
			if err != nil {
				return err
			}
			return k.printAlerts(saved)
		})
	}
	fmt.Fprintf(stderr, "ejserver alerts: unknown command %q\n\n%s", args[0], alertsUsage)
	return 2
}

// readAlertsFile reads an Alerts object from YAML or JSON (JSON is YAML), strictly.
func readAlertsFile(name string, stdin io.Reader) (client.Alerts, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return client.Alerts{}, err
	}
	var raw any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return client.Alerts{}, fmt.Errorf("%s: %w", name, err)
	}
	j, err := json.Marshal(raw)
	if err != nil {
		return client.Alerts{}, fmt.Errorf("%s: %w", name, err)
	}
	var a client.Alerts
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if string(j) != "null" {
		if err := dec.Decode(&a); err != nil {
			return client.Alerts{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return a, nil
}

func (k *cli) printAlerts(a *client.Alerts) error {
	if *k.output == "json" {
		return k.json(a)
	}
	rows := make([][]string, 0, len(a.Rules))
	for i, r := range a.Rules {
		rows = append(rows, []string{"default/" + strconv.Itoa(i), strings.Join(r.On, ","), strings.Join(r.Channels, ","),
			strconv.Itoa(r.QuietPeriodSeconds)})
	}
	k.table("RULE\tON\tCHANNELS\tQUIET S", rows)
	fmt.Fprintf(k.stdout, "lateAfterMs %d, runningLongerThanSeconds %d, failedFiresInARow %d\n",
		a.LateAfterMs, a.RunningLongerThanSeconds, a.FailedFiresInARow)
	return nil
}
