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
		slices.Sort(lags)
		pick := func(q float64) float64 { return float64(lags[int(q*float64(len(lags)-1))].Microseconds()) / 1000 }
		b.ReportMetric(pick(0.5), "lag-p50-ms")
		b.ReportMetric(pick(0.99), "lag-p99-ms")
		b.ReportMetric(pick(1), "lag-max-ms")
		b.ReportMetric(total.Seconds(), "run-s")
	}
}

func workflow200(b *testing.B) ([]time.Duration, time.Duration) {
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
	var lags []time.Duration
	for n, ps := range parents {
		var ended time.Time
		for _, q := range ps {
			if last[q].After(ended) {
				ended = last[q]
			}
		}
		lags = append(lags, first[n].Sub(ended))
	}
	if len(first) != layers*width {
		b.Fatalf("%d nodes delivered, want %d", len(first), layers*width)
	}
	return lags, total
}
