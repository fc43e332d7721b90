package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/ejserver/ejserver/client"
)

const backfillUsage = `Usage:
  ejserver backfill start JOB --from TIME --to TIME [--overlap BUFFER_ONE|SKIP|ALLOW]
                                        run every fire the job's cron had in the range (RFC 3339, both included)
  ejserver backfill list JOB            the job's backfills and their progress, newest first
  ejserver backfill get JOB ID          one backfill's progress
  ejserver backfill cancel JOB ID       stop a running backfill
  ejserver backfill replay EXECUTION    re-run one failed execution (source MANUAL, linked to the original)

Every command takes --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and -o table|json.
`

// backfillCmd is `ejserver backfill ...`.
func backfillCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, backfillUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "start":
		k := newCLI("backfill start", "backfill start JOB --from TIME --to TIME [--overlap POLICY] [flags]", stdout, stderr)
		from := k.fs.String("from", "", "first time of the range, RFC 3339 (2026-11-01T00:00:00Z)")
		to := k.fs.String("to", "", "last time of the range, RFC 3339, not in the future")
		overlap := k.fs.String("overlap", "", "what an item does while the job's own run of it is in flight: BUFFER_ONE (default), SKIP or ALLOW")
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			b, err := k.c.StartBackfill(ctx, a[0], client.BackfillRequest{From: *from, To: *to, OverlapPolicy: *overlap})
			if err != nil {
				return err
			}
			return k.backfills([]client.Backfill{*b})
		})
	case "list":
		k := newCLI("backfill list", "backfill list JOB [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			bs, err := k.c.Backfills(ctx, a[0])
			if err != nil {
				return err
			}
			return k.backfills(bs)
		})
	case "get", "cancel":
		k := newCLI("backfill "+verb, "backfill "+verb+" JOB ID [flags]", stdout, stderr)
		return k.run(rest, 2, func(ctx context.Context, a []string) error {
			get := k.c.GetBackfill
			if verb == "cancel" {
				get = k.c.CancelBackfill
			}
			b, err := get(ctx, a[0], a[1])
			if err != nil {
				return err
			}
			return k.backfills([]client.Backfill{*b})
		})
	case "replay":
		k := newCLI("backfill replay", "backfill replay EXECUTION [flags]", stdout, stderr)
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			e, err := k.c.ReplayExecution(ctx, a[0])
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(e)
			}
			fmt.Fprintf(k.stdout, "replaying %s as %s (job %s, item %d)\n", e.ReplayOf, e.ID, e.JobName, e.ShardingItem)
			return nil
		})
	}
	fmt.Fprintf(stderr, "ejserver backfill: unknown command %q\n\n%s", verb, backfillUsage)
	return 2
}

func (k *cli) backfills(bs []client.Backfill) error {
	if *k.output == "json" {
		if len(bs) == 1 {
			return k.json(bs[0])
		}
		return k.json(bs)
	}
	rows := make([][]string, 0, len(bs))
	for _, b := range bs {
		current := "-"
		if !b.Current.IsZero() {
			current = b.Current.UTC().Format("2006-01-02T15:04:05Z")
		}
		rows = append(rows, []string{b.ID, b.State, strconv.Itoa(b.Done) + "/" + strconv.Itoa(b.Total), current,
			strconv.Itoa(b.Items), strconv.Itoa(b.Failed), strconv.Itoa(b.Skipped), orDash(b.Owner)})
	}
	k.table("ID\tSTATE\tDONE\tCURRENT\tITEMS\tFAILED\tSKIPPED\tOWNER", rows)
	return nil
}
