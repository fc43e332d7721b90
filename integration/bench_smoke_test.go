package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

var (
	ejbenchOnce sync.Once
	ejbenchPath string
	ejbenchErr  error
)

// ejbenchBinary builds the benchmark harness once, beside the ejserver binary the tests use.
func ejbenchBinary(t *testing.T) string {
	t.Helper()
	ejbenchOnce.Do(func() {
		ejbenchPath, ejbenchErr = harness.BuildPackage(filepath.Dir(binary), "./integration/cmd/ejbench", false)
	})
	if ejbenchErr != nil {
		t.Fatal(ejbenchErr)
	}
	return ejbenchPath
}

// TestBenchSmoke runs the benchmark harness (make bench) end to end on a tiny workload, so that it keeps
// working while `make bench` itself stays out of CI: ejbench starts its own ZooKeeper and 3 peers, registers
// 50 jobs, measures 6 s of fires, then fires the same schedule from its bare loop, and prints the table. It
// checks the table and the JSON and that no fire was missed or doubled; it asserts no timing (that is the
// benchmark's job, on a quiet machine).
func TestBenchSmoke(t *testing.T) {
	// sequential (no t.Parallel): the harness loads the machine itself and counts missed fires
	dir := t.TempDir()
	bench := ejbenchBinary(t)
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

// TestBenchSmokeAsync runs the async workload (make bench) on a tiny scale, without its baseline: 20 jobs x 10
// items every 2 s on 3 peers, each item answered 202 and completed by callback 0.1-0.5 s later (a 10 s lease),
// over a 2 s window: about 10 s.
// It checks the harness's accounting end to end: every accepted item completed once, nothing lost or recorded
// twice, the repeated completions answered 200, and the peers' counters agreeing. It asserts no timing, nor
// missed fires (on a loaded machine a completion may come after the item's next fire: a misfire, as designed).
func TestBenchSmokeAsync(t *testing.T) {
	// sequential (no t.Parallel), and a lease far longer than the completions' 100-500 ms: the test counts
	// items, and a 3 s lease on a loaded machine made it a timing assertion (completions came late)
	dir := t.TempDir()
	bench := ejbenchBinary(t)
	out := filepath.Join(dir, "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bench, "-bin", binary, "-workload", "async", "-jobs", "20", "-period", "2s",
		"-duration", "2s", "-warmup", "1s", "-grace", "1s", "-callback-min", "100ms", "-callback-max", "500ms",
		"-lease-seconds", "10", "-baseline=false", "-zk-heap", "256m", "-out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ejbench: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("ejbench:\n%s", stdout.String())
	for _, want := range []string{"delivered/expected", "callback p50 ms", "async (lease 10 s"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type calls struct {
		Sent     int            `json:"sent"`
		OK       int            `json:"ok"`
		ByStatus map[string]int `json:"byStatus"`
		ToOwn    int            `json:"toOwnPeer"`
		ToOther  int            `json:"toOtherPeer"`
	}
	var results []struct {
		Run        string `json:"run"`
		Expected   int    `json:"expected"`
		Duplicates int    `json:"duplicates"`
		Async      *struct {
			Accepted       int   `json:"accepted"`
			AcceptedIDs    int   `json:"acceptedExecutions"`
			Completed      int   `json:"completed"`
			Lost           int   `json:"lost"`
			DoubleRecorded int   `json:"doubleRecorded"`
			Pending        int   `json:"pending"`
			Completions    calls `json:"completions"`
			Repeats        calls `json:"repeats"`
			Peers          struct {
				Accepted      float64            `json:"accepted"`
				Ended         map[string]float64 `json:"ended"`
				LeaseExpiries float64            `json:"leaseExpiries"`
			} `json:"peers"`
		} `json:"async"`
	}
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatalf("decode %s: %v\n%s", out, err, b)
	}
	if len(results) != 1 || results[0].Run != "ejserver" || results[0].Async == nil {
		t.Fatalf("want one ejserver row with async figures: %s", b)
	}
	r, a := results[0], results[0].Async
	if r.Expected != 200 || r.Duplicates != 0 {
		t.Errorf("expected %d fires, %d duplicates; want 200 (20 jobs x 10 items, every 2 s, over 2 s), none doubled", r.Expected, r.Duplicates)
	}
	if a.Accepted < r.Expected || a.AcceptedIDs != a.Accepted || a.Completed != a.AcceptedIDs || a.Lost != 0 || a.DoubleRecorded != 0 || a.Pending != 0 {
		t.Errorf("accepted %d (%d executions), completed %d, lost %d, double-recorded %d, pending %d; want every accepted item completed once",
			a.Accepted, a.AcceptedIDs, a.Completed, a.Lost, a.DoubleRecorded, a.Pending)
	}
	if c := a.Completions; c.OK != a.AcceptedIDs || len(c.ByStatus) != 0 || c.ToOwn == 0 || c.ToOther == 0 {
		t.Errorf("completions %+v: want each answered 200, some at the callbackUrl's peer and some at another", c)
	}
	if c := a.Repeats; c.Sent == 0 || c.OK != c.Sent {
		t.Errorf("repeated completions %+v: want some, each answered 200", c)
	}
	if p := a.Peers; int(p.Accepted) != a.Accepted || int(p.Ended["SUCCEEDED"]) != a.Completed || p.LeaseExpiries != 0 {
		t.Errorf("peers counted %v accepted, %v ended, %v lease expiries; want %d accepted and SUCCEEDED, no expiry",
			p.Accepted, p.Ended, p.LeaseExpiries, a.Accepted)
	}
}
