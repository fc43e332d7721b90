package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// ratio is ejserver's figures over the baseline's (lateness, throughput, CPU), as a table row.
func ratio(r, b Result) Result {
	x := Result{Workload: r.Workload, Run: "ratio", Peers: r.Peers, Jobs: r.Jobs, ItemsPerJob: r.ItemsPerJob,
		Period: r.Period, Window: r.Window}
	div := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return float64(int64(a/b*100+0.5)) / 100
	}
	lat := func(a, b Latency) Latency {
		return Latency{N: a.N, P50: div(a.P50, b.P50), P99: div(a.P99, b.P99), Max: div(a.Max, b.Max)}
	}
	x.Lateness = lat(r.Lateness, b.Lateness)
	x.FirstMinute.Lateness = lat(r.FirstMinute.Lateness, b.FirstMinute.Lateness)
	x.LastMinute.Lateness = lat(r.LastMinute.Lateness, b.LastMinute.Lateness)
	x.FireSpan = lat(r.FireSpan, b.FireSpan)
	x.RequestsPS = div(r.RequestsPS, b.RequestsPS)
	x.Usage.CPUPercent = []float64{div(sum(r.Usage.CPUPercent), sum(b.Usage.CPUPercent))}
	x.Usage.RSSMB = []float64{div(maxOf(r.Usage.RSSMB), maxOf(b.Usage.RSSMB))}
	return x
}

func sum(fs []float64) float64 {
	s := 0.0
	for _, f := range fs {
		s += f
	}
	return s
}

func maxOf(fs []float64) float64 {
	m := 0.0
	for _, f := range fs {
		m = max(m, f)
	}
	return m
}

// printTable writes the results as one aligned table: per workload its ejserver row, its baseline row and
// their ratio (ejserver / baseline: lateness, fire span, request rate, CPU summed over processes, RSS).
func printTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "workload\trun\tpeers\tjobs x items\texpected\treceived\tdup\tmiss\tlate p50 ms\tp99 ms\tmax ms\t"+
		"p99 1st min\tp99 last min\tfire span p99 ms\treq/s\tCPU% per peer\tRSS MB per peer\tZK CPU%\tZK lat avg/max ms\thost CPU%/steal\tZK req/item\t")
	for _, r := range results {
		f := func(v float64) string { return trim(v) }
		cpu, rss := joinF(r.Usage.CPUPercent, 1), joinF(r.Usage.RSSMB, 0)
		zkCPU, zkReq, zkLat := "-", "-", "-"
		if r.ZKLatency != nil {
			zkLat = fmt.Sprintf("%s/%.0f", trim(r.ZKLatency.P50), r.ZKLatency.Max)
		}
		if r.ZKUsage != nil && len(r.ZKUsage.CPUPercent) > 0 {
			zkCPU = f(r.ZKUsage.CPUPercent[0])
		}
		if r.ZKPerItem > 0 {
			zkReq = f(r.ZKPerItem)
		}
		host := fmt.Sprintf("%.0f/%.0f", r.Usage.HostCPU, r.Usage.HostSteal)
		span := f(r.FireSpan.P99)
		if r.Run == "ratio" {
			x := func(v float64) string {
				if v == 0 {
					return "-"
				}
				return trim(v) + "x"
			}
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\t\t\t\n", r.Workload, "ratio",
				x(r.Lateness.P50), x(r.Lateness.P99), x(r.Lateness.Max), x(r.FirstMinute.Lateness.P99), x(r.LastMinute.Lateness.P99),
				x(r.FireSpan.P99), x(r.RequestsPS), x(r.Usage.CPUPercent[0]), x(r.Usage.RSSMB[0]))
			continue
		}
		if r.FireSpan.N == 0 {
			span = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%dx%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Workload, r.Run, r.Peers, r.Jobs, r.ItemsPerJob, r.Expected, r.Received, r.Duplicates, r.Missed,
			f(r.Lateness.P50), f(r.Lateness.P99), f(r.Lateness.Max), f(r.FirstMinute.Lateness.P99), f(r.LastMinute.Lateness.P99),
			span, f(r.RequestsPS), cpu, rss, zkCPU, zkLat, host, zkReq)
	}
	tw.Flush()
	printAsyncTable(w, results)
	printBackfillTable(w, results)
	// the workload-specific figures, below the table
	for _, r := range results {
		if r.Run == "ratio" {
			continue
		}
		var parts []string
		if r.RegisterMs > 0 {
			reg := fmt.Sprintf("registered %d jobs in %.1f s (every peer scheduled them %.1f s later", r.Jobs, r.RegisterMs/1000, r.ReadyMs/1000)
			if r.FirstFiresMs > 0 {
				reg += fmt.Sprintf(", and every job had fired once %.1f s after that", r.FirstFiresMs/1000)
			}
			parts = append(parts, reg+")")
		}
		if r.FireSpan.N > 0 && r.ItemsPerJob > 1 {
			parts = append(parts, fmt.Sprintf("%d complete fires: last item arrived p50 %s ms, p99 %s ms, max %s ms after the scheduled time",
				r.FireSpan.N, trim(r.FireSpan.P50), trim(r.FireSpan.P99), trim(r.FireSpan.Max)))
		}
		if fo := r.Failover; fo != nil {
			parts = append(parts, fmt.Sprintf("killed 1 of 3 peers with %d items in flight: %d re-POSTed as FAILOVER, first %.1f s, last %.1f s after the kill (session timeout %.0f s), %d wrong re-POSTs; next fire %d/%d items",
				fo.Orphans, fo.RePosted, fo.FirstRePostMs/1000, fo.LastRePostMs/1000, fo.SessionTimeoutMs/1000, fo.WrongRePosts, fo.NextFire, r.Jobs*r.ItemsPerJob))
		}
		if rr := r.Restart; rr != nil {
			line := fmt.Sprintf("peer %d restarted %s into the window: stopped in %.1f s; the new process's API ready %.1f s and every job scheduled %.1f s after its start",
				rr.Peer, rr.At, rr.StopMs/1000, rr.APIReadyMs/1000, rr.ReadyMs/1000)
			if rr.Err != "" {
				line += " (" + rr.Err + ")"
			}
			parts = append(parts, line)
		}
		if rs := r.Reshard; rs != nil {
			parts = append(parts, fmt.Sprintf("4th peer ready %.1f s after start; it fired %d jobs (ROUND_ROBIN gives it %d), the first %.1f s and the last of them %.1f s after it was ready",
				rs.JoinMs/1000, rs.MovedJobs, rs.ExpectedJobs, rs.FirstFireMs/1000, rs.AllMovedMs/1000))
		}
		if a := r.Async; a != nil {
			parts = append(parts, fmt.Sprintf("async (lease %d s, no heartbeats, completions %s after the delivery, seed %d): %d deliveries answered 202 "+
				"(%d executions, fires up to the window's end; %d later ones answered 200), %d completed, lost %d, double-recorded %d, retried %d; "+
				"completions sent %d (%d to the callbackUrl's peer, %d to another), round trip p50 %s, p99 %s, max %s ms (callbackUrl's peer p99 %s, another p99 %s); "+
				"repeated completions %d of %d answered 200, p99 %s ms; callbacks started p99 %s ms after their due time; "+
				"peers: accepted %.0f, ended %v, lease expiries %.0f, callbacks %v, running %.0f",
				a.LeaseSeconds, a.Delay, a.Seed, a.Accepted, a.AcceptedIDs, a.Declined, a.Completed, a.Lost, a.DoubleRecorded, a.Retried,
				a.Completions.Sent, a.Completions.ToOwn, a.Completions.ToOther, trim(a.Completions.Latency.P50), trim(a.Completions.Latency.P99),
				trim(a.Completions.Latency.Max), trim(a.Completions.Own.P99), trim(a.Completions.Other.P99),
				a.Repeats.OK, a.Repeats.Sent, trim(a.Repeats.Latency.P99), trim(a.SendLag.P99),
				a.Peers.Accepted, a.Peers.Ended, a.Peers.LeaseExpiries, a.Peers.Callbacks, a.Peers.Running))
		}
		if r.Other > 0 {
			parts = append(parts, fmt.Sprintf("deliveries of the window's fires by other sources: %v", r.OtherBy))
		}
		if r.Unexpected > 0 {
			parts = append(parts, fmt.Sprintf("%d deliveries of fires the schedule does not have", r.Unexpected))
		}
		if len(r.MissedFires) > 0 {
			parts = append(parts, fmt.Sprintf("missed: %s", strings.Join(r.MissedFires, " ")))
		}
		if len(r.PeerCounters) > 0 {
			var cs []string
			for _, k := range slices.Sorted(maps.Keys(r.PeerCounters)) {
				gauge := strings.HasPrefix(k, "async_items_running") || strings.HasPrefix(k, "zookeeper_write_groups_waiting")
				if !gauge && (!strings.HasPrefix(k, "item_executions_total") || !strings.Contains(k, `outcome="success"`)) {
					cs = append(cs, fmt.Sprintf("%s %.0f", k, r.PeerCounters[k]))
				}
			}
			if len(cs) > 0 {
				parts = append(parts, "peers' counters over the window: "+strings.Join(cs, ", "))
			}
		}
		if len(r.SetupCounters) > 0 {
			var cs []string
			for _, k := range slices.Sorted(maps.Keys(r.SetupCounters)) {
				if strings.HasPrefix(k, "fires_skipped_total") || strings.HasPrefix(k, "reshardings_total") || strings.HasPrefix(k, "misfires_total") {
					cs = append(cs, fmt.Sprintf("%s %.0f", k, r.SetupCounters[k]))
				}
			}
			if len(cs) > 0 {
				parts = append(parts, "peers' counters from their start to the window: "+strings.Join(cs, ", "))
			}
		}
		if u := r.Usage; len(u.RSSFirstMinuteMB) > 0 && r.Run != "baseline" {
			parts = append(parts, fmt.Sprintf("RSS MB per peer, highest in the window's first minute / last minute: %s / %s",
				joinF(u.RSSFirstMinuteMB, 0), joinF(u.RSSLastMinuteMB, 0)))
		}
		if r.HistoryCPU != nil {
			parts = append(parts, fmt.Sprintf("history: PostgreSQL's processes %.1f %% CPU", *r.HistoryCPU))
		}
		if line := zkStateLine(r); line != "" {
			parts = append(parts, line)
		}
		parts = append(parts, r.Notes...)
		if len(parts) > 0 {
			fmt.Fprintf(w, "%s (%s): %s\n", r.Workload, r.Run, strings.Join(parts, "; "))
		}
		for _, line := range r.PeerLog {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
}

func joinF(fs []float64, decimals int) string {
	if len(fs) == 0 {
		return "-"
	}
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = fmt.Sprintf("%.*f", decimals, f)
	}
	return strings.Join(s, "/")
}

func trim(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// printAsyncTable writes the async workload's own figures, if it ran, as a second table: delivered against
// expected (the window), accepted and completed executions (the whole run), what was lost or recorded twice,
// the completion callbacks' round trips, and the peers' CPU, RSS and lateness from the main table.
func printAsyncTable(w io.Writer, results []Result) {
	var rows []Result
	for _, r := range results {
		if r.Async != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "workload\tdelivered/expected\taccepted\tcompleted\tlost\tdouble\tlease expiries\trepeats 200\t"+
		"callback p50 ms\tp99 ms\tmax ms\tCPU% per peer\tRSS MB per peer\tlate p99 ms\t")
	for _, r := range rows {
		a := r.Async
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%d\t%d\t%d\t%.0f\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Workload, r.Received, r.Expected,
			a.AcceptedIDs, a.Completed, a.Lost, a.DoubleRecorded, a.Peers.LeaseExpiries, a.Repeats.OK, a.Repeats.Sent,
			trim(a.Completions.Latency.P50), trim(a.Completions.Latency.P99), trim(a.Completions.Latency.Max),
			joinF(r.Usage.CPUPercent, 1), joinF(r.Usage.RSSMB, 0), trim(r.Lateness.P99))
	}
	tw.Flush()
}
