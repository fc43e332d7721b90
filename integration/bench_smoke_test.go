package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// TestBenchSmoke runs the benchmark harness (make bench) end to end on a tiny workload, so that it keeps
// working while `make bench` itself stays out of CI: ejbench starts its own ZooKeeper and 3 peers, registers
// 50 jobs, measures 6 s of fires, then fires the same schedule from its bare loop, and prints the table. It
// checks the table and the JSON and that no fire was missed or doubled; it asserts no timing (that is the
// benchmark's job, on a quiet machine).
func TestBenchSmoke(t *testing.T) {
	dir := t.TempDir()
	bench, err := harness.BuildPackage(dir, "./integration/cmd/ejbench", false)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bench, "-bin", binary, "-workload", "steady-50", "-period", "2s",
		"-duration", "6s", "-warmup", "2s", "-zk-heap", "256m", "-out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ejbench: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("ejbench:\n%s", stdout.String())
	for _, want := range []string{"workload", "late p50 ms", "ZK req/item", "steady-50", "ejserver", "baseline", "ratio"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var results []struct {
		Workload   string  `json:"workload"`
		Run        string  `json:"run"`
		Expected   int     `json:"expected"`
		Received   int     `json:"received"`
		Duplicates int     `json:"duplicates"`
		Missed     int     `json:"missed"`
		ZKPerItem  float64 `json:"zkRequestsPerItem"`
		Usage      struct {
			CPUPercent []float64 `json:"cpuPercent"`
			RSSMB      []float64 `json:"maxRssMB"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatalf("decode %s: %v\n%s", out, err, b)
	}
	if len(results) != 3 {
		t.Fatalf("got %d rows, want ejserver, baseline and ratio: %s", len(results), b)
	}
	for _, r := range results[:2] {
		// 50 jobs, one item each, every 2 s, over 6 s: 150 item fires
		if r.Expected != 150 || r.Received != 150 || r.Missed != 0 || r.Duplicates != 0 {
			t.Errorf("%s: expected %d, received %d, missed %d, duplicates %d; want 150 fires, each once",
				r.Run, r.Expected, r.Received, r.Missed, r.Duplicates)
		}
	}
	if r := results[0]; r.Run != "ejserver" || len(r.Usage.CPUPercent) != 3 || len(r.Usage.RSSMB) != 3 || r.ZKPerItem <= 0 {
		t.Errorf("ejserver row: run %q, CPU %v, RSS %v, ZooKeeper requests per item %v; want 3 peers measured and a count",
			r.Run, r.Usage.CPUPercent, r.Usage.RSSMB, r.ZKPerItem)
	}
}
