package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ejserver alerts set-defaults / defaults against a real peer: a YAML file in, the table and the JSON out; a
// bad event gets the API's field error and exit 1.
func TestCLIAlertDefaults(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1)
	env := []string{"EJ_SERVER=http://" + c.peers[0].Addr}
	dir := t.TempDir()
	good := filepath.Join(dir, "defaults.yaml")
	if err := os.WriteFile(good, []byte("rules:\n  - on: [FIRE_FAILED, RECOVERED]\n    channels: [oncall]\n    quietPeriodSeconds: 300\nlateAfterMs: 2000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := cliOK(t, env, "alerts", "set-defaults", "-f", good)
	if !strings.Contains(out, "FIRE_FAILED,RECOVERED") || !strings.Contains(out, "lateAfterMs 2000") {
		t.Fatalf("set-defaults printed:\n%s", out)
	}
	if out := cliOK(t, env, "alerts", "defaults", "-o", "json"); !strings.Contains(out, `"quietPeriodSeconds": 300`) {
		t.Fatalf("defaults -o json printed:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n  - on: [BOGUS]\n    channels: [oncall]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cliRun(t, env, "alerts", "set-defaults", "-f", bad)
	if code != 1 || !strings.Contains(errOut, "rules[0].on[0]") {
		t.Fatalf("bad defaults: exit %d, stderr %s", code, errOut)
	}
}
