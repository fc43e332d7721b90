package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkWorkflow200Nodes runs a workflow of 200 nodes on 3 peers (20 layers of 10; each node waits for two
// nodes of the layer above; column c fires job c, 3 items, receivers answering at once) and measures each
// node's start lag: its first item's arrival minus the end of its last parent (the last answer to that
// parent's items). The target (issue 26): every node within 1 s of its parents ending.
//
//	go test -run '^$' -bench Workflow200Nodes -benchtime 1x ./integration/
func BenchmarkWorkflow200Nodes(b *testing.B) {
	for range b.N {
		lags, total := workflow200(b)
		pick := func(d []time.Duration, q float64) float64 {
			slices.Sort(d)
			return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(pick(lags.lag, 0.5), "lag-p50-ms")
		b.ReportMetric(pick(lags.lag, 0.99), "lag-p99-ms")
		b.ReportMetric(pick(lags.lag, 1), "lag-max-ms")
		// where the lag goes: from the parents' last item end to the engine's step that applied it (fire
		// ledger close, inbox, the step's transaction), and from that step to the node's first item's arrival
		// (trigger watch, the executor's fire, the request)
		b.ReportMetric(pick(lags.toStep, 0.5), "end-to-step-p50-ms")
		b.ReportMetric(pick(lags.toStep, 0.99), "end-to-step-p99-ms")
		b.ReportMetric(pick(lags.toSend, 0.5), "step-to-item-p50-ms")
		b.ReportMetric(pick(lags.toSend, 0.99), "step-to-item-p99-ms")
		b.ReportMetric(total.Seconds(), "run-s")
	}
}

// lagParts are the start lags of a run's nodes and their two parts.
type lagParts struct{ lag, toStep, toSend []time.Duration }

func workflow200(b *testing.B) (lagParts, time.Duration) {
	const layers, width, items = 20, 10, 3
	recv := newReceiver(b)
	c := newCluster(b, 3)
	p := c.peers[0]
	for col := range width {
		mustDo(b, p, "POST", "/api/v1/jobs", oneOff(fmt.Sprintf("bw%d", col), items, recv.URL), http.StatusCreated, nil)
	}
	name := func(l, col int) string { return fmt.Sprintf("n%02d-%d", l, col) }
	parents := map[string][]string{}
	var nodes []any
	for l := range layers {
		for col := range width {
			n := map[string]any{"name": name(l, col), "job": fmt.Sprintf("bw%d", col)}
			if l > 0 {
				ps := []string{name(l-1, col), name(l-1, (col+1)%width)}
				parents[name(l, col)] = ps
				n["after"] = []any{map[string]any{"node": ps[0]}, map[string]any{"node": ps[1]}}
			}
			nodes = append(nodes, n)
		}
	}
	mustDo(b, p, "POST", "/api/v1/workflows", map[string]any{"name": "wide", "nodes": nodes}, http.StatusCreated, nil)
	var run struct{ ID, State string }
	start := time.Now()
	mustDo(b, p, "POST", "/api/v1/workflows/wide/runs", nil, http.StatusAccepted, &run)
	if !eventually(5*time.Minute, func() bool {
		_, _, err := p.Do("GET", "/api/v1/workflows/wide/runs/"+run.ID, nil, &run)
		return err == nil && run.State != "PENDING" && run.State != "RUNNING"
	}) || run.State != "SUCCEEDED" {
		b.Fatalf("run %s", run.State)
	}
	total := time.Since(start)
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, d := range recv.Deliveries(nil) {
		var v struct {
			Workflow struct{ Node string } `json:"workflow"`
		}
		_ = json.Unmarshal(d.Body, &v)
		n := v.Workflow.Node
		if t, ok := first[n]; !ok || d.ArrivedAt.Before(t) {
			first[n] = d.ArrivedAt
		}
		if d.ArrivedAt.After(last[n]) {
			last[n] = d.ArrivedAt // the receiver answers at once: its answer is the item's end
		}
	}
	var full struct {
		Nodes []struct {
			Name    string    `json:"name"`
			FiredAt time.Time `json:"firedAt"`
		} `json:"nodes"`
	}
	mustDo(b, p, "GET", "/api/v1/workflows/wide/runs/"+run.ID, nil, http.StatusOK, &full)
	fired := map[string]time.Time{}
	for _, n := range full.Nodes {
		fired[n.Name] = n.FiredAt
	}
	var lags lagParts
	for n, ps := range parents {
		var ended time.Time
		for _, q := range ps {
			if last[q].After(ended) {
				ended = last[q]
			}
		}
		lags.lag = append(lags.lag, first[n].Sub(ended))
		lags.toStep = append(lags.toStep, fired[n].Sub(ended))
		lags.toSend = append(lags.toSend, first[n].Sub(fired[n]))
	}
	if len(first) != layers*width {
		b.Fatalf("%d nodes delivered, want %d", len(first), layers*width)
	}
	return lags, total
}
