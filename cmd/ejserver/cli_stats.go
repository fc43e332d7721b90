package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ejserver/ejserver/client"
)

const statsUsage = `Usage:
  ejserver stats job NAME [--window 24h] [--bucket 5m]
                         a job's window per bucket: fires, items by outcome, mean and largest duration and
                         lateness; p50/p99 over the window
  ejserver stats cluster [--window 1h] [--bucket 1m]
                         every job's fires and failures per bucket, and what each peer executed
  ejserver stats load [--horizon 1h]
                         the seconds of the next horizon that most items fall on, from the cron schedules

Percentiles are nearest-rank (exact under 1 s, at most 1% low above); lateness is an item's start minus its scheduled time. With
an SQLite history each peer reports only the items it ran. Durations take Go's form (90s, 5m, 24h) or
whole days (7d). Every command takes --server URL [EJ_SERVER], --token T [EJ_TOKEN, else EJ_API_TOKEN] and
-o table|json.
`

// statsCmd is `ejserver stats ...`.
func statsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, statsUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb, rest := args[0], args[1:]
	switch verb {
	case "job":
		k := newCLI("stats job", "stats job NAME [--window 24h] [--bucket 5m] [flags]", stdout, stderr)
		window := k.fs.String("window", "24h", "how far back (1s-31d)")
		bucket := k.fs.String("bucket", "5m", "bucket width")
		return k.run(rest, 1, func(ctx context.Context, a []string) error {
			q, err := statsQueryOf(*window, *bucket)
			if err != nil {
				return err
			}
			st, err := k.c.JobStats(ctx, a[0], q)
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(st)
			}
			k.statsTable(st.Buckets, st.Total, st.SharedHistory)
			return nil
		})
	case "cluster":
		k := newCLI("stats cluster", "stats cluster [--window 1h] [--bucket 1m] [flags]", stdout, stderr)
		window := k.fs.String("window", "1h", "how far back (1s-31d)")
		bucket := k.fs.String("bucket", "1m", "bucket width")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			q, err := statsQueryOf(*window, *bucket)
			if err != nil {
				return err
			}
			st, err := k.c.ClusterStats(ctx, q)
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(st)
			}
			k.statsTable(st.Buckets, st.Total, st.SharedHistory)
			fmt.Fprintln(k.stdout)
			var rows [][]string
			for _, p := range st.Peers {
				rows = append(rows, []string{p.InstanceID, p.Hostname, strconv.FormatInt(p.Items, 10), strconv.FormatInt(p.Failure, 10),
					ms(p.LatenessP50), ms(p.LatenessP99)})
			}
			k.table("PEER\tHOST\tITEMS\tFAILED\tLATE P50\tLATE P99", rows)
			return nil
		})
	case "load":
		k := newCLI("stats load", "stats load [--horizon 1h] [flags]", stdout, stderr)
		horizon := k.fs.String("horizon", "1h", "how far ahead (1s-24h)")
		top := k.fs.Int("top", 10, "how many of the busiest seconds to list")
		return k.run(rest, 0, func(ctx context.Context, _ []string) error {
			h, err := spanOf("horizon", *horizon)
			if err != nil {
				return err
			}
			l, err := k.c.LoadAhead(ctx, h)
			if err != nil {
				return err
			}
			if *k.output == "json" {
				return k.json(l)
			}
			fmt.Fprintf(k.stdout, "%d jobs on %d schedules; peak %d items at %s", l.Jobs, l.Schedules, l.Peak, l.PeakAt.Format(time.RFC3339))
			if l.Invalid+l.Skipped > 0 || l.Partial {
				fmt.Fprintf(k.stdout, " (%d invalid, %d skipped by the bound, partial %v)", l.Invalid, l.Skipped, l.Partial)
			}
			fmt.Fprintln(k.stdout)
			var rows [][]string
			for _, i := range busiest(l.Items, *top) {
				rows = append(rows, []string{l.From.Add(time.Duration(i) * time.Second).Format(time.RFC3339), strconv.FormatInt(l.Items[i], 10)})
			}
			k.table("SECOND\tITEMS", rows)
			return nil
		})
	}
	fmt.Fprintf(stderr, "ejserver stats: unknown command %q\n\n%s", verb, statsUsage)
	return 2
}

// busiest returns the indexes of the n largest non-zero values, largest first (earliest first among equals).
func busiest(v []int64, n int) []int {
	var idx []int
	for i, x := range v {
		if x > 0 {
			idx = append(idx, i)
		}
	}
	// a stable insertion sort: n and the non-zero seconds are small in practice, and order must be stable
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && v[idx[j]] > v[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	return idx[:min(n, len(idx))]
}

func (k *cli) statsTable(buckets []client.StatsBucket, total client.Aggregate, shared bool) {
	var rows [][]string
	row := func(label string, a client.Aggregate) []string {
		return []string{label, strconv.FormatInt(a.Fires, 10), strconv.FormatInt(a.Items, 10), strconv.FormatInt(a.Success, 10),
			strconv.FormatInt(a.Failure, 10), strconv.FormatInt(a.Running, 10), ms(a.DurationAvg), ms(a.DurationMax), ms(a.LatenessAvg), ms(a.LatenessMax)}
	}
	for _, b := range buckets {
		if b.Items > 0 {
			rows = append(rows, row(b.Start.Format(time.RFC3339), b.Aggregate))
		}
	}
	rows = append(rows, row("TOTAL", total))
	k.table("BUCKET\tFIRES\tITEMS\tOK\tFAILED\tRUNNING\tDUR AVG\tDUR MAX\tLATE AVG\tLATE MAX", rows)
	fmt.Fprintf(k.stdout, "window: duration p50 %s p99 %s, lateness p50 %s p99 %s\n", ms(total.DurationP50), ms(total.DurationP99),
		ms(total.LatenessP50), ms(total.LatenessP99))
	if !shared {
		fmt.Fprintln(k.stdout, "(SQLite history: this peer's items only)")
	}
}

func ms(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10) + "ms"
}

func statsQueryOf(window, bucket string) (client.StatsQuery, error) {
	w, err := spanOf("window", window)
	if err != nil {
		return client.StatsQuery{}, err
	}
	b, err := spanOf("bucket", bucket)
	return client.StatsQuery{Window: w, Bucket: b}, err
}

// spanOf reads a flag's duration: Go's form or whole days (7d).
func spanOf(name, s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s[:max(len(s)-1, 0)]); err == nil && len(s) > 1 && s[len(s)-1] == 'd' && n > 0 {
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, usageErrorf("--%s: %q is not a positive duration (30s, 5m, 24h, 7d)", name, s)
	}
	return d, nil
}
