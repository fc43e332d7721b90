package soak

import "github.com/ejserver/ejserver"

// JobSpec is one job of the soak's mix.
type JobSpec struct {
	Name      string
	Cron      string
	Total     int
	MinTotal  int // a reshard picks a total in [MinTotal, MaxTotal]; DisableItem an item below MinTotal
	MaxTotal  int
	Strategy  string
	Failover  bool
	Misfire   bool
	Streaming bool // DATAFLOW with streamingProcess: the receiver asks for three iterations
	Async     bool // the receiver answers 202 and completes by callback
	// Unmonitored: monitorExecution false, no running nodes: outside the history guarantee when its peer is
	// killed mid-request (docs/reliability.md), which the checker allows for.
	Unmonitored bool
	// Overlap, CatchUp, CatchUpWindowSeconds and JitterMs are the job's issue-24 fields ("" / 0: unset).
	Overlap              string
	CatchUp              string
	CatchUpWindowSeconds int
	JitterMs             int
}

// Mix is the soak's job set: every few seconds and every minute, 1 to 50 items, the three strategies, failover
// on and off, misfire on and off, a streaming DATAFLOW job, a long-running (202) one and an unmonitored one.
var Mix = []JobSpec{
	{Name: "fast-avg", Cron: "*/3 * * * * ?", Total: 6, MinTotal: 4, MaxTotal: 8, Strategy: ejserver.StrategyAverage, Failover: true, Misfire: true},
	{Name: "fast-odd", Cron: "*/5 * * * * ?", Total: 10, MinTotal: 6, MaxTotal: 12, Strategy: ejserver.StrategyOdevity, Misfire: true},
	{Name: "flow-rr", Cron: "*/4 * * * * ?", Total: 3, MinTotal: 2, MaxTotal: 5, Strategy: ejserver.StrategyRoundRobin, Failover: true, Misfire: true, Streaming: true},
	{Name: "async", Cron: "*/10 * * * * ?", Total: 4, MinTotal: 4, MaxTotal: 4, Strategy: ejserver.StrategyAverage, Failover: true, Misfire: true, Async: true},
	{Name: "minute", Cron: "0 * * * * ?", Total: 50, MinTotal: 30, MaxTotal: 50, Strategy: ejserver.StrategyAverage, Failover: true},
	{Name: "slow-nofo", Cron: "*/2 * * * * ?", Total: 2, MinTotal: 1, MaxTotal: 3, Strategy: ejserver.StrategyOdevity},
	{Name: "single", Cron: "*/6 * * * * ?", Total: 1, MinTotal: 1, MaxTotal: 1, Strategy: ejserver.StrategyRoundRobin, Failover: true, Misfire: true},
	{Name: "loose", Cron: "*/4 * * * * ?", Total: 3, MinTotal: 2, MaxTotal: 4, Strategy: ejserver.StrategyAverage, Unmonitored: true},
}

// body is the job's REST JSON with total items.
func (j JobSpec) body(url string, total int) map[string]any {
	b := map[string]any{
		"jobName": j.Name, "cron": j.Cron, "shardingTotalCount": total, "jobShardingStrategyType": j.Strategy,
		"failover": j.Failover, "misfire": j.Misfire, "monitorExecution": !j.Unmonitored,
		"webhook": map[string]any{"url": url + "/" + j.Name, "timeoutMs": 3000, "connectTimeoutMs": 1000},
		"retry":   map[string]any{"maxAttempts": 2, "initialBackoffMs": 200, "maxBackoffMs": 1000},
	}
	if j.Streaming {
		b["jobType"], b["streamingProcess"] = "DATAFLOW", true
	}
	if j.Async {
		b["async"] = map[string]any{"leaseSeconds": 20}
	}
	for k, v := range map[string]string{"overlapPolicy": j.Overlap, "catchUp": j.CatchUp} {
		if v != "" {
			b[k] = v
		}
	}
	for k, v := range map[string]int{"catchUpWindowSeconds": j.CatchUpWindowSeconds, "jitterMs": j.JitterMs} {
		if v != 0 {
			b[k] = v
		}
	}
	return b
}
